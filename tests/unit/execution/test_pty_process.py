"""PtyProcess: a program on a terminal of its own, in its own process group."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentshim.core.errors import CliNotFoundError, ProcessClosedError
from agentshim.execution import HostCommandExecutor, PtyExecutor, PtyProcess, PtySize, SpawnRequest
from tests.unit.execution.execution_helpers import HANG_GUARD_S, OUTLAST, needs_proc, wait_dead

pytestmark = pytest.mark.skipif(os.name != "posix", reason="pseudo-terminals are POSIX")

ENV = {"PATH": "/usr/bin:/bin"}


def _drain(process: PtyProcess) -> bytes:
    """Everything the program draws until it has ended (a read that waits a whole
    HANG_GUARD_S for nothing fails the test)."""
    out = b""
    while (data := process.read(HANG_GUARD_S)) is not None:
        out += data
    assert process.returncode is not None, f"still running; drew {out!r}"
    return out


def _read_until(process: PtyProcess, text: bytes) -> None:
    out = b""
    while text not in out:
        data = process.read(HANG_GUARD_S)
        assert data is not None, f"{text!r} never came; drew {out!r}"
        out += data


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
            process.wait(HANG_GUARD_S)
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
    _read_until(process, b"ready")
    process.write(b"\x03")
    _drain(process)
    assert process.returncode == 7


@needs_proc
def test_kill_ends_the_whole_group(tmp_path: Path, spawn: Spawn) -> None:
    pid_file = tmp_path / "child.pid"
    process = spawn(f"sleep {OUTLAST} & echo $! > {pid_file}; echo started; wait")
    _read_until(process, b"started")
    child = int(pid_file.read_text())
    process.kill()
    assert process.wait(HANG_GUARD_S) == -9
    assert wait_dead(child)  # killed: left alone it would sleep past the guard


def test_wake_ends_a_blocked_read_from_another_thread(spawn: Spawn) -> None:
    process = spawn(f"sleep {OUTLAST}")
    got: list[bytes | None] = []
    reader = threading.Thread(target=lambda: got.append(process.read(None)))
    # The wake usually lands while the read is blocked; one that comes first ends it the same.
    waker = threading.Timer(0.2, process.wake)
    try:
        reader.start()
        waker.start()
        reader.join(HANG_GUARD_S)
        assert not reader.is_alive(), "the wake did not end the read"
        assert got == [None]
        assert process.returncode is None  # ended by the wake, not by the program's end
    finally:
        process.close()  # also ends a read the wake missed
        reader.join()
        waker.join()
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
