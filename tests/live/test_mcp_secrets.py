"""Live: an MCP server's env value (or an HTTP server's header) reaches the server, in no argv or file.

Each MCP-capable pinned CLI runs one plain turn against the scripted model server with a stdio
server whose ``env`` holds a secret. The server (the live stub, behind a shell that first
writes the variable it received to a file) must see the value; the argv agentshim started must
not contain it. Not part of the conformance count (``scripts/conformance.sh`` runs
``test_<provider>.py`` only); run ``pytest tests/live/test_mcp_secrets.py``.
"""

from __future__ import annotations

import http.server
import json
import sys
import threading
from pathlib import Path
from typing import ClassVar

import pytest

from agentshim.core.events import RunStarted
from agentshim.core.mcp import HttpMcpServer, StdioMcpServer
from agentshim.doctor.model_server import ModelServer, Rule, Text
from agentshim.testing import RecordingEventHandler

from .one_shot import pinned_offline, run_one_shot

SECRET = "live-mcp-secret-3b7e1d"
STUB = Path(__file__).with_name("mcp_stub_server.py")
#: The model's script: every turn is a plain "hello".
HELLO = (Rule(respond=Text("hello")),)
# $0 is the file to write, then the stub's command line, then where to copy the workspace's
# MCP config files to and the workspace (they are restored when the turn ends).
DUMP_THEN_SERVE = (
    'printf %s "$AGENTSHIM_LIVE_TOKEN" > "$0"; '
    'cat "$5/.mcp.json" "$5/.gemini/settings.json" "$5/opencode.json" > "$4" 2>/dev/null; '
    'exec "$1" "$2" "$3"'
)


@pytest.mark.parametrize("provider", ["claude", "codex", "copilot", "gemini", "opencode"])
def test_the_server_sees_its_env_value_and_argv_never_holds_it(
    provider: str, work: Path, tmp_path: Path
) -> None:
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
    with ModelServer(HELLO) as model:
        cli = pinned_offline(provider, model, tmp_path)
        result = run_one_shot(cli, provider, work, "Say hello.", events, mcp_servers=(server,))
    assert result.text == "hello"
    assert marker.exists(), "the CLI never started the MCP server"
    assert seen.read_text() == SECRET
    (started,) = events.of_type(RunStarted)
    assert not any(SECRET in arg for arg in started.argv)
    # The config file the CLI read names a variable; the secret was never on disk.
    assert SECRET not in (config.read_text() if config.exists() else "")
    if provider in ("claude", "gemini", "opencode"):  # the CLIs that read a config file
        assert "AGENTSHIM_MCP_" in config.read_text(), "the file holds the reference"


class _HeaderRecorder(http.server.BaseHTTPRequestHandler):
    """A minimal streamable-HTTP MCP server that records each request's headers.

    It answers ``initialize`` and ``tools/list`` (no tools) and accepts notifications; on the
    first request it copies the workspace's MCP config files, as the CLI had them then.
    """

    seen: ClassVar[list[dict[str, str]]] = []
    workspace: ClassVar[Path]
    config: ClassVar[Path]

    def do_POST(self) -> None:
        type(self).seen.append({k.lower(): v for k, v in self.headers.items()})
        if not self.config.exists():
            names = (".mcp.json", ".gemini/settings.json", "opencode.json")
            texts = [
                (self.workspace / n).read_text() for n in names if (self.workspace / n).exists()
            ]
            self.config.write_text("\n".join(texts))
        length = int(self.headers.get("Content-Length") or 0)
        try:
            message = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            message = {}
        if not isinstance(message, dict) or "id" not in message:
            self.send_response(202)
            self.end_headers()
            return
        method = message.get("method")
        if method == "initialize":
            result: object = {
                "protocolVersion": message.get("params", {}).get("protocolVersion", "2025-06-18"),
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "recorder", "version": "1"},
            }
        elif method == "tools/list":
            result = {"tools": []}
        else:
            result = {}
        body = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.send_response(405)
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        del format, args


@pytest.mark.parametrize("provider", ["claude", "gemini", "opencode"])
def test_an_http_server_gets_its_header_and_no_file_or_argv_holds_it(
    provider: str, work: Path, tmp_path: Path
) -> None:
    _HeaderRecorder.seen = []
    _HeaderRecorder.workspace = work
    _HeaderRecorder.config = tmp_path / "config-during-the-turn"
    header = f"Bearer {SECRET}"
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _HeaderRecorder)
    serving = threading.Thread(target=httpd.serve_forever, daemon=True)
    serving.start()
    try:
        server = HttpMcpServer(
            "agentshim-recorder",
            f"http://127.0.0.1:{httpd.server_address[1]}/mcp",
            headers={"Authorization": header},
        )
        events = RecordingEventHandler()
        with ModelServer(HELLO) as model:
            cli = pinned_offline(provider, model, tmp_path)
            result = run_one_shot(cli, provider, work, "Say hello.", events, mcp_servers=(server,))
    finally:
        httpd.shutdown()
        httpd.server_close()
    assert result.text == "hello"
    assert _HeaderRecorder.seen, "the CLI never reached the HTTP server"
    assert {h.get("authorization") for h in _HeaderRecorder.seen} == {header}
    (started,) = events.of_type(RunStarted)
    assert not any(SECRET in arg for arg in started.argv)
    config = _HeaderRecorder.config.read_text()
    assert SECRET not in config
    assert "AGENTSHIM_MCP_" in config, "the file holds the reference"
