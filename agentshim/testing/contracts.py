"""Contract suites: the behaviour every Process, Confinement and Clock must show.

Subclass one as ``Test<Impl>``, implement its factory methods, and pytest runs the inherited
tests against your implementation::

    class TestMyProcess(ProcessContract):
        def make_echo_process(self, exit_code: int = 0) -> Process: ...
        def make_silent_process(self) -> Process: ...
        def make_stubborn_process(self) -> Process: ...

agentshim's own tests run them for the real implementations and for the fakes in
:mod:`agentshim.testing`, which is what makes the fakes trustworthy stand-ins.

This module needs pytest (it is the one part of agentshim.testing that imports it).
"""

from __future__ import annotations

import signal
import threading
from typing import ClassVar

import pytest

from agentshim.core.clock import Clock
from agentshim.core.errors import ProcessClosedError
from agentshim.execution.confinement import Confinement, confine
from agentshim.execution.executor import CommandRequest, NullSink
from agentshim.execution.process import (
    Process,
    ProcessExited,
    ProcessOutput,
    SpawnRequest,
    StdoutLine,
)

from .executor import FakeExecutor, FakeRun
from .process import SilentPeer

__all__ = ["ClockContract", "ConfinementContract", "ProcessContract"]


class ProcessContract:
    """What every :class:`~agentshim.execution.process.Process` does.

    Implement three factories. The echo process writes every stdin line back to stdout
    unchanged (a last line without newline too) and exits with ``exit_code`` at end of
    stdin. The silent process reads stdin, prints nothing and runs until it is stopped. The
    stubborn one is silent and also ignores SIGTERM (its factory returns only once the
    process is ignoring it, so a real one may announce that with a line the factory reads).
    """

    io_timeout: ClassVar[float] = 10.0
    """Upper bound for anything that should happen "soon" (generous, for slow machines)."""

    def make_echo_process(self, exit_code: int = 0) -> Process:
        """Start an echo process."""
        raise NotImplementedError

    def make_silent_process(self) -> Process:
        """Start a silent process."""
        raise NotImplementedError

    def make_stubborn_process(self) -> Process:
        """Start a silent process that ignores SIGTERM; return once it does."""
        raise NotImplementedError

    def _next(self, process: Process) -> ProcessOutput:
        output = process.next_output(self.io_timeout)
        assert output is not None, f"no output within {self.io_timeout} s"
        return output

    def _drain(self, process: Process) -> tuple[list[ProcessOutput], ProcessExited]:
        outputs: list[ProcessOutput] = []
        while True:
            output = self._next(process)
            if isinstance(output, ProcessExited):
                return outputs, output
            outputs.append(output)

    def test_lines_come_back_in_order_with_their_newlines(self) -> None:
        """Lines come back in the order written, each with its newline."""
        process = self.make_echo_process()
        try:
            process.write("first\n")
            process.write("second\nthird\n")
            assert self._next(process) == StdoutLine("first\n")
            assert self._next(process) == StdoutLine("second\n")
            assert self._next(process) == StdoutLine("third\n")
        finally:
            process.kill()
            process.wait(self.io_timeout)

    def test_exit_comes_after_every_line_and_then_forever(self) -> None:
        """ProcessExited follows the last line, carries the status, and repeats."""
        process = self.make_echo_process(exit_code=3)
        process.write("one\ntwo\n")
        process.close_stdin()
        outputs, exited = self._drain(process)
        assert outputs == [StdoutLine("one\n"), StdoutLine("two\n")]
        assert exited == ProcessExited(3)
        assert process.next_output(0) == ProcessExited(3)
        assert process.next_output(None) == ProcessExited(3)
        assert process.wait(self.io_timeout) == 3

    def test_a_last_line_without_newline_is_delivered(self) -> None:
        """A final line without a newline is still delivered."""
        process = self.make_echo_process()
        process.write("no newline")
        process.close_stdin()
        outputs, exited = self._drain(process)
        assert outputs == [StdoutLine("no newline")]
        assert exited == ProcessExited(0)

    def test_close_stdin_is_idempotent_and_stops_writes(self) -> None:
        """close_stdin may be repeated; a later write raises ProcessClosedError."""
        process = self.make_echo_process()
        process.close_stdin()
        process.close_stdin()
        with pytest.raises(ProcessClosedError):
            process.write("late\n")
        assert process.wait(self.io_timeout) == 0

    def test_write_after_exit_raises(self) -> None:
        """Writing to a process that has exited raises ProcessClosedError."""
        process = self.make_silent_process()
        process.kill()
        assert process.wait(self.io_timeout) is not None
        with pytest.raises(ProcessClosedError):
            process.write("anyone there?\n")

    def test_next_output_returns_none_when_nothing_comes(self) -> None:
        """next_output and wait return None when their timeout passes."""
        process = self.make_silent_process()
        try:
            assert process.next_output(0) is None
            assert process.next_output(0.05) is None
            assert process.wait(0.05) is None
        finally:
            process.kill()
            process.wait(self.io_timeout)

    def test_terminate_ends_the_process_and_is_idempotent(self) -> None:
        """A terminate ends the process with -SIGTERM; stopping again is harmless."""
        process = self.make_silent_process()
        process.terminate()
        process.terminate()
        code = process.wait(self.io_timeout)
        assert code is not None
        assert code == -signal.SIGTERM
        _, exited = self._drain(process)
        assert exited == ProcessExited(code)
        process.terminate()
        process.kill()
        assert process.wait(0) == code

    def test_kill_ends_a_process_that_ignores_terminate(self) -> None:
        """A kill ends a process that ignores SIGTERM, with -SIGKILL."""
        process = self.make_stubborn_process()
        process.terminate()
        assert process.wait(0.2) is None
        process.kill()
        process.kill()
        assert process.wait(self.io_timeout) == -signal.SIGKILL
        _, exited = self._drain(process)
        assert exited == ProcessExited(-signal.SIGKILL)

    def test_writes_from_many_threads_never_interleave(self) -> None:
        """Each write call's bytes arrive together, whatever other threads write."""
        process = self.make_echo_process()
        per_thread, width = 50, 120

        def writer(tag: str) -> None:
            for number in range(per_thread):
                process.write(f"{tag}{number:04d}".ljust(width, tag) + "\n")

        threads = [threading.Thread(target=writer, args=(tag,)) for tag in "abcd"]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        process.close_stdin()
        outputs, exited = self._drain(process)
        assert exited == ProcessExited(0)
        texts = [output.text for output in outputs if isinstance(output, StdoutLine)]
        assert len(texts) == 4 * per_thread
        for text in texts:
            assert len(text) == width + 1
            assert text[:-1].strip(text[0]).isdigit()

    def test_a_large_exchange_from_one_thread_does_not_deadlock(self) -> None:
        """A write larger than the pipes does not deadlock against unread output."""
        process = self.make_echo_process()
        line = "x" * 1023 + "\n"
        process.write(line * 2048)  # 2 MiB: more than any pipe buffers both ways
        process.close_stdin()
        outputs, exited = self._drain(process)
        assert exited == ProcessExited(0)
        assert outputs == [StdoutLine(line)] * 2048


