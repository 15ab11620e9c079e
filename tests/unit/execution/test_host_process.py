from __future__ import annotations

import os
import signal
import threading
import time

import pytest
from execution_helpers import (
    ENV,
    GRANDCHILD,
    HANG_GUARD_S,
    needs_proc,
    open_fds,
    parent_of,
    py,
    wait_dead,
)

from agentshim.core.errors import CliNotFoundError
from agentshim.execution import (
    HostCommandExecutor,
    Process,
    ProcessExited,
    ProcessOutput,
    SpawnRequest,
    StderrLine,
    StdoutLine,
)
from agentshim.testing.contracts import ProcessContract

ECHO = """
    import sys
    for line in sys.stdin.buffer:
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()
    sys.exit(int(sys.argv[1]))
"""
SILENT = """
    import sys, time
    while sys.stdin.buffer.read(65536):
        pass
    time.sleep(3600)
"""
STUBBORN = """
    import signal, sys, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    print("ignoring SIGTERM")
    while sys.stdin.buffer.read(65536):
        pass
    time.sleep(3600)
"""


def spawn(code: str, *args: str, executor: HostCommandExecutor | None = None) -> Process:
    return (executor or HostCommandExecutor()).spawn(SpawnRequest(py(code, *args), env=ENV))


def stubborn(executor: HostCommandExecutor | None = None) -> Process:
    process = spawn(STUBBORN, executor=executor)
    assert process.next_output(HANG_GUARD_S) == StdoutLine("ignoring SIGTERM\n")
    return process


def drain(
    process: Process, timeout: float = HANG_GUARD_S
) -> tuple[list[ProcessOutput], ProcessExited]:
    outputs: list[ProcessOutput] = []
    while True:
        output = process.next_output(timeout)
        assert output is not None
        if isinstance(output, ProcessExited):
            return outputs, output
        outputs.append(output)


class TestHostProcessContract(ProcessContract):
    def make_echo_process(self, exit_code: int = 0) -> Process:
        return spawn(ECHO, str(exit_code))

    def make_silent_process(self) -> Process:
        return spawn(SILENT)

    def make_stubborn_process(self) -> Process:
        return stubborn()


class TestThreadedHostProcessContract(TestHostProcessContract):
    """The reader-thread fallback behind the same interface."""

    def make_echo_process(self, exit_code: int = 0) -> Process:
        return spawn(ECHO, str(exit_code), executor=HostCommandExecutor(use_threads=True))

    def make_silent_process(self) -> Process:
        return spawn(SILENT, executor=HostCommandExecutor(use_threads=True))

    def make_stubborn_process(self) -> Process:
        return stubborn(HostCommandExecutor(use_threads=True))


class TestHostProcess:
    def test_stderr_lines_are_told_apart(self) -> None:
        process = spawn("import sys; print('out'); print('err', file=sys.stderr)")
        outputs, exited = drain(process)
        assert sorted(outputs, key=repr) == [StderrLine("err\n"), StdoutLine("out\n")]
        assert exited == ProcessExited(0)

    def test_no_helper_thread_is_started(self) -> None:
        before = set(threading.enumerate())
        process = spawn(ECHO, "0")
        for number in range(100):
            process.write(f"{number}\n")
            assert process.next_output(HANG_GUARD_S) == StdoutLine(f"{number}\n")
            assert set(threading.enumerate()) <= before
        process.close_stdin()
        assert process.wait(HANG_GUARD_S) == 0

    @needs_proc
    def test_a_grandchild_holding_the_pipes_is_killed_after_the_drain(self) -> None:
        process = spawn(GRANDCHILD, executor=HostCommandExecutor(drain_timeout=0.3))
        outputs, exited = drain(process)
        assert exited == ProcessExited(0)
        # Only the pid: waited for instead of killed, the grandchild would say "outlived".
        [first] = outputs
        assert isinstance(first, StdoutLine)
        assert wait_dead(int(first.text))

    def test_wait_keeps_reading_so_a_chatty_child_can_exit(self) -> None:
        process = spawn("for i in range(20000): print('x' * 99)")
        assert process.wait(HANG_GUARD_S) == 0
        outputs, exited = drain(process)
        assert len(outputs) == 20000
        assert exited == ProcessExited(0)

    def test_terminate_escalates_to_kill_after_the_grace(self) -> None:
        process = stubborn(HostCommandExecutor(terminate_grace=0.3))
        started = time.monotonic()
        process.terminate()
        # The child ignores SIGTERM and would sleep for an hour: only the escalation ends it.
        assert process.wait(HANG_GUARD_S) == -signal.SIGKILL
        assert time.monotonic() - started >= 0.3  # the grace was honoured

    def test_reading_and_writing_from_two_threads(self) -> None:
        process = spawn(ECHO, "0")
        received: list[ProcessOutput] = []

        def reader() -> None:
            while True:
                output = process.next_output(HANG_GUARD_S)
                assert output is not None
                received.append(output)
                if isinstance(output, ProcessExited):
                    return

        thread = threading.Thread(target=reader)
        thread.start()
        for number in range(2000):
            process.write(f"line {number}\n")
        process.close_stdin()
        thread.join(HANG_GUARD_S)
        assert not thread.is_alive(), "the reader never saw the process exit"
        assert received[-1] == ProcessExited(0)
        assert received[:-1] == [StdoutLine(f"line {n}\n") for n in range(2000)]

    @needs_proc
    def test_close_kills_and_cleans_up(self) -> None:
        fds = open_fds()
        with HostCommandExecutor().spawn(SpawnRequest(py(SILENT), env=ENV)) as process:
            process.write("x\n")
        assert process.next_output(0) == ProcessExited(-signal.SIGKILL)
        assert open_fds() == fds
        # Reaped: no longer a child of ours, not even a zombie.
        assert parent_of(process.pid) != os.getpid()

    def test_the_process_leads_its_own_session(self) -> None:
        process = spawn("import os; print(os.getsid(0) == os.getpid() == os.getpgid(0))")
        outputs, _ = drain(process)
        assert outputs == [StdoutLine("True\n")]

    def test_a_missing_program_raises_cli_not_found(self) -> None:
        with pytest.raises(CliNotFoundError):
            HostCommandExecutor().spawn(SpawnRequest(["agentshim-no-such-program"], env=ENV))

    def test_invalid_utf8_and_a_cut_off_last_line(self) -> None:
        process = spawn(r"import sys; sys.stdout.buffer.write(b'a\xff\nb\xc3')")
        outputs, _ = drain(process)
        assert outputs == [StdoutLine("a\ufffd\n"), StdoutLine("b\ufffd")]
