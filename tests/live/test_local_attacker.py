"""Live: what another local user, and a process of the same user, can do during a turn.

Each provider runs one turn of a long-lived conversation on its pinned CLI, against the model
server, with an MCP server whose secret is in its ``env`` (an HTTP server's header for
Copilot, whose ACP transport takes no stdio server; none for Pi, which takes no MCP server)
and two Python tools behind an approval handler. The model calls ``probe``; while ``probe``
runs the turn is paused mid-flight (the CLI waits for the tool's answer, its MCP servers and
the tools' bridge are up, every config file is installed), and from there:

* another user (uid 65534, a ``python3`` started with that uid) reads every process's argv
  and every file it can under the temporary directory and the workspace (made readable to
  all, as many are), and tries every process's environment and the tools' socket: it must
  find neither the MCP secret nor the tools' credential, and must not connect;
* a process of the same user (standing in for the agent's shell) calls ``lookup`` on the
  tools' socket without the credential: refused unanswered, and the refusal reported
  (``Lifecycle("tool_connection_refused")``); and with it: the call is asked
  (``ApprovalRequested``), denied by the handler, reported (``ToolCall``) and never runs. Pi
  takes no approval handler (it has no approval flow; a policy only), so there the call
  with the credential runs and is reported, unasked, as ``docs/tools.md`` says.

The same-user calls are answered by the turn's reader once ``probe`` has returned; the
model's last answer is streamed slowly so the turn is still running then. Skipped where
the test does not run as root (it needs to switch to another uid). Run with ``pytest
tests/live/test_local_attacker.py``.
"""

from __future__ import annotations

import http.server
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentshim.agent import Agent
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import TransportKind
from agentshim.core.events import AgentEvent, ApprovalRequested, Lifecycle, ToolCall
from agentshim.core.mcp import HttpMcpServer, McpServer, StdioMcpServer
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.doctor.model_server import Match, Message, ModelServer, Rule, Text
from agentshim.doctor.model_server import ToolCall as ScriptedCall
from agentshim.doctor.offline import offline_cli
from agentshim.tools import LocalToolServer, tool

from .binaries import require_binary
from .streams import Background

pytestmark = [
    pytest.mark.skipif(sys.platform != "linux", reason="reads /proc"),
    pytest.mark.skipif(os.geteuid() != 0, reason="switching to another uid needs root"),
]

NOBODY = 65534
OTHER_PYTHON = "/usr/bin/python3"
STUB = Path(__file__).with_name("mcp_stub_server.py")

# (provider, transport, what the model calls tool ``probe``, the call's namespace)
CASES = [
    pytest.param("claude", TransportKind.TUI, "mcp__agentshim__probe", None, id="claude-tui"),
    # In band: the tools have no socket, so only the other user's reading is tried.
    pytest.param(
        "claude", TransportKind.LONG_LIVED, "mcp__agentshim__probe", None, id="claude-stream"
    ),
    pytest.param(
        "codex", TransportKind.LONG_LIVED, "probe", "mcp__agentshim", id="codex-app-server"
    ),
    pytest.param("copilot", TransportKind.LONG_LIVED, "agentshim-probe", None, id="copilot-acp"),
    pytest.param("gemini", TransportKind.LONG_LIVED, "mcp_agentshim_probe", None, id="gemini-acp"),
    pytest.param("opencode", TransportKind.LONG_LIVED, "agentshim_probe", None, id="opencode-acp"),
    pytest.param("pi", TransportKind.LONG_LIVED, "agentshim_probe", None, id="pi-rpc"),
]
OFFERED = {"codex": "mcp__agentshim"}

