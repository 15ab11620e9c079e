"""PtyProcess: a program on a terminal of its own, in its own process group."""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentshim.core.errors import CliNotFoundError, ProcessClosedError
from agentshim.execution import HostCommandExecutor, PtyExecutor, PtyProcess, PtySize, SpawnRequest

pytestmark = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")

ENV = {"PATH": "/usr/bin:/bin"}


def _drain(process: PtyProcess, within: float = 10.0) -> bytes:
    out = b""
    deadline = time.monotonic() + within
    while process.returncode is None:
        assert time.monotonic() < deadline, f"still running; drew {out!r}"
        data = process.read(0.5)
        if data:
            out += data
    return out


Spawn = Callable[..., PtyProcess]


@pytest.fixture
def spawn() -> Iterator[Spawn]:
    """``spawn(script, size=None)``: ``/bin/sh -c script`` on a terminal; what a failed test
    left running is killed at its end."""
    started: list[PtyProcess] = []

    def start(script: str, size: PtySize | None = None) -> PtyProcess:
        request = SpawnRequest(["/bin/sh", "-c", script], env=ENV)
        started.append(HostCommandExecutor().spawn_pty(request, size))
        return started[-1]

    yield start
    for process in started:
        if process.returncode is None:
            process.kill()
            process.wait(10)
        process.close()


def test_the_host_executor_is_a_pty_executor() -> None:
    assert isinstance(HostCommandExecutor(), PtyExecutor)


def test_the_program_sees_a_terminal_of_the_given_size_and_its_exit_status(spawn: Spawn) -> None:
    process = spawn("stty size; test -t 0 && echo is-a-tty; exit 3", PtySize(rows=30, columns=100))
    out = _drain(process)
    assert b"30 100" in out
    assert b"is-a-tty" in out
    assert process.returncode == 3
    assert process.read(0.1) is None


def test_keystrokes_reach_the_program(spawn: Spawn) -> None:
    process = spawn("read line; echo got:$line")
    process.write(b"hello\r")
    assert b"got:hello" in _drain(process)


def test_the_terminal_is_the_controlling_one_so_ctrl_c_interrupts(spawn: Spawn) -> None:
    process = spawn("trap 'echo caught; exit 7' INT; echo ready; while :; do sleep 0.05; done")
    out = b""
    while b"ready" not in out:
        out += process.read(5) or b""
    process.write(b"\x03")
    _drain(process)
    assert process.returncode == 7


def test_kill_ends_the_whole_group(tmp_path: Path, spawn: Spawn) -> None:
    pid_file = tmp_path / "child.pid"
    process = spawn(f"sleep 60 & echo $! > {pid_file}; echo started; wait")
    out = b""
    while b"started" not in out:
        out += process.read(5) or b""
    child = int(pid_file.read_text())
    process.kill()
    assert process.wait(10) == -9
    deadline = time.monotonic() + 5
    while Path(f"/proc/{child}").exists() and time.monotonic() < deadline:
        stat = Path(f"/proc/{child}/stat").read_text(errors="replace")
        if stat.rsplit(")", 1)[1].split()[0] == "Z":
            break
        time.sleep(0.05)
    else:
        assert not Path(f"/proc/{child}").exists()


def test_wake_ends_a_blocked_read_from_another_thread(spawn: Spawn) -> None:
    process = spawn("sleep 30")
    try:
        threading.Timer(0.2, process.wake).start()
        started = time.monotonic()
        assert process.read(10) in (None, b"")
        assert time.monotonic() - started < 5
    finally:
        process.close()
    assert process.returncode == -9


def test_writing_after_the_exit_raises_and_close_is_idempotent(spawn: Spawn) -> None:
    process = spawn("exit 0")
    _drain(process)
    with pytest.raises(ProcessClosedError):
        process.write(b"x")
    process.close()
    process.close()


def test_a_missing_program_is_cli_not_found() -> None:
    with pytest.raises(CliNotFoundError):
        HostCommandExecutor().spawn_pty(SpawnRequest(["/nonexistent/claude"], env=ENV))
