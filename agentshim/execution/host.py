"""HostCommandExecutor: runs commands as processes on this machine.

Threading model. On POSIX a run uses no helper threads at all: the calling thread waits on
the child's non-blocking stdin, stdout and stderr pipes (and, on Linux, a pidfd that becomes
readable when the child exits) with :mod:`selectors`, writes stdin as the pipe accepts it and
reads output as it arrives. Sink callbacks therefore run on the caller's thread by
construction. Where selectors cannot wait on pipes (Windows) one thread per pipe moves bytes
through a queue instead; the sink still only ever runs on the caller's thread.

Every process starts in its own session, so it and everything it starts form one process
group that a timeout, a cancel or a failing sink can kill as a whole. Descendants that leave
the group (a tool shell that calls ``setsid``) are found by the run marker in their
environment and ended when the run ends (see :mod:`._reap`). See ``docs/execution.md`` for
the reaping guarantee, the drain period and the bounded output tails.
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import shutil
import sys
import time
from collections.abc import Callable, Mapping

from agentshim.core._checks import seconds
from agentshim.core.errors import (
    CliNotFoundError,
    CliTimeoutError,
    InvalidRequestError,
    LineTooLongError,
    TurnStalledError,
)
from agentshim.core.stream import DEFAULT_MAX_LINE_BYTES

from ._child import ChildProcess
from ._lines import LineAssembler, LineOverflow, OutputTail, split_lines
from ._reap import RUN_MARKER, can_scan, new_run_id, reap_marked
from ._stop import GroupStop, sooner
from ._streams import OUT, SIDE, SelectorStreams, Streams, ThreadStreams
from ._validate import checked_timeout
from .checked_binaries import CHECKED_BINARIES, BinaryIdentity
from .executor import CommandRequest, CommandResult, CommandStreamSink, SideChannel
from .host_process import HostProcess
from .process import SpawnRequest
from .pty_process import PtyProcess, PtySize
from .readiness import check_version

__all__ = [
    "DEFAULT_DRAIN_TIMEOUT",
    "DEFAULT_OUTPUT_TAIL",
    "DEFAULT_TERMINATE_GRACE",
    "HostCommandExecutor",
    "HostCommandHandle",
]

DEFAULT_DRAIN_TIMEOUT = 2.0
"""Seconds output is still read after the process exited, while something holds its pipes."""
DEFAULT_TERMINATE_GRACE = 5.0
"""Seconds between a handle's SIGTERM and the SIGKILL that follows if the process lingers."""
DEFAULT_OUTPUT_TAIL = 1 << 20
"""Characters of stdout and of stderr kept on :class:`CommandResult` (each)."""
_OWNER = "HostCommandExecutor"
# Without a pidfd, exit is noticed by polling this often while the pipes stay open.
_EXIT_POLL = 0.05
# A side channel the streams cannot wait on is served this often.
_SIDE_POLL = 0.05