# Run by uid 65534 with what to look for on stdin (never in its own argv): prints a report.
ATTACKER = r"""
import json, os, socket, sys
task = json.load(sys.stdin)
needles = [n.encode() for n in task["needles"]]
found, environ_read, files_read = [], 0, 0
for pid in os.listdir("/proc"):
    if not pid.isdigit() or int(pid) == os.getpid():
        continue
    for part in ("cmdline", "environ"):
        try:
            data = open(f"/proc/{pid}/{part}", "rb").read()
        except OSError:
            continue
        environ_read += part == "environ"
        found += [f"/proc/{pid}/{part}" for n in needles if n in data]
for root in task["roots"]:
    for folder, _, names in os.walk(root):
        for name in names:
            path = os.path.join(folder, name)
            try:
                if not os.path.isfile(path) or os.path.getsize(path) > 8 << 20:
                    continue
                data = open(path, "rb").read()
            except OSError:
                continue
            files_read += 1
            found += [path for n in needles if n in data]
connected = False
if task["socket"]:
    try:
        with socket.socket(socket.AF_UNIX) as sock:
            sock.connect(task["socket"])
        connected = True
    except OSError:
        pass
print(json.dumps({"found": found, "connected": connected, "files_read": files_read,
                  "environ_read": environ_read}))
"""

# Run by the same user: presents ``credential`` (if any), calls lookup; prints what came back.
SAME_USER = r"""
import json, socket, sys
task = json.load(sys.stdin)
call = {"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "lookup", "arguments": {"key": "intruder"}}}
lines = ([task["credential"]] if task["credential"] else []) + [json.dumps(call)]
with socket.socket(socket.AF_UNIX) as sock:
    sock.settimeout(60)
    sock.connect(task["socket"])
    sock.sendall(("\n".join(lines) + "\n").encode())
    received = b""
    try:
        while not received.endswith(b"\n"):
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    except OSError:
        pass
print(received.decode() or "null")
"""


class _Servings:
    """Every LocalToolServer the test process makes (the conversation's tools)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.made: list[LocalToolServer] = []
        original = LocalToolServer.__init__

        def record(server: LocalToolServer, *args: Any, **kwargs: Any) -> None:
            original(server, *args, **kwargs)
            self.made.append(server)

        monkeypatch.setattr(LocalToolServer, "__init__", record)


class _Accepting(http.server.BaseHTTPRequestHandler):
    """An HTTP MCP endpoint that answers nothing useful: the header is what matters."""

    def do_POST(self) -> None:
        self.send_response(404)
        self.end_headers()

    def do_GET(self) -> None:
        self.do_POST()

    def log_message(self, format: str, *args: Any) -> None:
        del format, args


@pytest.fixture
def workspace() -> Iterator[Path]:
    """A workspace every user may read, as many are (the test's own tmp_path is root's)."""
    root = Path(tempfile.mkdtemp(prefix="agentshim-attacker-", dir="/tmp"))
    root.chmod(0o755)
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def http_endpoint() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Accepting)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/mcp"
    finally:
        server.shutdown()
        server.server_close()


def _mcp_server(provider: str, secret: str, marker: Path, url: str) -> tuple[McpServer, ...]:
    if provider == "pi":
        return ()  # Pi takes no MCP server (refused at open, as one-shot Pi refuses them)
    if provider == "copilot":  # its ACP transport refuses stdio servers
        return (HttpMcpServer("vault", url, headers={"Authorization": f"Bearer {secret}"}),)
    return (
        StdioMcpServer("vault", sys.executable, (str(STUB), str(marker)), env={"VAULT": secret}),
    )


def _run(code: str, task: dict[str, Any], **options: Any) -> Any:
    done = subprocess.run(
        [OTHER_PYTHON, "-I", "-c", code],
        input=json.dumps(task),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        **options,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _same_user_client(task: dict[str, Any]) -> Background[Any]:
    """A same-user client started mid-turn; answered once the turn's reader serves again."""
    return Background(lambda: _run(SAME_USER, task))