class ConfinementContract:
    """What every :class:`~agentshim.execution.confinement.Confinement` does.

    Implement :meth:`make_confinement`; override :attr:`visible_host_path` if ``/tmp`` is
    not visible inside yours.
    """

    visible_host_path: ClassVar[str] = "/tmp"
    """An absolute host path the confinement maps."""

    def make_confinement(self) -> Confinement:
        """Return the confinement under test (its reap must be safe to call)."""
        raise NotImplementedError

    def test_wrapped_argv_ends_with_the_command(self) -> None:
        """The host argv ends with the command, unchanged."""
        argv = ["prog", "an argument with spaces", "--flag=1"]
        wrapped = self.make_confinement().wrap(argv, "/work", ("HOME",))
        assert all(isinstance(part, str) for part in wrapped)
        assert wrapped[-len(argv) :] == argv
        assert len(wrapped) > 0

    def test_env_values_travel_only_in_the_environment(self) -> None:
        """Confining passes variable values in the environment, never in argv."""
        secret = "s3cr3t-value-7f1c"
        inner = FakeExecutor(FakeRun())
        executor = confine(inner, self.make_confinement(), host_env={"PATH": "/usr/bin"})
        executor.run(CommandRequest(["prog"], env={"SECRET_TOKEN": secret}), NullSink())
        (sent,) = inner.requests
        assert not any(secret in part for part in sent.argv)
        assert sent.env["SECRET_TOKEN"] == secret
        assert sent.env["PATH"] == "/usr/bin"

    def test_confine_wraps_runs_spawns_and_health_checks(self) -> None:
        """Confining wraps runs, spawns and the health check, and trusts bare names."""
        confinement = self.make_confinement()
        inner = FakeExecutor(FakeRun(stdout=["v1.0"]), peers=SilentPeer())
        executor = confine(inner, confinement, host_env={})
        env = {"HOME": "/root"}
        executor.run(CommandRequest(["prog", "run"], cwd="/work", env=env), NullSink())
        assert list(inner.requests[-1].argv) == confinement.wrap(["prog", "run"], "/work", ["HOME"])
        executor.check_binary("prog", env, timeout=5)
        assert list(inner.requests[-1].argv[-2:]) == ["prog", "--version"]
        assert len(inner.requests[-1].argv) > 2
        process = executor.spawn(SpawnRequest(["prog", "serve"], cwd="/work", env=env))
        process.kill()
        assert list(inner.spawned[-1].argv) == confinement.wrap(
            ["prog", "serve"], "/work", ["HOME"]
        )
        assert executor.find_binary("prog", env) == "prog"

    def test_agent_paths_are_absolute_and_relative_paths_are_refused(self) -> None:
        """agent_path returns absolute paths and refuses relative ones."""
        confinement = self.make_confinement()
        assert confinement.agent_path(self.visible_host_path).startswith("/")
        with pytest.raises(ValueError, match="relative"):
            confinement.agent_path("relative/path")

    def test_reap_can_be_repeated(self) -> None:
        """A reap may be called again when there is nothing left to reap."""
        confinement = self.make_confinement()
        confinement.reap()
        confinement.reap()

    def test_env_is_a_mapping_of_strings(self) -> None:
        """The env maps strings to strings."""
        env = self.make_confinement().env
        assert all(isinstance(k, str) and isinstance(v, str) for k, v in env.items())


