"""Pi's tools extension: each tool as agentshim_<name>, relayed over the turn's socket."""

from __future__ import annotations

import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim import Tool, tool
from agentshim.core.events import AgentEvent, Lifecycle, ToolCall
from agentshim.providers.pi.provider import PiProvider
from agentshim.tools import LocalToolServer, serve_tools
from tests.unit.tools.serving import serve_while


def _literal(text: str, name: str) -> object:
    (line,) = [line for line in text.splitlines() if line.startswith(f"const {name} = ")]
    return json.loads(line.removeprefix(f"const {name} = ").removesuffix(";"))


def _credential(serving: LocalToolServer) -> str:
    [value] = serving.credential_env.values()
    return value


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


# Loads the extension as Pi would (its default export registers the tools) and runs one call.
NODE_HOST = """
const mod = await import(process.argv[1]);
const tools = [];
mod.default({ registerTool: (t) => tools.push(t) });
try {
  const out = await tools[0].execute("id-1", { key: "k" }, undefined);
  console.log(JSON.stringify({ ok: out.content[0].text }));
} catch (error) {
  console.log(JSON.stringify({ error: String(error.message) }));
}
"""


@pytest.mark.skipif(shutil.which("node") is None, reason="needs node")
def test_the_extension_presents_the_credential_from_pis_environment(tmp_path: Path) -> None:
    events: list[AgentEvent] = []
    with serve_tools([lookup], emit=events.append) as serving:
        installation = PiProvider().install_tools(serving)
        _, path = installation.argv
        text = Path(path).read_text(encoding="utf-8")
        credential = _credential(serving)
        assert dict(installation.env) == dict(serving.credential_env)
        assert list(installation.env.values()) == [credential]
        assert credential not in text
        assert credential not in " ".join(installation.argv)
        module = tmp_path / "extension.mjs"  # node 20 runs the same text as a module
        module.write_text(text, encoding="utf-8")
        outputs: list[str] = []

        def pi(env: dict[str, str]) -> None:
            done = subprocess.run(
                ["node", "--input-type=module", "-e", NODE_HOST, str(module)],
                capture_output=True,
                text=True,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **env},
                timeout=60,
                check=False,
            )
            outputs.append(done.stdout.strip() or done.stderr)

        serve_while(serving, lambda: pi(dict(installation.env)))
        serve_while(serving, lambda: pi({}))
    assert outputs[0].startswith("{"), outputs
    assert json.loads(outputs[0]) == {"ok": "k"}
    assert "error" in json.loads(outputs[1])
    assert [e.kind for e in events if isinstance(e, Lifecycle)] == ["tool_connection_refused"]
    assert [e.tool for e in events if isinstance(e, ToolCall)] == ["lookup"]
