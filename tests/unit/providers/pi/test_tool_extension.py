"""Pi's tools extension: each tool as agentshim_<name>, relayed over the turn's socket."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim import Tool, tool
from agentshim.providers.pi.provider import PiProvider
from agentshim.tools import serve_tools


def _literal(text: str, name: str) -> object:
    (line,) = [line for line in text.splitlines() if line.startswith(f"const {name} = ")]
    return json.loads(line.removeprefix(f"const {name} = ").removesuffix(";"))


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key


def test_the_extension_is_private_loaded_with_e_and_gone_with_the_socket() -> None:
    with serve_tools([lookup]) as serving:
        installation = PiProvider().install_tools(serving)
        flag, path = installation.argv
        assert flag == "-e"
        assert Path(path).parent == Path(serving.directory)
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        text = Path(path).read_text(encoding="utf-8")
        assert _literal(text, "SOCKET") == serving.socket_path
        assert _literal(text, "PREFIX") == "agentshim_"
        assert _literal(text, "TOOLS") == [
            {
                "name": "lookup",
                "description": "Look a key up.",
                "inputSchema": dict(lookup.input_schema),
            }
        ]
        assert installation.restore() is None
    assert not Path(path).exists()


@settings(max_examples=60)
@given(description=st.text(), title=st.text())
def test_any_description_and_schema_text_reach_pi_exactly(description: str, title: str) -> None:
    chosen = Tool(
        "t", description, lambda: None, {"type": "object", "title": title, "properties": {}}
    )
    with serve_tools([chosen]) as serving:
        _, path = PiProvider().install_tools(serving).argv
        text = Path(path).read_text(encoding="utf-8")
        assert _literal(text, "TOOLS") == [
            {"name": "t", "description": description, "inputSchema": dict(chosen.input_schema)}
        ]
