"""Contract suites: what every executor, Process, Confinement, Clock, store and lease must do.

The stores are :class:`CheckpointStoreContract` and the leases :class:`LeasesContract`.

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
import time
from collections.abc import Callable, Generator, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import ClassVar, TypeVar

import pytest

from agentshim.core.clock import Clock
from agentshim.core.errors import (
    CliCheckError,
    CliTimeoutError,
    InvalidRequestError,
    LeaseLostError,
    LineTooLongError,
    ProcessClosedError,
    TurnStalledError,
)
from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage
from agentshim.execution.confinement import Confinement, confine
from agentshim.execution.executor import (
    CallbackSink,
    CommandExecutor,
    CommandHandle,
    CommandRequest,
    NullSink,
)
from agentshim.execution.process import (
    Process,
    ProcessExited,
    ProcessOutput,
    SpawnRequest,
    StdoutLine,
)
from agentshim.state.checkpoints import Checkpoint, CheckpointStore, ConversationBlobs
from agentshim.state.leases import ConversationLeases, FencedLeases, LeaseHolder

from ._liveness import HANG_GUARD_S, returns_within
from .executor import FakeExecutor, FakeRun
from .process import SilentPeer

__all__ = [
    "CheckpointStoreContract",
    "ClockContract",
    "ConfinementContract",
    "ContractProgram",
    "ExecutorContract",
    "LeasesContract",
    "ProcessContract",
]


_Arg = TypeVar("_Arg")

# A deadline or a wait no right behaviour comes near: an implementation that waited it out would
# block the test (caught by a liveness guard), not merely be slow, so no test measures speed.
_NEVER_S = 3600.0


def _on_threads(target: Callable[[_Arg], None], args: Iterable[_Arg]) -> None:
    """Call ``target`` once per argument, all at the same time on threads of their own; wait."""
    threads = [threading.Thread(target=target, args=(arg,)) for arg in args]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


@dataclass(frozen=True, slots=True)
class ContractProgram:
    """What a command run by :class:`ExecutorContract` does, for an implementation to stage.

    The command writes each ``stdout`` text to stdout and each ``stderr`` text to stderr,
    exactly as given (a text without a newline at the end stays without one), each stream's
    texts in order; with ``echo`` set it first prints, as one stdout line each, the value of
    each variable named in ``echo`` (``""`` when unset), then its working directory when
    ``echo_cwd``, then its stdin when ``echo_stdin``. Then it exits with ``returncode``, or
    with ``until_stopped`` keeps running (ignoring its stdin) until it is signalled.
    """

    stdout: tuple[str, ...] = ()
    stderr: tuple[str, ...] = ()
    returncode: int = 0
    until_stopped: bool = False
    echo: tuple[str, ...] = ()
    echo_cwd: bool = False
    echo_stdin: bool = False


class _Recorder:
    """A sink that records every call, in order, and may stop the run on a chosen line."""

    def __init__(self, on_line: str = "", action: str = "") -> None:
        self.calls: list[tuple[str, str]] = []
        self.handle: CommandHandle | None = None
        self._on_line = on_line
        self._action = action

    def started(self, handle: CommandHandle) -> None:
        self.handle = handle
        self.calls.append(("started", ""))

    def stdout(self, line: str) -> None:
        self.calls.append(("stdout", line))
        self._react(line)

    def stderr(self, line: str) -> None:
        self.calls.append(("stderr", line))
        self._react(line)

    def _react(self, line: str) -> None:
        if line != self._on_line:
            return
        assert self.handle is not None
        if self._action == "terminate":
            self.handle.terminate()
        elif self._action == "kill":
            self.handle.kill()
        elif self._action == "raise":
            raise _SinkFailed(line)

    def lines(self, stream: str) -> list[str]:
        return [line for kind, line in self.calls if kind == stream]


class _SinkFailed(Exception):
    """Raised by a contract sink, to see it come out of ``run`` unchanged."""


class ExecutorContract:
    """What every :class:`~agentshim.execution.executor.CommandExecutor` does with a run.

    Implement :meth:`stage`, which returns an executor and the argv that runs a
    :class:`ContractProgram` on it, and :meth:`stage_binary`, which returns an executor and
    a binary path whose ``--version`` behaves like the program. The tests build the
    requests (env, cwd, stdin, timeout) themselves and judge only what a caller of ``run``
    observes: the sink's calls and their order, the result, the errors.
    """

    io_timeout: ClassVar[float] = 60.0
    """How long a run that should end may block before the test fails as hung.

    A liveness guard, never a speed limit: no test asserts how fast anything was. It is also
    the ``timeout`` of every request that does not test timeouts.
    """

    base_env: ClassVar[Mapping[str, str]] = {}
    """Variables every request carries (a real executor may need PATH)."""

    def stage(
        self, program: ContractProgram, *, max_line_bytes: int | None = None
    ) -> tuple[CommandExecutor, Sequence[str]]:
        """Return an executor (with that line limit, if given) and the argv of ``program``."""
        raise NotImplementedError

    def stage_binary(self, program: ContractProgram) -> tuple[CommandExecutor, str]:
        """Return an executor and the path of a binary whose ``--version`` is ``program``."""
        raise NotImplementedError

    def _request(
        self,
        argv: Sequence[str],
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        stdin: str | None = None,
        timeout: float | None = None,
    ) -> CommandRequest:
        return CommandRequest(
            argv,
            stdin=stdin,
            cwd=cwd,
            env={**self.base_env, **(env or {})},
            timeout=self.io_timeout if timeout is None else timeout,
        )

    def _run_guarded(
        self, executor: CommandExecutor, request: CommandRequest, sink: _Recorder
    ) -> None:
        """Run, failing the test if the run is still blocked after :attr:`io_timeout`."""
        try:
            returns_within(self.io_timeout, lambda: executor.run(request, sink))
        finally:
            if sink.handle is not None:
                sink.handle.kill()  # harmless after the end; frees a run left blocked

    def test_the_handle_comes_first_then_each_stream_in_order(self) -> None:
        """started() precedes every line; each stream's lines arrive in order, whole."""
        executor, argv = self.stage(
            ContractProgram(stdout=("one\n", "two\n", "three\n"), stderr=("warn\n", "more\n"))
        )
        sink = _Recorder()
        result = executor.run(self._request(argv), sink)
        assert sink.calls[0] == ("started", "")
        assert [kind for kind, _ in sink.calls].count("started") == 1
        assert sink.lines("stdout") == ["one\n", "two\n", "three\n"]
        assert sink.lines("stderr") == ["warn\n", "more\n"]
        assert result.returncode == 0

    def test_the_result_keeps_what_the_sink_got(self) -> None:
        """The result's stdout and stderr are the lines delivered (small output: all of it)."""
        executor, argv = self.stage(
            ContractProgram(stdout=("a\n", "é ✓\n"), stderr=("e\n",), returncode=3)
        )
        sink = _Recorder()
        result = executor.run(self._request(argv), sink)
        assert result.returncode == 3
        assert result.stdout == "".join(sink.lines("stdout")) == "a\né ✓\n"
        assert result.stderr == "".join(sink.lines("stderr")) == "e\n"

    def test_a_last_line_without_its_newline_is_delivered_as_it_is(self) -> None:
        """A final line the command did not end with a newline arrives without one."""
        executor, argv = self.stage(ContractProgram(stdout=("first\n", "last"), stderr=("tail",)))
        sink = _Recorder()
        result = executor.run(self._request(argv), sink)
        assert sink.lines("stdout") == ["first\n", "last"]
        assert sink.lines("stderr") == ["tail"]
        assert result.stdout == "first\nlast"

    def test_env_cwd_and_stdin_reach_the_command(self) -> None:
        """Every variable of the request's env, its cwd and its stdin reach the command."""
        cwd = "/"
        executor, argv = self.stage(
            ContractProgram(
                echo=("AGENTSHIM_CONTRACT", "AGENTSHIM_UNSET"), echo_cwd=True, echo_stdin=True
            )
        )
        request = self._request(
            argv, env={"AGENTSHIM_CONTRACT": "value with spaces"}, cwd=cwd, stdin="the prompt"
        )
        sink = _Recorder()
        executor.run(request, sink)
        assert sink.lines("stdout") == ["value with spaces\n", "\n", f"{cwd}\n", "the prompt"]

    def test_a_sink_that_raises_ends_the_run_with_its_exception(self) -> None:
        """The sink's exception comes out of run, and the sink gets no call after it."""
        executor, argv = self.stage(
            ContractProgram(stdout=("one\n", "two\n", "three\n"), until_stopped=True)
        )
        sink = _Recorder(on_line="two\n", action="raise")
        # The command runs until stopped and the run's deadline is an hour away: a run that
        # waited for the command after its sink failed would block, and fail the guard.
        with pytest.raises(_SinkFailed):
            self._run_guarded(executor, self._request(argv, timeout=_NEVER_S), sink)
        assert sink.calls[-1] == ("stdout", "two\n")

    def test_terminate_ends_the_run_with_minus_sigterm(self) -> None:
        """A terminate through the handle ends a running command with ``-SIGTERM``."""
        executor, argv = self.stage(ContractProgram(stdout=("ready\n",), until_stopped=True))
        sink = _Recorder(on_line="ready\n", action="terminate")
        result = executor.run(self._request(argv), sink)
        assert result.returncode == -signal.SIGTERM
        assert sink.lines("stdout")[0] == "ready\n"

    def test_kill_ends_the_run_with_minus_sigkill(self) -> None:
        """A kill through the handle ends a running command with ``-SIGKILL``."""
        executor, argv = self.stage(ContractProgram(stdout=("ready\n",), until_stopped=True))
        sink = _Recorder(on_line="ready\n", action="kill")
        assert executor.run(self._request(argv), sink).returncode == -signal.SIGKILL

    def test_terminate_from_another_thread_and_after_the_end(self) -> None:
        """The handle works from another thread, and stopping a finished run is harmless."""
        executor, argv = self.stage(ContractProgram(stdout=("ready\n",), until_stopped=True))
        handles: list[CommandHandle] = []
        ready = threading.Event()
        sink = CallbackSink(lambda line: ready.set(), on_started=handles.append)

        def stop_when_ready() -> None:
            if ready.wait(self.io_timeout):
                handles[0].terminate()

        stopper = threading.Thread(target=stop_when_ready)
        stopper.start()
        result = executor.run(self._request(argv), sink)
        stopper.join()
        assert result.returncode == -signal.SIGTERM
        handles[0].terminate()
        handles[0].kill()

    def test_a_run_past_its_timeout_raises_cli_timeout_error(self) -> None:
        """Past ``request.timeout`` the run raises CliTimeoutError, after the lines so far."""
        executor, argv = self.stage(ContractProgram(stdout=("before\n",), until_stopped=True))
        sink = _Recorder()
        started = time.monotonic()
        with pytest.raises(CliTimeoutError) as caught:
            self._run_guarded(executor, self._request(argv, timeout=0.5), sink)
        assert time.monotonic() - started >= 0.5
        assert caught.value.timeout == 0.5
        assert list(caught.value.argv) == list(argv)
        assert sink.lines("stdout") == ["before\n"]

    def test_a_run_silent_past_its_idle_timeout_raises_turn_stalled_error(self) -> None:
        """Silent for ``request.idle_timeout``: TurnStalledError, after the lines so far."""
        executor, argv = self.stage(ContractProgram(stdout=("before\n",), until_stopped=True))
        sink = _Recorder()
        # The run's own deadline is an hour away: only the idle timeout can end it in time, and
        # the error says which one did (CliTimeoutError would be the deadline).
        request = replace(self._request(argv, timeout=_NEVER_S), idle_timeout=0.5)
        started = time.monotonic()
        with pytest.raises(TurnStalledError) as caught:
            self._run_guarded(executor, request, sink)
        assert time.monotonic() - started >= 0.5
        assert caught.value.timeout == 0.5
        assert sink.lines("stdout") == ["before\n"]

    def test_an_idle_timeout_does_not_end_a_run_that_keeps_printing(self) -> None:
        """A run that prints and exits before its idle timeout is not stalled."""
        executor, argv = self.stage(ContractProgram(stdout=("a\n", "b\n")))
        # Generous: a busy machine may take seconds to start the command and see its output.
        request = replace(self._request(argv), idle_timeout=self.io_timeout)
        result = executor.run(request, _Recorder())
        assert result.returncode == 0

    def test_a_line_too_long_ends_the_run_after_the_lines_before_it(self) -> None:
        """A line past the limit raises LineTooLongError after the lines before it."""
        executor, argv = self.stage(
            ContractProgram(stdout=("short\n", "x" * 200 + "\n", "after\n")), max_line_bytes=100
        )
        sink = _Recorder()
        with pytest.raises(LineTooLongError) as caught:
            executor.run(self._request(argv), sink)
        assert caught.value.limit == 100
        assert sink.lines("stdout") == ["short\n"]

    def test_a_line_at_the_limit_passes(self) -> None:
        """A line of exactly the limit (bytes before its newline) arrives whole."""
        line = "é" * 50 + "\n"  # 100 bytes before the newline
        executor, argv = self.stage(ContractProgram(stdout=(line,)), max_line_bytes=100)
        sink = _Recorder()
        executor.run(self._request(argv), sink)
        assert sink.lines("stdout") == [line]

    def test_check_binary_passes_a_healthy_binary(self) -> None:
        """check_binary returns for a binary whose ``--version`` exits 0."""
        executor, path = self.stage_binary(ContractProgram(stdout=("tool 1.2.3\n",)))
        executor.check_binary(path, dict(self.base_env), timeout=self.io_timeout)

    def test_check_binary_fails_an_unhealthy_binary_with_what_it_said(self) -> None:
        """check_binary raises CliCheckError with the exit status and the last thing said."""
        executor, path = self.stage_binary(
            ContractProgram(stderr=("error: missing runtime\n",), returncode=2)
        )
        with pytest.raises(CliCheckError) as caught:
            executor.check_binary(path, dict(self.base_env), timeout=self.io_timeout)
        assert caught.value.path == path
        assert "exited 2" in caught.value.detail
        assert "missing runtime" in caught.value.detail


