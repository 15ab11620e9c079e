"""Live: an MCP server's env value reaches the server while no argv or file the CLI got has it.

Each MCP-capable pinned CLI runs one plain turn against the scripted model server with a stdio
server whose ``env`` holds a secret. The server (the live stub, behind a shell that first
writes the variable it received to a file) must see the value; the argv agentshim started must
not contain it. Not part of the conformance count (``scripts/conformance.sh`` runs
``test_<provider>.py`` only); run ``pytest tests/live/test_mcp_secrets.py``.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from agentshim import CliAgent, TurnRequest
from agentshim.core.events import RunStarted
from agentshim.core.mcp import StdioMcpServer
from agentshim.testing import RecordingEventHandler
from agentshim.testing.model_server import ModelServer, Rule, Text
from agentshim.testing.offline import offline_cli

from .binaries import require_binary

SECRET = "live-mcp-secret-3b7e1d"
STUB = Path(__file__).with_name("mcp_stub_server.py")
# $0 is the file to write, then the stub's command line, then where to copy the workspace's
# MCP config files to and the workspace (they are restored when the turn ends).
DUMP_THEN_SERVE = (
    'printf %s "$AGENTSHIM_LIVE_TOKEN" > "$0"; '
    'cat "$5/.mcp.json" "$5/.gemini/settings.json" "$5/opencode.json" > "$4" 2>/dev/null; '
    'exec "$1" "$2" "$3"'
)


@pytest.mark.parametrize("provider", ["claude", "codex", "copilot", "gemini", "opencode"])
def test_the_server_sees_its_env_value_and_argv_never_holds_it(
    provider: str, tmp_path: Path
) -> None:
    binary = require_binary(provider)
    work = tmp_path / "work"
    work.mkdir()
    seen = tmp_path / "seen-token"
    marker = tmp_path / "stub-started"
    config = tmp_path / "config-during-the-turn"
    server = StdioMcpServer(
        "agentshim-stub",
        "/bin/sh",
        (
            "-c",
            DUMP_THEN_SERVE,
            str(seen),
            sys.executable,
            str(STUB),
            str(marker),
            str(config),
            str(work),
        ),
        env={"AGENTSHIM_LIVE_TOKEN": SECRET},
    )
    events = RecordingEventHandler()
    with ModelServer() as model:
        model.set_script((Rule(respond=Text("hello")),))
        cli = offline_cli(provider, model, root=tmp_path, bin_dir=binary.path.parent)
        env = {**cli.env, "PATH": f"{binary.path.parent}:/usr/bin:/bin"}
        agent = CliAgent(provider, env=env, model=cli.model, event_handler=events)
        result = agent.run(
            TurnRequest(
                "Say hello.",
                cwd=str(work),
                mcp_servers=(server,),
                extra_args=tuple(cli.extra_args),
                timeout=180,
            )
        )
    assert result.text == "hello"
    assert marker.exists(), "the CLI never started the MCP server"
    assert seen.read_text() == SECRET
    (started,) = events.of_type(RunStarted)
    assert not any(SECRET in arg for arg in started.argv)
    # The config file the CLI read names a variable; the secret was never on disk.
    assert SECRET not in (config.read_text() if config.exists() else "")
    if provider in ("claude", "gemini", "opencode"):  # the CLIs that read a config file
        assert "AGENTSHIM_MCP_" in config.read_text(), "the file holds the reference"
