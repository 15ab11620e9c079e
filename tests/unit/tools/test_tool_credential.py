"""Who can reach a turn's tools: the credential, approvals at the bridge, and the events."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from agentshim import tool
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.events import AgentEvent, Lifecycle, ToolCall, ToolKind, ToolResult
from agentshim.core.mcp import HttpMcpServer, StdioMcpServer
from agentshim.core.provider import mcp_env
from agentshim.providers.claude.provider import ClaudeProvider
from agentshim.providers.gemini.provider import GeminiProvider
from agentshim.providers.opencode.provider import OpencodeProvider
from agentshim.tools import LocalToolServer, serve_tools
from tests.unit.another_user import run_as_nobody
from tests.unit.tools.serving import serve_while

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix sockets")


ran: list[str] = []


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    ran.append(key)
    return f"value of {key}"


def _credential(serving: LocalToolServer) -> str:
    [value] = serving.credential_env.values()
    return value


def _call_line(key: str) -> bytes:
    params = {"name": "lookup", "arguments": {"key": key}}
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params}
    return json.dumps(message).encode() + b"\n"


def _client(path: str, lines: list[bytes], received: list[bytes]) -> None:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(60)
        sock.connect(path)
        try:
            sock.sendall(b"".join(lines))
            sock.shutdown(socket.SHUT_WR)
            while chunk := sock.recv(65536):
                received.append(chunk)
        except (BrokenPipeError, ConnectionResetError):
            pass  # refused while still sending


def _answers(received: list[bytes]) -> list[dict[str, object]]:
    return [json.loads(line) for line in b"".join(received).splitlines() if line.strip()]


def test_the_credential_is_random_per_server_and_only_in_the_servers_env() -> None:
    with serve_tools([lookup]) as first, serve_tools([lookup]) as second:
        credential = _credential(first)
        assert len(credential) >= 32
        assert credential != _credential(second)
        assert dict(first.server.env) == dict(first.credential_env)
        [variable] = first.credential_env
        assert variable.startswith("AGENTSHIM_TOOLS_CREDENTIAL_")
        assert first.server.args[-1] == variable  # the name, not the value, is in argv
        assert all(credential not in arg for arg in (first.server.command, *first.server.args))


def test_a_same_user_process_without_the_credential_is_refused_and_nothing_runs() -> None:
    ran.clear()
    events: list[AgentEvent] = []
    received: list[bytes] = []
    with serve_tools([lookup], emit=events.append) as serving:
        lines = [b"not-the-credential\n", _call_line("a")]
        serve_while(serving, lambda: _client(serving.socket_path, lines, received))
    assert received == []  # closed unanswered
    assert ran == []
    assert [e.kind for e in events if isinstance(e, Lifecycle)] == ["tool_connection_refused"]
    assert not [e for e in events if isinstance(e, ToolCall)]


def test_a_first_line_too_long_to_be_the_credential_is_refused() -> None:
    events: list[AgentEvent] = []
    received: list[bytes] = []
    with serve_tools([lookup], emit=events.append) as serving:
        lines = [b"x" * 100_000]
        serve_while(serving, lambda: _client(serving.socket_path, lines, received))
    assert received == []
    assert [e.kind for e in events if isinstance(e, Lifecycle)] == ["tool_connection_refused"]


@pytest.mark.parametrize("allowed", [True, False], ids=["allowed", "denied"])
def test_a_call_with_the_credential_is_still_asked_and_reported(allowed: bool) -> None:
    ran.clear()
    events: list[AgentEvent] = []
    asked: list[ApprovalRequest] = []

    def approve(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision.allow() if allowed else ApprovalDecision.deny("not this one")

    received: list[bytes] = []
    with serve_tools([lookup], emit=events.append, approve=approve) as serving:
        credential = _credential(serving).encode() + b"\n"
        lines = [credential, _call_line("around-the-cli")]
        serve_while(serving, lambda: _client(serving.socket_path, lines, received))

    [answer] = _answers(received)
    result = answer["result"]
    assert isinstance(result, dict)
    assert [(r.tool, dict(r.args), r.kind) for r in asked] == [
        ("lookup", {"key": "around-the-cli"}, ToolKind.MCP)
    ]
    calls = [e for e in events if isinstance(e, ToolCall)]
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(c.tool, c.args, c.kind) for c in calls] == [
        ("lookup", {"key": "around-the-cli"}, ToolKind.MCP)
    ]
    assert [r.tool_id for r in results] == [calls[0].tool_id] == [asked[0].tool_id]
    if allowed:
        assert ran == ["around-the-cli"]
        assert result["isError"] is False
        assert results[0].stdout == "value of around-the-cli"
        assert not results[0].failed
    else:
        assert ran == []
        assert result["isError"] is True
        assert results[0].failed
        assert results[0].stderr == "not this one"


def test_the_bridge_presents_the_credential_from_its_environment_only() -> None:
    """The bridge as a CLI starts it: env from the server config, the credential nowhere else."""
    ran.clear()
    events: list[AgentEvent] = []
    with serve_tools([lookup], emit=events.append) as serving:
        server = serving.server
        credential = _credential(serving)
        outputs: list[str] = []

        def cli(env: dict[str, str]) -> None:
            # Stdin stays open until the answer (or the refusal's end of file) is read.
            child = subprocess.Popen(
                [server.command, *server.args],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                text=True,
                env=env,
            )
            assert child.stdin is not None
            assert child.stdout is not None
            child.stdin.write(_call_line("via-bridge").decode())
            child.stdin.flush()
            outputs.append(child.stdout.readline())
            child.stdin.close()
            child.stdout.close()
            child.wait(60)

        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin")}
        serve_while(serving, lambda: cli({**base, **server.env}))
        serve_while(serving, lambda: cli({**base, **dict.fromkeys(server.env, "guessed")}))
        assert credential not in " ".join(server.args)
    assert ran == ["via-bridge"]
    assert json.loads(outputs[0])["result"]["content"][0]["text"] == "value of via-bridge"
    assert outputs[1] == ""
    assert [e.kind for e in events if isinstance(e, Lifecycle)] == ["tool_connection_refused"]


# --- another user --------------------------------------------------------------------------


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another uid needs root")
def test_another_user_cannot_reach_the_socket_nor_read_the_credential() -> None:
    ran.clear()
    with serve_tools([lookup]) as serving:
        server = serving.server
        credential = _credential(serving)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **server.env}
        # A bridge running as the CLI would start it, waiting on its stdin.
        bridge = subprocess.Popen(
            [server.command, *server.args],
            stdin=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
            env=env,
        )
        try:
            directory, path = serving.directory, serving.socket_path

            def attacker() -> None:
                with (
                    socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock,
                    pytest.raises(PermissionError),
                ):
                    sock.connect(path)
                with pytest.raises(PermissionError):
                    os.listdir(directory)
                cmdline = Path(f"/proc/{bridge.pid}/cmdline").read_bytes()
                assert credential.encode() not in cmdline
                with pytest.raises(PermissionError):
                    Path(f"/proc/{bridge.pid}/environ").read_bytes()
                for name in os.listdir(tempfile.gettempdir()):
                    candidate = Path(tempfile.gettempdir(), name)
                    try:
                        text = candidate.read_bytes() if candidate.is_file() else b""
                    except OSError:
                        continue
                    assert credential.encode() not in text

            run_as_nobody(attacker)
        finally:
            assert bridge.stdin is not None
            bridge.stdin.close()
            bridge.wait(60)
    assert ran == []


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to another uid needs root")
@pytest.mark.parametrize(
    ("provider", "config"),
    [
        (ClaudeProvider(), ".mcp.json"),
        (GeminiProvider(), ".gemini/settings.json"),
        (OpencodeProvider(), "opencode.json"),
    ],
    ids=["claude", "gemini", "opencode"],
)
def test_another_user_reads_no_secret_in_the_workspace_config(
    provider: ClaudeProvider | GeminiProvider | OpencodeProvider, config: str
) -> None:
    secret, header = "stdio-secret-4b1d", "Bearer http-secret-9c2e"
    servers = (
        StdioMcpServer("files", "/usr/bin/env", env={"TOKEN": secret}),
        HttpMcpServer("remote", "https://mcp.example/", headers={"Authorization": header}),
    )
    workspace = Path(tempfile.mkdtemp(prefix="agentshim-readable-", dir="/tmp"))
    try:
        workspace.chmod(0o755)  # a workspace other users may read, as many are
        with serve_tools([lookup]) as serving:
            credential = _credential(serving)
            installation = provider.install_mcp(workspace, (*servers, serving.server))
            try:
                path = workspace / config
                path.parent.chmod(0o755)
                values = set(mcp_env(installation).values())
                # The values the CLI needs are in its environment for the turn, nowhere else.
                assert {secret, header, credential} <= values
                assert not any(secret in arg or credential in arg for arg in installation.argv)

                def attacker() -> None:
                    text = path.read_bytes()  # readable: the point is what it holds
                    assert text
                    for value in (secret, header, credential):
                        assert value.encode() not in text

                run_as_nobody(attacker)
            finally:
                installation.restore()
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