class ClockContract:
    """What every :class:`~agentshim.core.clock.Clock` does; implement :meth:`make_clock`."""

    def make_clock(self) -> Clock:
        """Return the clock under test."""
        raise NotImplementedError

    def test_monotonic_never_goes_back(self) -> None:
        """monotonic() never decreases."""
        clock = self.make_clock()
        readings = [clock.monotonic() for _ in range(200)]
        assert readings == sorted(readings)

    def test_a_wait_takes_its_time_and_reports_no_stop(self) -> None:
        """A wait advances the clock by its length and returns False."""
        clock = self.make_clock()
        before = clock.monotonic()
        assert clock.wait(0.02) is False
        assert clock.wait(0.02, threading.Event()) is False
        assert clock.monotonic() - before >= 0.04 - 1e-6

    def test_a_set_stop_ends_the_wait_at_once(self) -> None:
        """A wait whose stop is already set returns True at once."""
        clock = self.make_clock()
        stop = threading.Event()
        stop.set()
        before = clock.monotonic()
        assert clock.wait(30.0, stop) is True
        assert clock.monotonic() - before < 1.0

    @pytest.mark.parametrize("seconds", [float("inf"), 1e300, threading.TIMEOUT_MAX * 4])
    def test_a_wait_of_any_length_ends_when_its_stop_fires(self, seconds: float) -> None:
        """A wait longer than any timer can run, infinity included, ends with its stop.

        The stop is set, by another thread, before the wait starts, so a clock that does not
        really wait can show it too; a real clock must also end such a wait when the stop
        fires during it (SystemClock's own tests check that).
        """
        clock = self.make_clock()
        stop = threading.Event()
        setter = threading.Thread(target=stop.set)
        setter.start()
        setter.join()
        before = clock.monotonic()
        assert clock.wait(seconds, stop) is True
        assert clock.monotonic() - before < 1.0

    def test_zero_and_negative_waits_return_at_once(self) -> None:
        """Zero and negative waits return False at once."""
        clock = self.make_clock()
        before = clock.monotonic()
        assert clock.wait(0) is False
        assert clock.wait(-5) is False
        assert clock.monotonic() - before < 1.0