class ProcessContract:
    """What every :class:`~agentshim.execution.process.Process` does.

    Implement three factories. The echo process writes every stdin line back to stdout
    unchanged (a last line without newline too) and exits with ``exit_code`` at end of
    stdin. The silent process reads stdin, prints nothing and runs until it is stopped. The
    stubborn one is silent and also ignores SIGTERM (its factory returns only once the
    process is ignoring it, so a real one may announce that with a line the factory reads).
    """

    io_timeout: ClassVar[float] = 60.0
    """How long a wait for output or an exit may block before the test fails as hung.

    A liveness guard, never a speed limit: no test asserts how fast anything was.
    """

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

    @contextmanager
    def _stopped_after(self, process: Process) -> Generator[Process, None, None]:
        """Yield ``process``; kill it and wait for it afterwards, whatever the test did."""
        try:
            yield process
        finally:
            process.kill()
            process.wait(self.io_timeout)

    def test_lines_come_back_in_order_with_their_newlines(self) -> None:
        """Lines come back in the order written, each with its newline."""
        with self._stopped_after(self.make_echo_process()) as process:
            process.write("first\n")
            process.write("second\nthird\n")
            assert self._next(process) == StdoutLine("first\n")
            assert self._next(process) == StdoutLine("second\n")
            assert self._next(process) == StdoutLine("third\n")

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
        with self._stopped_after(self.make_silent_process()) as process:
            assert process.next_output(0) is None
            assert process.next_output(0.05) is None
            assert process.wait(0.05) is None

    def test_wake_ends_a_blocked_read_from_another_thread(self) -> None:
        """``wake`` from another thread makes a blocked ``next_output`` return None."""
        with self._stopped_after(self.make_silent_process()) as process:
            timer = threading.Timer(0.05, process.wake)
            timer.start()
            try:
                # No timeout and a silent process: only the wake can end this read (a read the
                # wake missed blocks until the kill at the end, and fails the guard).
                assert returns_within(self.io_timeout, lambda: process.next_output(None)) is None
            finally:
                timer.cancel()

    def test_a_wake_before_the_read_ends_the_next_read_only(self) -> None:
        """A wake with no read blocked ends the next read; the one after waits again."""
        with self._stopped_after(self.make_echo_process()) as process:
            process.wake()
            assert process.next_output(self.io_timeout) is None
            process.write("after\n")
            output = process.next_output(self.io_timeout)
            assert isinstance(output, StdoutLine)
            assert output.text == "after\n"

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

        _on_threads(writer, "abcd")
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
        """A wait whose stop is already set returns True at once, spending none of its length."""
        clock = self.make_clock()
        stop = threading.Event()
        stop.set()
        before = clock.monotonic()
        assert returns_within(HANG_GUARD_S, lambda: clock.wait(_NEVER_S, stop)) is True
        assert clock.monotonic() - before < _NEVER_S, "the wait was counted as spent"

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
        assert returns_within(HANG_GUARD_S, lambda: clock.wait(seconds, stop)) is True
        assert clock.monotonic() - before < seconds, "the wait was counted as spent"

    def test_zero_and_negative_waits_return_at_once(self) -> None:
        """Zero and negative waits return False at once; the clock moves neither way by them."""
        clock = self.make_clock()
        before = clock.monotonic()
        # A zero taken for "no limit" would block; a negative length taken as its size would
        # block a real clock and move a fake one by an hour (or back by one).
        assert returns_within(HANG_GUARD_S, lambda: clock.wait(0)) is False
        assert returns_within(HANG_GUARD_S, lambda: clock.wait(-_NEVER_S)) is False
        assert 0 <= clock.monotonic() - before < _NEVER_S


