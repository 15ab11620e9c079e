"""500 runs of every kind leave nothing behind that the runs themselves created.

Only what the test created is tracked: the pid of every process the runs started (taken
from the run's handle or the spawned process, and the grandchild's pid from its output), the
threads that appeared, and this process's descriptors. So the result does not depend on which
tests ran before, or on pytest running as PID 1 or as a subreaper in a container, where
orphans from elsewhere become its children.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable

import pytest
from execution_helpers import (
    ENV,
    HANG_GUARD_S,
    OUTLAST,
    needs_proc,
    open_fds,
    parent_of,
    proc_state,
    wait_dead,
)

from agentshim.core.errors import CliNotFoundError, CliTimeoutError
from agentshim.execution import (
    CallbackSink,
    CommandHandle,
    CommandRequest,
    HostCommandExecutor,
    SpawnRequest,
    StdoutLine,
)
from agentshim.execution.host import HostCommandHandle

pytestmark = needs_proc

SH = "/bin/sh"
# Each of these runs only a stop ends: left alone it would outlast every wait below.
STAYS = f"echo a; sleep {OUTLAST}"


class Stop(Exception):
    pass


class Pids:
    """The pids one run started: its leader (from the handle) and any grandchild it printed."""

    def __init__(self) -> None:
        self.leaders: list[int] = []
        self.grandchildren: list[int] = []
        self.handle: HostCommandHandle | None = None

    def sink(self, on_stdout: Callable[[str], None] | None = None) -> CallbackSink:
        return CallbackSink(on_stdout, on_started=self._started)

    def _started(self, handle: CommandHandle) -> None:
        assert isinstance(handle, HostCommandHandle)
        self.leaders.append(handle.pid)
        self.handle = handle

    def kill(self, _: str) -> None:
        assert self.handle is not None
        self.handle.kill()


def _raise(_: str) -> None:
    raise Stop


def _one_run(executor: HostCommandExecutor, kind: int, pids: Pids) -> None:
    """One of several ways a run can end, chosen by ``kind``."""
    if kind == 0:
        executor.run(CommandRequest([SH, "-c", "echo ok"], env=ENV), pids.sink())
    elif kind == 1:
        result = executor.run(
            CommandRequest([SH, "-c", "cat; echo bad >&2; exit 3"], stdin="x\n" * 100, env=ENV),
            pids.sink(),
        )
        assert result.returncode == 3
    elif kind == 2:
        with pytest.raises(Stop):
            executor.run(
                CommandRequest([SH, "-c", STAYS], env=ENV),
                pids.sink(_raise),
            )
    elif kind == 3:
        executor.run(
            CommandRequest([SH, "-c", STAYS], env=ENV),
            pids.sink(pids.kill),
        )
    elif kind == 4:
        with pytest.raises(CliNotFoundError):
            executor.run(CommandRequest(["/nonexistent/agentshim-x"], env=ENV), pids.sink())
    elif kind == 5:
        # A grandchild holding the pipes past the drain; it prints its own pid.
        executor.run(
            CommandRequest([SH, "-c", f"sleep {OUTLAST} & echo $!"], env=ENV),
            pids.sink(lambda line: pids.grandchildren.append(int(line))),
        )
    elif kind == 6:
        process = executor.spawn(SpawnRequest([SH, "-c", 'read line; echo "$line"'], env=ENV))
        pids.leaders.append(process.pid)
        process.write("hello\n")
        assert process.next_output(HANG_GUARD_S) == StdoutLine("hello\n")
        assert process.wait(HANG_GUARD_S) == 0
    elif kind == 7:
        process = executor.spawn(SpawnRequest([SH, "-c", f"sleep {OUTLAST}"], env=ENV))
        pids.leaders.append(process.pid)
        process.terminate()
        assert process.wait(HANG_GUARD_S) is not None
    else:
        with pytest.raises(CliTimeoutError):
            executor.run(
                CommandRequest([SH, "-c", f"sleep {OUTLAST}"], env=ENV, timeout=0.02), pids.sink()
            )


def test_500_runs_leave_no_descriptor_process_or_thread_behind() -> None:
    executor = HostCommandExecutor(drain_timeout=0.02)
    for kind in range(9):  # warm up imports and lazily created objects
        _one_run(executor, kind, Pids())
    fds, threads_before = open_fds(), set(threading.enumerate())
    mine = os.getpid()
    leaders = grandchildren = 0
    for number in range(500):
        pids = Pids()
        _one_run(executor, number % 9, pids)
        # Checked right after the run, before anything of ours could reuse the numbers. A
        # leader is reaped by its run, so it is no child of ours, not even a zombie.
        for leader in pids.leaders:
            assert parent_of(leader) != mine, f"leader {leader} left as {proc_state(leader)}"
        # A grandchild is killed; it may linger as a zombie of whoever adopted it.
        for grandchild in pids.grandchildren:
            assert wait_dead(grandchild), f"grandchild {grandchild} outlived its run"
        leaders += len(pids.leaders)
        grandchildren += len(pids.grandchildren)
    # Every run but the missing program started one process; every kind 5 a grandchild.
    assert leaders == sum(1 for number in range(500) if number % 9 != 4)
    assert grandchildren == sum(1 for number in range(500) if number % 9 == 5)
    assert [thread for thread in threading.enumerate() if thread not in threads_before] == []
    assert open_fds() == fds
