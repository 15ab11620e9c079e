from __future__ import annotations

import threading

import pytest
from execution_helpers import ENV, children, open_fds

from agentshim.core.errors import CliNotFoundError, CliTimeoutError
from agentshim.execution import (
    CallbackSink,
    CommandHandle,
    CommandRequest,
    HostCommandExecutor,
    NullSink,
    SpawnRequest,
    StdoutLine,
)

SH = "/bin/sh"


class Stop(Exception):
    pass


def _raise(_: str) -> None:
    raise Stop


def _one_run(executor: HostCommandExecutor, kind: int) -> None:
    """One of several ways a run can end, chosen by ``kind``."""
    if kind == 0:
        executor.run(CommandRequest([SH, "-c", "echo ok"], env=ENV), NullSink())
    elif kind == 1:
        result = executor.run(
            CommandRequest([SH, "-c", "cat; echo bad >&2; exit 3"], stdin="x\n" * 100, env=ENV),
            NullSink(),
        )
        assert result.returncode == 3
    elif kind == 2:
        with pytest.raises(Stop):
            executor.run(
                CommandRequest([SH, "-c", "echo a; sleep 5"], env=ENV), CallbackSink(_raise)
            )
    elif kind == 3:
        handles: list[CommandHandle] = []
        executor.run(
            CommandRequest([SH, "-c", "echo a; sleep 5"], env=ENV),
            CallbackSink(lambda _: handles[0].kill(), on_started=handles.append),
        )
    elif kind == 4:
        with pytest.raises(CliNotFoundError):
            executor.run(CommandRequest(["/nonexistent/agentshim-x"], env=ENV), NullSink())
    elif kind == 5:
        # A grandchild holding the pipes past the drain.
        executor.run(CommandRequest([SH, "-c", "sleep 5 & echo started"], env=ENV), NullSink())
    elif kind == 6:
        process = executor.spawn(SpawnRequest([SH, "-c", 'read line; echo "$line"'], env=ENV))
        process.write("hello\n")
        assert process.next_output(5) == StdoutLine("hello\n")
        assert process.wait(5) == 0
    elif kind == 7:
        process = executor.spawn(SpawnRequest([SH, "-c", "sleep 5"], env=ENV))
        process.terminate()
        assert process.wait(5) is not None
    else:
        with pytest.raises(CliTimeoutError):
            executor.run(CommandRequest([SH, "-c", "sleep 5"], env=ENV, timeout=0.02), NullSink())


def test_500_runs_leave_no_descriptor_process_or_thread_behind() -> None:
    executor = HostCommandExecutor(drain_timeout=0.02)
    for kind in range(9):  # warm up imports and lazily created objects
        _one_run(executor, kind)
    fds, kids, threads = open_fds(), children(), threading.active_count()
    for number in range(500):
        _one_run(executor, number % 9)
    assert open_fds() == fds
    assert children() == kids == []
    assert threading.active_count() == threads