_USAGE = ProviderUsage(
    tokens=TokenUsage(input_tokens=120, cache_read_input_tokens=100, output_tokens=7, turns=1),
    total_cost_usd=0.0125,
    provider="fake",
    raw={"input_tokens": 20, "nested": {"a": [1, 2]}},
    cost_source=CostSource.REPORTED,
    model="model-x",
)

_BAD_KEYS = ("", "../escape", "a/b", ".hidden", "a\\b", "x" * 201, "white space", "nul\0")


class CheckpointStoreContract:
    """What every :class:`~agentshim.state.checkpoints.CheckpointStore` does.

    A store that is also :class:`~agentshim.state.checkpoints.ConversationBlobs` keeps blobs as
    it keeps checkpoints; :meth:`make_fenced_store` gives the store with the leases it checks
    fenced writes against (the store itself, when it keeps leases).
    """

    def make_store(self) -> CheckpointStore:
        """Return an empty store."""
        raise NotImplementedError

    def make_fenced_store(self) -> tuple[CheckpointStore, ConversationLeases]:
        """Return an empty store and the (empty) leases it checks fenced writes against."""
        raise NotImplementedError

    def _blobs(self) -> ConversationBlobs:
        store = self.make_store()
        assert isinstance(store, ConversationBlobs), "a portable store keeps blobs"
        return store

    def test_a_blob_round_trips_is_replaced_and_cleared(self) -> None:
        """A blob loads back byte for byte, a save replaces it, clear removes it."""
        store = self._blobs()
        assert store.load_blob("k") is None
        blob = bytes(range(256)) * 64
        store.save_blob("k", blob)
        assert store.load_blob("k") == blob
        store.save_blob("k", b"second")
        assert store.load_blob("k") == b"second"
        store.save_blob("other", b"")
        assert store.load_blob("other") == b""
        store.clear_blob("k")
        assert store.load_blob("k") is None
        assert store.load_blob("other") == b""
        store.clear_blob("k")

    def test_blob_keys_are_checked_and_blobs_are_bytes(self) -> None:
        """Unsafe keys and blobs that are not bytes are refused."""
        store = self._blobs()
        for key in _BAD_KEYS:
            with pytest.raises(ValueError, match="checkpoint key"):
                store.save_blob(key, b"x")
            with pytest.raises(ValueError, match="checkpoint key"):
                store.load_blob(key)
        with pytest.raises(InvalidRequestError):
            store.save_blob("k", "text")  # type: ignore[arg-type]  # pyright: ignore[reportArgumentType]

    def _lost_grant(self) -> tuple[CheckpointStore, LeaseHolder, LeaseHolder]:
        """A store, an old grant released, and the newer grant that holds the key now."""
        store, leases = self.make_fenced_store()
        old = leases.acquire("k", LeaseHolder(4242, "worker-a", 1.0, "token-a"), 30)
        leases.release("k", old)
        new = leases.acquire("k", LeaseHolder(4343, "worker-b", 2.0, "token-b"), 30)
        assert new.token == "token-b"
        assert 0 < old.fence < new.fence
        return store, old, new

    def test_a_save_fenced_by_a_lost_grant_is_refused_naming_the_new_holder(self) -> None:
        """A holder that lost its lease cannot save; the error names who holds it now."""
        store, old, new = self._lost_grant()
        with pytest.raises(LeaseLostError) as caught:
            store.save("k", Checkpoint("conv-late", sequence=9, fence=old.fence))
        assert (caught.value.holder_pid, caught.value.holder_host) == (4343, "worker-b")
        assert caught.value.holder_fence == new.fence
        assert caught.value.fence == old.fence
        assert store.load("k") is None
        store.save("k", Checkpoint("conv-new", sequence=1, fence=new.fence))
        assert store.load("k") == Checkpoint("conv-new", sequence=1, fence=new.fence)

    def test_a_blob_fenced_by_a_lost_grant_is_refused(self) -> None:
        """A lost holder's blob is refused; the new holder's is kept."""
        store, old, new = self._lost_grant()
        assert isinstance(store, ConversationBlobs)
        with pytest.raises(LeaseLostError, match="worker-b"):
            store.save_blob("k", b"late", fence=old.fence)
        assert store.load_blob("k") is None
        store.save_blob("k", b"current", fence=new.fence)
        assert store.load_blob("k") == b"current"

    def test_a_lost_grant_stays_refused_after_the_new_holder_left(self) -> None:
        """Once a newer grant wrote, an older one's writes stay refused; unfenced ones pass."""
        store, old, new = self._lost_grant()
        assert isinstance(store, ConversationBlobs)
        store.save("k", Checkpoint("conv-new", sequence=2, fence=new.fence))
        store.save_blob("k", b"current", fence=new.fence)
        for write in (
            lambda: store.save("k", Checkpoint("conv-late", sequence=3, fence=old.fence)),
            lambda: store.save_blob("k", b"late", fence=old.fence),
        ):
            with pytest.raises(LeaseLostError):
                write()
        assert store.load("k") == Checkpoint("conv-new", sequence=2, fence=new.fence)
        assert store.load_blob("k") == b"current"
        store.save("k", Checkpoint("conv-by-hand"))
        assert store.load("k") == Checkpoint("conv-by-hand")

    def test_nothing_saved_loads_as_none(self) -> None:
        """Nothing saved loads as none."""
        assert self.make_store().load("user-1") is None

    def test_a_saved_checkpoint_loads_back_equal(self) -> None:
        """A saved checkpoint loads back equal."""
        store = self.make_store()
        checkpoint = Checkpoint("conv-1", _USAGE, turns=3)
        store.save("user-1", checkpoint)
        loaded = store.load("user-1")
        assert loaded is not None
        assert loaded.session_id == "conv-1"
        assert loaded.turns == 3
        assert loaded.usage is not None
        assert loaded.usage.to_dict() == _USAGE.to_dict()

    def test_a_checkpoint_without_usage_round_trips(self) -> None:
        """A checkpoint without usage round trips."""
        store = self.make_store()
        store.save("k", Checkpoint("conv-2"))
        assert store.load("k") == Checkpoint("conv-2")

    def test_save_replaces_the_earlier_checkpoint(self) -> None:
        """Save replaces the earlier checkpoint."""
        store = self.make_store()
        store.save("k", Checkpoint("conv-old"))
        store.save("k", Checkpoint("conv-new", turns=1))
        assert store.load("k") == Checkpoint("conv-new", turns=1)

    def test_clear_removes_it_and_clearing_nothing_is_fine(self) -> None:
        """Clear removes it and clearing nothing is fine."""
        store = self.make_store()
        store.save("k", Checkpoint("conv-1"))
        store.clear("k")
        assert store.load("k") is None
        store.clear("k")
        store.clear("never-saved")

    def test_keys_are_independent(self) -> None:
        """Keys are independent."""
        store = self.make_store()
        store.save("a", Checkpoint("conv-a"))
        store.save("b", Checkpoint("conv-b"))
        store.clear("a")
        assert store.load("a") is None
        assert store.load("b") == Checkpoint("conv-b")

    def test_unsafe_keys_are_refused_by_every_method(self) -> None:
        """Unsafe keys are refused by every method."""
        store = self.make_store()
        for key in _BAD_KEYS:
            with pytest.raises(ValueError, match="checkpoint key"):
                store.load(key)
            with pytest.raises(ValueError, match="checkpoint key"):
                store.save(key, Checkpoint("conv-1"))
            with pytest.raises(ValueError, match="checkpoint key"):
                store.clear(key)

    def test_concurrent_saves_leave_one_whole_checkpoint(self) -> None:
        """Concurrent saves leave one whole checkpoint."""
        store = self.make_store()
        ids = [f"conv-{n}" for n in range(4)]

        def save_many(session_id: str) -> None:
            for turns in range(10):
                store.save("shared", Checkpoint(session_id, _USAGE, turns))

        _on_threads(save_many, ids)
        loaded = store.load("shared")
        assert loaded is not None
        assert loaded.session_id in ids
        assert loaded.turns == 9

    def test_the_sequence_round_trips(self) -> None:
        """The sequence round trips."""
        store = self.make_store()
        store.save("k", Checkpoint("conv-1", turns=2, sequence=7))
        assert store.load("k") == Checkpoint("conv-1", turns=2, sequence=7)

    def test_a_save_never_replaces_a_newer_checkpoint(self) -> None:
        """A save never replaces a checkpoint of a newer or equal sequence."""
        store = self.make_store()
        store.save("k", Checkpoint("conv-winner", turns=5, sequence=5))
        store.save("k", Checkpoint("conv-late", turns=4, sequence=4))
        store.save("k", Checkpoint("conv-tie", turns=5, sequence=5))
        assert store.load("k") == Checkpoint("conv-winner", turns=5, sequence=5)
        store.save("k", Checkpoint("conv-next", turns=6, sequence=6))
        assert store.load("k") == Checkpoint("conv-next", turns=6, sequence=6)

    def test_an_unordered_checkpoint_replaces_any_and_is_replaced_by_any(self) -> None:
        """Sequence 0 (a checkpoint built by hand, or an old one) is unordered."""
        store = self.make_store()
        store.save("k", Checkpoint("conv-ordered", sequence=9))
        store.save("k", Checkpoint("conv-by-hand"))
        assert store.load("k") == Checkpoint("conv-by-hand")
        store.save("k", Checkpoint("conv-ordered", sequence=1))
        assert store.load("k") == Checkpoint("conv-ordered", sequence=1)

    def test_racing_ordered_saves_keep_the_newest(self) -> None:
        """Threads saving interleaved sequences leave the highest one."""
        store = self.make_store()

        def save_every_fourth(first: int) -> None:
            for sequence in range(first, 41, 4):
                store.save("shared", Checkpoint(f"conv-{first}", _USAGE, sequence, sequence))

        _on_threads(save_every_fourth, range(1, 5))
        loaded = store.load("shared")
        assert loaded is not None
        assert (loaded.session_id, loaded.sequence) == ("conv-4", 40)


