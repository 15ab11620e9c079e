"""The local route: a CLI's stdio MCP server (the bridge) reaches the turn's thread, and only it."""

from __future__ import annotations

import json
import os
import stat
import sys
import threading
from pathlib import Path

import pytest

from agentshim import tool
from agentshim.core.events import AgentEvent
from agentshim.execution.executor import CallbackSink, CommandRequest
from agentshim.execution.host import HostCommandExecutor
from agentshim.tools import serve_tools

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="Unix sockets")

# A stand-in CLI: starts the MCP server it is given, as a real CLI would, sends it the lines
# of argv[2:], and prints each answer. A line "close" ends the server's stdin at once.
FAKE_CLI = """
import json, os, subprocess, sys
server = json.loads(sys.argv[1])
child = subprocess.Popen([server["command"], *server["args"]], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, text=True,
                         env={**os.environ, **server["env"]})
for line in sys.argv[2:]:
    child.stdin.write(line + "\\n")
    child.stdin.flush()
    answer = child.stdout.readline()
    print("ANSWER " + answer.strip(), flush=True)
child.stdin.close()
child.wait(10)
"""


def _call(name: str, arguments: object, request_id: int = 1) -> str:
    params = {"name": name, "arguments": arguments}
    return json.dumps(
        {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}
    )


class _Sink(CallbackSink):
    side_channel: object


def run_cli(
    lines: list[str],
    *,
    tools: list[object],
    events: list[AgentEvent] | None = None,
    threads: bool = False,
) -> list[dict[str, object]]:
    printed: list[str] = []
    with serve_tools(tools, emit=(events or []).append) as serving:  # type: ignore[arg-type]
        server = {
            "command": serving.server.command,
            "args": list(serving.server.args),
            "env": dict(serving.server.env),
        }
        sink = _Sink(on_stdout=printed.append)
        sink.side_channel = serving
        request = CommandRequest(
            [sys.executable, "-c", FAKE_CLI, json.dumps(server), *lines],
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            timeout=60,
        )
        result = HostCommandExecutor(use_threads=threads).run(request, sink)
    assert result.returncode == 0, result.stderr
    return [json.loads(line.split(" ", 1)[1]) for line in printed if line.startswith("ANSWER ")]


@pytest.mark.parametrize("reader_threads", [False, True], ids=["selector", "reader-threads"])
def test_a_call_through_the_bridge_is_answered_while_the_command_runs(
    reader_threads: bool,
) -> None:
    threads: list[int] = []

    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        threads.append(threading.get_ident())
        return f"value of {key}"

    initialize = json.dumps(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        }
    )
    answers = run_cli(
        [initialize, _call("lookup", {"key": "k"})], tools=[lookup], threads=reader_threads
    )
    assert answers[0]["result"]["serverInfo"]["name"] == "agentshim"  # type: ignore[index]
    assert answers[1]["result"] == {  # type: ignore[index]
        "content": [{"type": "text", "text": "value of k"}],
        "isError": False,
    }
    assert len(threads) == 1


def test_a_raising_function_and_a_malformed_line_cost_only_their_own_answer() -> None:
    @tool
    def broken() -> str:
        """Fails."""
        raise RuntimeError("no luck")

    @tool
    def fine() -> str:
        """Works."""
        return "ok"

    answers = run_cli(
        ["{not json", _call("broken", {}), _call("fine", {}, 2)], tools=[broken, fine]
    )
    assert answers[0]["error"]["code"] == -32700  # type: ignore[index]
    assert answers[1]["result"]["isError"] is True  # type: ignore[index]
    assert "RuntimeError: no luck" in json.dumps(answers[1])
    assert answers[2]["result"]["content"][0]["text"] == "ok"  # type: ignore[index]


def test_the_socket_is_private_and_gone_after_close_and_argv_holds_no_secret() -> None:
    @tool
    def t() -> None:
        """Nothing."""

    serving = serve_tools([t])
    directory = Path(serving.directory)
    assert stat.S_IMODE(directory.stat().st_mode) == 0o700
    assert serving.server.command == sys.executable
    [variable] = serving.credential_env
    assert serving.server.args == (
        "-I",
        str(Path(serving.server.args[1])),
        serving.socket_path,
        variable,
    )
    assert Path(serving.server.args[1]).name == "bridge.py"
    assert set(serving.server.env) == {variable}
    serving.close()
    serving.close()  # idempotent
    assert not directory.exists()


def test_the_bridge_says_why_when_the_socket_is_gone(tmp_path: Path) -> None:
    import subprocess

    from agentshim.tools.local import BRIDGE

    done = subprocess.run(
        [sys.executable, "-I", str(BRIDGE), str(tmp_path / "missing"), "CREDENTIAL"],
        input="",
        env={"CREDENTIAL": "c" * 64},
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 1
    assert "cannot reach the turn's tool socket" in done.stderr