class HostCommandExecutor:
    """Runs commands and long-lived processes on the host.

    Args:
        drain_timeout: After the process exits, how long output is still read while a
            process it started keeps stdout or stderr open; then the group is killed and the
            run returns.
        terminate_grace: After a handle's ``terminate()``, how long the process group has to
            exit before it is killed.
        output_tail: How many characters of stdout and of stderr the result keeps.
        max_line_bytes: The longest line, in bytes before its newline, that a run or a
            spawned process may print (``agentshim.core.stream.DEFAULT_MAX_LINE_BYTES``, 64 MiB).
            A longer line is never buffered: the process group is killed, and ``run`` raises
            :class:`~agentshim.core.errors.LineTooLongError` after the lines before it were
            delivered; a :class:`HostProcess` raises it from ``next_output`` instead.
        use_threads: Move bytes with reader threads instead of a selector. ``None`` picks
            threads only where selectors cannot wait on pipes (Windows).
        reap_on_success: Whether processes a run left running (the agent's background
            servers, watchers) are ended when it succeeds too. A run that fails, times out,
            is stopped through its handle or whose sink raises is reaped either way; pass
            False only to let what an agent deliberately started outlive a successful turn.
    """

    __slots__ = (
        "_drain",
        "_grace",
        "_max_line",
        "_no_scan_said",
        "_reap_success",
        "_tail",
        "_threads",
    )

    def __init__(
        self,
        *,
        drain_timeout: float = DEFAULT_DRAIN_TIMEOUT,
        terminate_grace: float = DEFAULT_TERMINATE_GRACE,
        output_tail: int = DEFAULT_OUTPUT_TAIL,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        use_threads: bool | None = None,
        reap_on_success: bool = True,
    ) -> None:
        """Configure the executor.

        Raises:
            InvalidRequestError: A period is negative or not finite, ``output_tail`` is
                negative, or ``max_line_bytes`` is below 1.
        """
        self._drain = seconds(_OWNER, "drain_timeout", drain_timeout)
        self._grace = seconds(_OWNER, "terminate_grace", terminate_grace)
        if output_tail < 0:
            raise InvalidRequestError("output_tail", f"{output_tail!r} is below 0")
        if max_line_bytes < 1:
            raise InvalidRequestError("max_line_bytes", f"{max_line_bytes!r} is below 1")
        self._tail = output_tail
        self._max_line = max_line_bytes
        self._threads = sys.platform == "win32" if use_threads is None else use_threads
        self._reap_success = reap_on_success
        self._no_scan_said = False

    def find_binary(self, name: str, env: Mapping[str, str]) -> str:
        """Return the path of ``name`` on ``env``'s PATH (or ``name`` itself if it has a directory).

        Raises:
            CliNotFoundError: Nothing executable by that name is there.
        """
        found = shutil.which(name, path=env.get("PATH", os.defpath))
        if found is None:
            raise CliNotFoundError(name)
        return found

    def check_binary(self, path: str, env: Mapping[str, str], *, timeout: float) -> None:
        """Run ``path --version`` through :meth:`run` (stdin a pipe) and require exit 0.

        A check that passed is remembered for the life of the Python process under the
        file's identity (path, inode, size, modification time, and the env; see
        :mod:`~agentshim.execution.checked_binaries`): checking the same unchanged binary
        again returns at once. A failed check is never remembered.

        Raises:
            CliCheckError: It could not start, timed out, or exited nonzero.
            InvalidRequestError: ``timeout`` is not a finite number of seconds above zero.
        """
        checked_timeout(timeout, "check_binary")
        identity = BinaryIdentity.of(path, env)
        if identity is not None and CHECKED_BINARIES.passed(identity):
            return
        check_version(self, path, env, timeout=timeout)
        if identity is not None:
            CHECKED_BINARIES.remember(identity)

    def run(self, request: CommandRequest, sink: CommandStreamSink) -> CommandResult:
        """Run ``request`` to completion on the calling thread, streaming lines to ``sink``.

        The sink gets the handle first, then every line in order. When the process exits but
        something it started keeps its output pipes open, output is read for the drain period
        and then the group is killed. Nothing outlives the call: the process is always
        reaped and every descriptor closed, whether the run succeeded or not, and on Linux
        every process that carries the run's marker (everything the command started, in its
        group or not) is ended (SIGTERM, ``terminate_grace``, SIGKILL) before ``run``
        returns or raises; with ``reap_on_success=False``, not after a run that exited 0.

        Raises:
            CliTimeoutError: ``request.timeout`` passed; the process group was killed after
                the lines printed so far were delivered.
            LineTooLongError: A line grew past ``max_line_bytes``; the process group was
                killed after the lines before it (on that stream) were delivered.
            InvalidRequestError: The request cannot reach a process (a NUL byte in argv,
                env or cwd, or ``=`` in a variable's name); nothing was started.
            CliNotFoundError: The program does not exist or is not executable.
            AgentShimError: The working directory is unusable.
        """
        run_id = self._run_id()
        env = request.env if run_id is None else {**request.env, RUN_MARKER: run_id}
        child = ChildProcess.start(request.argv, request.cwd, env)
        try:
            streams = self._streams(child)
        except BaseException:
            child.abandon()
            self._reap(run_id)
            raise
        handle = HostCommandHandle(child, streams, self._grace)
        succeeded = False
        try:
            result = self._drive(request, sink, child, streams, handle)
            succeeded = result.returncode == 0 and not handle.stopped
            return result
        except BaseException:
            child.kill_group()
            raise
        finally:
            streams.close()
            child.close_stdin()
            if not child.reaped:
                child.kill_group()
                child.reap()
            child.close_pidfd()
            if self._reap_success or not succeeded:
                self._reap(run_id)

    def spawn(self, request: SpawnRequest) -> HostProcess:
        """Start a long-lived process in its own session; see :class:`HostProcess`.

        On Linux the process carries a run marker of its own, so once it has ended, whatever
        it started is ended too (its tool shells, which leave its process group).
        """
        run_id = self._run_id()
        if run_id is not None:
            request = dataclasses.replace(request, env={**request.env, RUN_MARKER: run_id})
        return HostProcess.start(
            request,
            drain_timeout=self._drain,
            terminate_grace=self._grace,
            max_line_bytes=self._max_line,
            use_threads=self._threads,
            on_exit=None if run_id is None else functools.partial(self._reap, run_id),
        )

    def spawn_pty(self, request: SpawnRequest, size: PtySize | None = None) -> PtyProcess:
        """Start a long-lived process on a pseudo-terminal of its own; see :class:`PtyProcess`.

        It carries a run marker as :meth:`spawn`'s processes do, so whatever it started
        outside its process group is ended once it has ended.
        """
        run_id = self._run_id()
        if run_id is not None:
            request = dataclasses.replace(request, env={**request.env, RUN_MARKER: run_id})
        return PtyProcess.start(
            request,
            size=size,
            on_exit=None if run_id is None else functools.partial(self._reap, run_id),
        )

    def _run_id(self) -> str | None:
        if can_scan():
            return new_run_id()
        if not self._no_scan_said:
            self._no_scan_said = True
            logging.getLogger(__name__).warning(
                "agentshim: processes cannot be found by their run marker here (no /proc, or "
                "pidfd_open is unavailable), so only a command's own process group is ended "
                "when a run ends; a process that left the group (setsid) may outlive the run"
            )
        return None

    def _reap(self, run_id: str | None) -> None:
        if run_id is None:
            return
        _, left = reap_marked(run_id, self._grace)
        if left:
            logging.getLogger(__name__).warning(
                "agentshim: %d process(es) of a finished run could not be ended "
                "(still forking, or not ours to signal); look for %s=%s in their environment",
                left,
                RUN_MARKER,
                run_id,
            )

    def _streams(self, child: ChildProcess) -> Streams:
        if self._threads:
            return ThreadStreams(child)
        return SelectorStreams(child)

    def _drive(
        self,
        request: CommandRequest,
        sink: CommandStreamSink,
        child: ChildProcess,
        streams: Streams,
        handle: HostCommandHandle,
    ) -> CommandResult:
        monotonic = time.monotonic
        deadline = None if request.timeout is None else monotonic() + request.timeout
        if request.stdin:
            streams.feed_stdin(request.stdin.encode("utf-8", "replace"))
        else:
            child.close_stdin()
        sink.started(handle)
        side: SideChannel | None = getattr(sink, "side_channel", None)
        side_polled = side is not None and not streams.watch(side.fileno())

        out = _Output(self._max_line, self._tail, sink.stdout)
        err = _Output(self._max_line, self._tail, sink.stderr)
        poll_exit = streams.polls_for_exit
        drain_until: float | None = None
        timed_out = False
        idle = request.idle_timeout
        heard = monotonic()
        stalled = False
        code: int | None = None

        while code is None or streams.open_streams:
            kill_at = handle.kill_at
            if code is None:
                # Still running: wake for the timeout, a terminate's grace, or an exit poll.
                now = monotonic()
                wait = None if deadline is None or timed_out else deadline - now
                if idle is not None and not (stalled or timed_out):
                    wait = sooner(wait, heard + idle - now)
                if kill_at is not None:
                    wait = sooner(wait, kill_at - now)
                if poll_exit:
                    wait = sooner(wait, _EXIT_POLL)
                if side_polled:
                    wait = sooner(wait, _SIDE_POLL)
            else:
                # Exited, but the pipes are still open: wake when the drain period ends.
                assert drain_until is not None
                wait = drain_until - monotonic()
            if wait is not None and wait < 0:
                wait = 0

            tag = OUT
            side_due = side_polled
            try:
                for tag, data in streams.poll(wait):
                    heard = monotonic()
                    if tag == SIDE:
                        side_due = True
                        continue
                    (out if tag == OUT else err).take(data)
            except LineOverflow as overflow:
                # Kill first: the lines before the long one may take the sink a while.
                child.kill_group()
                emit = out.emit if tag == OUT else err.emit
                for line in split_lines(overflow.text) if overflow.text else ():
                    emit(line)
                raise LineTooLongError(
                    self._max_line,
                    message=(
                        f"a {'stdout' if tag == OUT else 'stderr'} line of "
                        f"{request.argv[0]!r} grew past {self._max_line} bytes, so its "
                        "process group was killed; raise HostCommandExecutor(max_line_bytes=...) "
                        "if the program legitimately prints lines that long"
                    ),
                ) from None

            if side_due and side is not None and side.ready():
                # A tool call is the CLI at work: the time the function took is not silence.
                heard = monotonic()
            if code is None and (poll_exit or streams.exit_hint):
                code = child.poll_exit()
                if code is not None:
                    drain_until = monotonic() + self._drain
            now = monotonic()
            if code is None and deadline is not None and not timed_out and now >= deadline:
                timed_out = True
                child.kill_group()
            stale = idle is not None and now - heard >= idle
            if code is None and stale and not (stalled or timed_out):
                stalled = True
                child.kill_group()
            if code is None and kill_at is not None and now >= kill_at:
                handle.kill_at = None
                handle.kill()
            if drain_until is not None and now >= drain_until and streams.open_streams:
                # The child is gone but something it started holds the pipes: stop waiting,
                # and kill the group while the unreaped leader still reserves its id.
                child.kill_group()
                streams.stop_reading()
                out.take(b"")
                err.take(b"")

        returncode = child.reap()
        if timed_out:
            raise CliTimeoutError(request.argv, request.timeout)
        if stalled:
            raise TurnStalledError(idle)
        return CommandResult(returncode, out.tail.text(), err.tail.text())


class _Output:
    """One output stream of a run: its lines go to ``emit`` as they complete, its end is kept."""

    __slots__ = ("emit", "lines", "tail")

    def __init__(self, max_line: int, tail: int, emit: Callable[[str], None]) -> None:
        self.lines = LineAssembler(max_line)
        self.tail = OutputTail(tail)
        self.emit = emit

    def take(self, data: bytes) -> None:
        """Emit the lines ``data`` completes; empty ``data`` is the end: emit what is left.

        Raises:
            LineOverflow: a line grew past the limit.
        """
        text = self.lines.feed(data) if data else self.lines.finish()
        if not text:
            return
        self.tail.add(text)
        if data:
            for line in split_lines(text):
                self.emit(line)
        else:
            self.emit(text)


class HostCommandHandle(GroupStop):
    """Stops one host run; every method is safe from any thread at any time.

    Signals go to the whole process group and never after the process has been reaped;
    ``terminate`` gives the group the executor's ``terminate_grace`` before the run kills it.
    """

    __slots__ = ()

    @property
    def pid(self) -> int:
        """The command's process id (on POSIX also its process group and session id)."""
        return self._child.pid