@pytest.mark.parametrize(("provider", "transport", "called", "namespace"), CASES)
def test_a_turn_keeps_its_secrets_and_tools_from_other_users_and_asks_for_same_user_calls(
    provider: str,
    transport: TransportKind,
    called: str,
    namespace: str | None,
    tmp_path: Path,
    workspace: Path,
    http_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    binary = require_binary(provider)
    secret = f"mcp-secret-{secrets.token_hex(8)}"
    servings = _Servings(monkeypatch)
    report: dict[str, Any] = {}
    clients: list[Background[Any]] = []

    @tool
    def probe() -> str:
        """Check the machine; returns ok."""
        roots = [tempfile.gettempdir(), str(workspace)]
        if not servings.made:  # served in band: no socket, no credential
            task = {"needles": [secret], "roots": roots, "socket": None}
            report.update(_run(ATTACKER, task, user=NOBODY, group=NOBODY, extra_groups=[]))
            return "ok"
        serving = servings.made[-1]
        [credential] = serving.credential_env.values()
        task = {"needles": [secret, credential], "roots": roots, "socket": serving.socket_path}
        report.update(_run(ATTACKER, task, user=NOBODY, group=NOBODY, extra_groups=[]))
        clients.append(_same_user_client({"socket": serving.socket_path, "credential": None}))
        clients.append(_same_user_client({"socket": serving.socket_path, "credential": credential}))
        return "ok"

    ran: list[str] = []

    @tool
    def lookup(key: str) -> str:
        """Look ``key`` up."""
        ran.append(key)
        return f"value of {key}"

    asked: list[ApprovalRequest] = []
    decisions = {
        "probe": ApprovalDecision.allow(),
        "lookup": ApprovalDecision.deny("not for intruders"),
    }

    def handler(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return decisions.get(request.tool, decisions["probe"])

    events: list[AgentEvent] = []
    call = ScriptedCall(tool=called, arguments={}, namespace=namespace)
    script = (
        Rule(
            match=Match(last_input_is_tool_result=False, offers_tool=OFFERED.get(provider, called)),
            respond=Message((call,)),
        ),
        # Slow, so the turn still runs when the same-user calls are served.
        Rule(respond=Text("Checked.", chunk_size=1, delay_per_chunk=0.4)),
    )
    with ModelServer() as model:
        model.set_script(script)
        cli = offline_cli(provider, model, root=tmp_path, bin_dir=binary.path.parent)
        agent = Agent(
            provider,
            permissions=NativePermissions.bypass(),
            # Pi has no approval flow: it takes a policy only, and the socket asks no one.
            approvals=ApprovalPolicy.DENY if provider == "pi" else handler,
            model=cli.model,
            env={**cli.env, "PATH": f"{binary.path.parent}:/usr/bin:/bin"},
            transport=transport,
            event_handlers=events.append,
            check_timeout=60.0,
        )
        servers = _mcp_server(provider, secret, tmp_path / "stub-started", http_endpoint)
        with agent.start_session(str(workspace), tools=(probe, lookup), mcp_servers=servers) as s:
            result = s.turn("Check the machine.").result
            if not report and provider == "claude":
                # The TUI connects its MCP servers in the background: a first prompt that
                # beat them was answered without the tools; the next one has them.
                result = s.turn("Check the machine.").result
            answers = [client.join(120) for client in clients]
    assert result.text == "Checked."
    assert report, "the model never called probe"
    # Another user: nothing found in any argv, environment or file it could read.
    assert report["found"] == []
    assert report["files_read"] > 0, "the attacker read no file at all"
    assert not report["connected"]
    if not clients:
        assert servings.made == [], "tools served by socket, yet no same-user client ran"
        assert transport is TransportKind.LONG_LIVED  # Claude Code's in-band tools
        return
    # The same user without the credential: refused unanswered, and the refusal reported.
    assert answers[0] is None
    refusals = [
        e for e in events if isinstance(e, Lifecycle) and e.kind == "tool_connection_refused"
    ]
    assert refusals
    reported = [e for e in events if isinstance(e, ToolCall) and e.tool == "lookup"]
    if provider == "pi":
        # With it, and no handler to ask (Pi takes a policy only): the call runs, reported.
        assert answers[1]["result"]["isError"] is False
        assert ran == ["intruder"]
        assert len(reported) == 1
        return
    # With it: asked, denied, reported, never run.
    assert answers[1]["result"]["isError"] is True
    assert "not for intruders" in json.dumps(answers[1])
    intruder = [r for r in asked if r.tool == "lookup"]
    assert [dict(r.args) for r in intruder] == [{"key": "intruder"}]
    requested = [
        e.tool_id for e in events if isinstance(e, ApprovalRequested) and e.tool == "lookup"
    ]
    assert requested == [intruder[0].tool_id]
    assert [e.tool_id for e in reported] == [intruder[0].tool_id]
    assert ran == []