class LeasesContract:
    """What every :class:`~agentshim.state.leases.ConversationLeases` does.

    The expiry tests wait for real: a lease's time-to-live is kept by the implementation's
    own clock (a database server's, say), which a test cannot move.
    """

    #: A time-to-live short enough to wait out in a test, long enough to outlast a slow call.
    short_ttl: ClassVar[float] = 0.4

    def make_leases(self) -> ConversationLeases:
        """Return leases with nothing held."""
        raise NotImplementedError

    def held_leases(
        self, key: str = "conv-1"
    ) -> tuple[ConversationLeases, LeaseHolder, LeaseHolder]:
        """Return (leases, first, second): fresh leases with ``key`` held by ``first``."""
        leases = self.make_leases()
        first, second = LeaseHolder.here(), LeaseHolder.here()
        leases.acquire(key, first, 30)
        return leases, first, second

    def test_a_free_lease_is_taken(self) -> None:
        """A free lease is taken: acquire returns the holder that asked."""
        leases = self.make_leases()
        me = LeaseHolder.here()
        assert leases.acquire("conv-1", me, 30) == me

    def test_a_held_lease_is_refused_and_names_its_holder(self) -> None:
        """Another holder gets the one that keeps it: pid, host, since and token."""
        leases = self.make_leases()
        first = LeaseHolder(4242, "worker-a", 1_764_580_000.25, "token-a")
        second = LeaseHolder(4343, "worker-b", 1_764_580_001.5, "token-b")
        assert leases.acquire("conv-1", first, 30) == first
        assert leases.acquire("conv-1", second, 30) == first

    def test_the_holder_may_acquire_again(self) -> None:
        """Acquiring a lease one already holds keeps it (and renews it)."""
        leases, me, _ = self.held_leases()
        assert leases.acquire("conv-1", me, 30) == me

    def test_release_frees_it_for_the_next_holder(self) -> None:
        """Release frees it for the next holder."""
        leases, first, second = self.held_leases()
        leases.release("conv-1", first)
        assert leases.acquire("conv-1", second, 30) == second

    def test_only_the_holder_releases_or_renews_it(self) -> None:
        """Another holder's release leaves the lease alone, and its renew says False."""
        leases, first, second = self.held_leases()
        leases.release("conv-1", second)
        assert not leases.renew("conv-1", second, 30)
        assert leases.acquire("conv-1", second, 30) == first
        assert leases.renew("conv-1", first, 30)

    def test_a_released_lease_cannot_be_renewed(self) -> None:
        """A released lease cannot be renewed, and releasing it again is fine."""
        leases, me, _ = self.held_leases()
        leases.release("conv-1", me)
        assert not leases.renew("conv-1", me, 30)
        leases.release("conv-1", me)
        leases.release("never-held", me)

    def test_keys_are_independent(self) -> None:
        """Keys are independent."""
        leases, _, second = self.held_leases("conv-a")
        assert leases.acquire("conv-b", second, 30) == second
        assert leases.acquire("claude/conv-a", second, 30) == second

    def test_a_lease_nobody_renews_expires(self) -> None:
        """A crashed holder's lease expires: another takes it, and the old holder has lost it."""
        leases = self.make_leases()
        crashed, next_one = LeaseHolder.here(), LeaseHolder.here()
        leases.acquire("conv-1", crashed, self.short_ttl)
        time.sleep(self.short_ttl * 1.5)
        assert leases.acquire("conv-1", next_one, 30) == next_one
        assert not leases.renew("conv-1", crashed, 30)
        leases.release("conv-1", crashed)
        assert leases.acquire("conv-1", LeaseHolder.here(), 30) == next_one

    def test_renewing_keeps_a_lease_past_its_first_ttl(self) -> None:
        """Renewing keeps a lease past its first time-to-live.

        Every grant lasts ``short_ttl`` from when it was asked for, so a renewal may fail, and
        another holder take the lease, only once ``short_ttl`` has passed since the last grant
        was asked for. A machine too slow to renew in time is no fault: the lease is taken
        again and the count starts over (on a quiet machine the first try always judges).
        """
        leases = self.make_leases()
        me = LeaseHolder.here()
        ttl = self.short_ttl
        for _ in range(20):
            kept_from = last = time.monotonic()
            assert leases.acquire("conv-1", me, ttl) == me
            while last - kept_from < 1.5 * ttl:
                time.sleep(ttl / 4)  # the pace of a renewer, not a wait for anything
                asked = time.monotonic()
                if not leases.renew("conv-1", me, ttl):
                    assert time.monotonic() - last >= ttl, "a renewed lease was lost in its ttl"
                    break
                last = asked
            else:
                other = LeaseHolder.here()
                taken = leases.acquire("conv-1", other, 30)
                if taken == me:
                    return
                assert time.monotonic() - last >= ttl, "a renewed lease was taken in its ttl"
                leases.release("conv-1", taken)
        pytest.skip("this machine was never quick enough to renew within the time-to-live")

    def test_every_grant_carries_a_larger_fencing_token(self) -> None:
        """Each new grant's fence is larger than every earlier one; a renewal keeps it."""
        leases = self.make_leases()
        first, second = LeaseHolder.here(), LeaseHolder.here()
        granted = leases.acquire("conv-1", first, 30)
        assert granted.fence > 0
        assert leases.acquire("conv-1", first, 30).fence == granted.fence
        assert leases.acquire("conv-1", second, 30).fence == granted.fence
        leases.release("conv-1", first)
        again = leases.acquire("conv-1", second, 30)
        assert again.fence > granted.fence
        other = leases.acquire("conv-2", first, 30)
        assert other.fence > 0
        leases.release("conv-1", second)
        assert leases.acquire("conv-1", first, 30).fence > max(again.fence, other.fence)

    def test_a_lease_taken_over_after_expiry_gets_a_larger_fence(self) -> None:
        """The holder that takes an expired lease gets a newer token than the one who lost it."""
        leases = self.make_leases()
        lost = leases.acquire("conv-1", LeaseHolder.here(), self.short_ttl)
        time.sleep(self.short_ttl * 1.5)
        taken = leases.acquire("conv-1", LeaseHolder.here(), 30)
        assert taken.fence > lost.fence > 0

    def test_the_current_holder_is_named_with_its_fence(self) -> None:
        """``holder(key)`` names the live holder and its token, None when the lease is free."""
        leases = self.make_leases()
        if not isinstance(leases, FencedLeases):
            pytest.skip("these leases cannot name their holder (not FencedLeases)")
        assert leases.holder("conv-1") is None
        granted = leases.acquire("conv-1", LeaseHolder(7, "host-h", 3.5, "tok"), 30)
        named = leases.holder("conv-1")
        assert named is not None
        assert (named.pid, named.host, named.token, named.fence) == (
            7,
            "host-h",
            "tok",
            granted.fence,
        )
        leases.release("conv-1", granted)
        assert leases.holder("conv-1") is None

    def test_of_many_racing_holders_exactly_one_gets_it(self) -> None:
        """Of many threads acquiring at once, exactly one gets the lease."""
        leases = self.make_leases()
        holders = [LeaseHolder.here() for _ in range(8)]
        results: list[LeaseHolder] = []
        start = threading.Barrier(len(holders))

        def race(holder: LeaseHolder) -> None:
            start.wait()
            results.append(leases.acquire("conv-1", holder, 30))

        _on_threads(race, holders)
        assert len({result.token for result in results}) == 1
        assert results[0] in holders
