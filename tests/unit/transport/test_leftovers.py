"""What an interrupted turn started beside a long-lived CLI ends with it, whatever its shape."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from agentshim.core.mcp import StdioMcpServer
from agentshim.execution.reaping import can_scan
from agentshim.transport.leftovers import TURN_PROCESS_MARKER, TurnLeftovers

pytestmark = pytest.mark.skipif(not can_scan(), reason="processes are found through /proc")

SHAPES = {
    "exec'd": "exec sleep 61",
    "backgrounded": "sleep 62 & wait",
    "setsid": "setsid sleep 63 & exit 0",
    "nohup": "nohup sleep 64 >/dev/null 2>&1 & exit 0",
    "grandchild of a subshell": "( ( sleep 65 ) & ) ; exit 0",
}


def marked(value: str) -> dict[int, str]:
    entry = f"{TURN_PROCESS_MARKER}={value}".encode()
    found: dict[int, str] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/environ", "rb") as handle:
                environ = handle.read().split(b"\0")
            with open(f"/proc/{name}/stat", "rb") as handle:
                state = handle.read().rsplit(b")", 1)[1].split()[0]
            with open(f"/proc/{name}/cmdline", "rb") as handle:
                cmdline = handle.read().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        if entry in environ and state != b"Z":
            found[int(name)] = cmdline
    return found


def wait_until(condition: object, what: str) -> None:
    deadline = time.monotonic() + 20.0
    while not condition():  # type: ignore[operator]
        assert time.monotonic() < deadline, what
        time.sleep(0.02)


@pytest.fixture
def leftovers() -> Iterator[tuple[TurnLeftovers, dict[str, str]]]:
    found = TurnLeftovers(grace=0.5)
    env = dict(os.environ)
    yield found, env
    for pid in marked(found.value):  # nothing of one test outlives it
        os.kill(pid, 9)


def start(env: dict[str, str], script: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(["sh", "-c", script], env=env, stdin=subprocess.DEVNULL)


def test_every_shape_a_turn_started_ends_and_what_came_before_it_stays(
    leftovers: tuple[TurnLeftovers, dict[str, str]],
) -> None:
    found, env = leftovers
    server = StdioMcpServer(
        name="stub", command=sys.executable, args=("-c", "import time; time.sleep(70)")
    )
    found.mark(env, [server])
    cli = start(env, "exec sleep 60")  # the CLI itself, started before the turn
    wait_until(lambda: any("sleep 60" in c for c in marked(found.value).values()), "the CLI")
    time.sleep(0.05)  # past the tick the turn is sent in
    found.turn_sent()
    time.sleep(0.05)  # a turn's commands come after the model answered, never in its first tick
    shells = [start(env, script) for script in SHAPES.values()]
    shells.append(
        subprocess.Popen([server.command, *server.args], env=env, stdin=subprocess.DEVNULL)
    )
    wait_until(
        lambda: (
            all(any(f"sleep {n}" in c for c in marked(found.value).values()) for n in range(61, 66))
            and any("time.sleep(70)" in c for c in marked(found.value).values())
        ),
        "every shape running",
    )
    ended = found.end()
    left = marked(found.value)
    assert ended >= len(SHAPES)
    assert not [c for c in left.values() if any(f"sleep {n}" in c for n in range(61, 66))]
    assert cli.pid in left, "the CLI, started before the turn, is not the turn's"
    assert any("time.sleep(70)" in c for c in left.values()), "the MCP server is kept"
    for process in (cli, *shells):
        process.kill()
        process.wait()


def test_a_turn_never_sent_ends_nothing(leftovers: tuple[TurnLeftovers, dict[str, str]]) -> None:
    found, env = leftovers
    found.mark(env)
    found.turn_sent()
    process = start(env, "exec sleep 66")
    # Until it is `sleep`: in the middle of its exec the shell shows no environment at all.
    wait_until(lambda: "sleep 66" in marked(found.value).get(process.pid, ""), "the process")
    found.turn_begins()  # the next turn begins, and fails before it is sent
    assert found.end() == 0
    assert process.pid in marked(found.value)
    process.kill()
    process.wait()
