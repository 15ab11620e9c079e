"""HostProcess: a long-lived process on the host, written to and read from by the caller.

Like a host run, it uses no helper threads on POSIX. Whichever thread calls
:meth:`HostProcess.next_output` or :meth:`HostProcess.wait` reads the pipes itself (with a
selector, blocking at most the timeout it was given) and queues the lines it finds; a write
that finds stdin full keeps reading output while it waits, so a child blocked on a full
stdout can never deadlock a single-threaded caller.
"""

from __future__ import annotations

import os
import select
import sys
import threading
import time
from collections import deque
from collections.abc import Callable

from agentshim.core.errors import LineTooLongError, ProcessClosedError
from agentshim.core.stream import DEFAULT_MAX_LINE_BYTES

from ._child import ChildProcess
from ._deadline import Deadline
from ._lines import LineAssembler, LineOverflow, split_lines
from ._stop import GroupStop, sooner
from ._streams import ERR, OUT, SIDE, SelectorStreams, Streams, ThreadStreams
from .process import ProcessExited, ProcessOutput, SpawnRequest, StderrLine, StdoutLine

__all__ = ["HostProcess"]

_EXIT_POLL = 0.05
# A write waiting for room in stdin re-checks whether the process is gone this often.
_WRITE_RECHECK = 0.1
# How many non-blocking reads a wait(0) does at most before it answers.
_LOOKS = 64


class HostProcess:
    """A process started by :meth:`HostCommandExecutor.spawn`; every method is thread-safe.

    The process leads its own process group; ``terminate`` and ``kill`` signal the group, and
    the SIGKILL that follows an unanswered ``terminate`` is sent by the next ``next_output``
    or ``wait`` that runs after the grace (call ``wait`` to be sure it happens).
    When the process has exited and its output is exhausted (or something it started held
    the pipes past the drain period, in which case the group is killed), it is reaped, every
    descriptor is closed and ``on_exit`` runs (the executor ends there whatever the process
    started outside its group); :class:`ProcessExited` is then returned after the last line.
    Output read by ``wait`` or a blocked ``write`` stays queued for ``next_output``.

    A line longer than ``max_line_bytes`` (bytes before its newline) is never buffered: the
    process group is killed at once, and ``next_output`` raises
    :class:`~agentshim.core.errors.LineTooLongError` where that line would have come (after
    every line before it); nothing after it on that stream is returned, and later calls go
    on with what is left of the other stream and then :class:`ProcessExited`.
    """

    def __init__(
        self,
        child: ChildProcess,
        streams: Streams,
        *,
        drain_timeout: float,
        terminate_grace: float,
        max_line_bytes: int,
        on_exit: Callable[[], None] | None,
    ) -> None:
        # Built only by start(), which holds the defaults and passes every setting.
        self._child = child
        self._on_exit = on_exit
        self._streams = streams
        self._drain = drain_timeout
        self._stop = GroupStop(child, streams, terminate_grace)
        self._read_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._queue: deque[ProcessOutput | _Overflowed] = deque()
        self._max_line = max_line_bytes
        self._out = LineAssembler(max_line_bytes)
        self._err = LineAssembler(max_line_bytes)
        self._drain_until: float | None = None
        self._stdin_closed = False
        self._exit: ProcessExited | None = None
        self._woken = threading.Event()
        self._side_ready = False

    @classmethod
    def start(
        cls,
        request: SpawnRequest,
        *,
        drain_timeout: float,
        terminate_grace: float,
        use_threads: bool,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
        on_exit: Callable[[], None] | None = None,
    ) -> HostProcess:
        """Start ``request`` in its own session with all three streams piped.

        Raises:
            InvalidRequestError: The request cannot reach a process (a NUL byte in argv,
                env or cwd, or ``=`` in a variable's name); nothing was started.
            CliNotFoundError: The program does not exist or is not executable.
            AgentShimError: The working directory is unusable.
        """
        child = ChildProcess.start(request.argv, request.cwd, request.env)
        try:
            streams: Streams = ThreadStreams(child) if use_threads else SelectorStreams(child)
        except BaseException:
            child.abandon()
            if on_exit is not None:
                on_exit()
            raise
        return cls(
            child,
            streams,
            drain_timeout=drain_timeout,
            terminate_grace=terminate_grace,
            max_line_bytes=max_line_bytes,
            on_exit=on_exit,
        )

    @property
    def pid(self) -> int:
        """The process id (also its process group id on POSIX)."""
        return self._child.pid

    def write(self, data: str) -> None:
        """Write ``data`` as UTF-8; the bytes of one call are never interleaved with another's.

        Raises:
            ProcessClosedError: stdin was closed, or the process is gone.
        """
        payload = memoryview(data.encode("utf-8", "replace"))
        with self._write_lock:
            while True:
                fd = self._child.stdin_fd
                if self._stdin_closed or self._exit is not None or fd is None:
                    self._close_stdin_locked()
                    raise ProcessClosedError(
                        "cannot write: the process's stdin is closed or the process has "
                        "exited; start a new process"
                    )
                if not payload:
                    return
                try:
                    payload = payload[os.write(fd, payload) :]
                except BlockingIOError:
                    self._wait_writable(fd)
                except OSError as exc:
                    self._close_stdin_locked()
                    raise ProcessClosedError(
                        f"cannot write: the process stopped reading its stdin ({exc.strerror}); "
                        "it has probably exited; start a new process"
                    ) from exc

    def close_stdin(self) -> None:
        """Close stdin so the process reads end-of-file; idempotent."""
        with self._write_lock:
            self._stdin_closed = True
            self._close_stdin_locked()

    def next_output(self, timeout: float | None) -> ProcessOutput | None:
        """Return the next line, or :class:`ProcessExited` once all lines were returned.

        Blocks at most ``timeout`` seconds (``None``: until there is something), then
        returns ``None``.

        Raises:
            LineTooLongError: The next line was longer than ``max_line_bytes``; the process
                group has been killed. Raised once; the next call goes on after it.
        """
        deadline = Deadline(timeout)
        if not self._acquire_reader(timeout):
            return None
        try:
            while True:
                if self._queue:
                    output = self._queue.popleft()
                    if isinstance(output, _Overflowed):
                        raise output.error
                    return output
                if self._exit is not None:
                    return self._exit
                if self._woken.is_set():
                    self._woken.clear()
                    return None
                if self._side_ready:
                    self._side_ready = False
                    return None
                remaining = deadline.remaining()
                self._pump(remaining)
                if remaining == 0 and not self._queue:
                    return self._exit
        finally:
            self._read_lock.release()

    def watch(self, fd: int) -> bool:
        """Also wait on ``fd``: :meth:`next_output` returns ``None`` while it is readable.

        For something served beside the process on the reading thread (a turn's tools), so
        the reader wakes when it has work and at no other time. False where it cannot be
        waited on with the pipes (the caller must then look at it by itself).
        """
        try:
            return self._streams.watch(fd)
        except (OSError, ValueError, KeyError):
            return False  # the process has ended (its selector is closed), or fd is bad

    def wake(self) -> None:
        """Make a blocked :meth:`next_output` return now (``None`` if nothing came); thread-safe."""
        self._woken.set()
        self._streams.wake()

    def terminate(self) -> None:
        """SIGTERM the process group; it is killed if still there after the grace."""
        self._stop.terminate()

    def kill(self) -> None:
        """SIGKILL the process group now; idempotent."""
        self._stop.kill()

    def wait(self, timeout: float | None) -> int | None:
        """Wait until the process has exited and been cleaned up; return its exit status.

        Returns ``None`` if that takes longer than ``timeout`` seconds. Output read while
        waiting is kept for :meth:`next_output`. ``wait(0)`` does not block but still looks:
        it reads what the pipes already hold and notices an exit that happened meanwhile; a
        process that has exited counts as ended then, even if something it started still
        holds its pipes (the drain period is not waited for).
        """
        deadline = Deadline(timeout)
        looked = False
        while self._exit is None:
            remaining = deadline.remaining()
            if remaining == 0:
                if looked:
                    return None
                looked = True
                self._look()
                continue
            if not self._acquire_reader(remaining):
                return None
            try:
                if self._exit is None:
                    self._pump(remaining)
            finally:
                self._read_lock.release()
        return self._exit.returncode

    def close(self) -> None:
        """Kill the process group and clean up; idempotent. Queued lines stay readable."""
        if self._exit is None:
            self.kill()
            self.wait(None)

    def __enter__(self) -> HostProcess:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def _acquire_reader(self, timeout: float | None) -> bool:
        if timeout is None:
            return self._read_lock.acquire()
        return self._read_lock.acquire(timeout=max(timeout, 0.0))

    def _look(self) -> None:
        """Read what the pipes hold now, without blocking, and advance the exit state.

        Bounded, so a process that prints without pause cannot hold the caller.
        """
        if not self._read_lock.acquire(blocking=False):
            return  # another thread is reading; it notices the exit itself
        try:
            for _ in range(_LOOKS):
                if self._exit is not None or not self._pump(0.0):
                    break
            if self._exit is None and self._child.poll_exit() is not None:
                # The process is gone; what it left holding its pipes (outside its group,
                # say) is not waited for: stop reading now, as after a drain period.
                self._child.kill_group()
                self._streams.stop_reading()
                self._absorb([(OUT, b""), (ERR, b"")])
                self._finish()
        finally:
            self._read_lock.release()

    def _pump(self, timeout: float | None) -> bool:
        """Read for up to ``timeout`` and advance the exit state; the read lock is held.

        Returns whether anything was read (output, end of a stream).
        """
        wait = timeout
        now = time.monotonic()
        if self._child.returncode is None:
            kill_at = self._stop.kill_at
            if kill_at is not None:
                wait = sooner(wait, kill_at - now)
            if self._streams.polls_for_exit:
                wait = sooner(wait, _EXIT_POLL)
        elif self._drain_until is not None:
            wait = sooner(wait, self._drain_until - now)
        chunks = self._streams.poll(None if wait is None else max(wait, 0.0))
        self._absorb(chunks)
        self._advance()
        return any(tag != SIDE for tag, _ in chunks) or self._streams.exit_hint

    def _absorb(self, chunks: list[tuple[int, bytes]]) -> None:
        queue = self._queue
        for tag, data in chunks:
            if tag == SIDE:
                self._side_ready = True
                continue
            assembler, kind = (self._out, StdoutLine) if tag == OUT else (self._err, StderrLine)
            if data:
                try:
                    text = assembler.feed(data)
                except LineOverflow as overflow:
                    self._overflowed(tag, overflow.text)
                    continue
                if text:
                    queue.extend(map(kind, split_lines(text)))
            else:
                text = assembler.finish()
                if text:
                    queue.append(kind(text))

    def _overflowed(self, tag: int, text: str) -> None:
        """Queue the lines before a too-long line and the error for it; kill the group."""
        self._child.kill_group()
        kind, stream = (StdoutLine, "stdout") if tag == OUT else (StderrLine, "stderr")
        if text:
            self._queue.extend(map(kind, split_lines(text)))
        error = LineTooLongError(
            self._max_line,
            message=(
                f"a {stream} line of process {self._child.pid} grew past {self._max_line} "
                "bytes, so its process group was killed; raise "
                "HostCommandExecutor(max_line_bytes=...) if the program legitimately prints "
                "lines that long"
            ),
        )
        self._queue.append(_Overflowed(error))

    def _advance(self) -> None:
        child, streams = self._child, self._streams
        code = child.returncode
        if code is None and (streams.polls_for_exit or streams.exit_hint):
            code = child.poll_exit()
            if code is not None:
                self._drain_until = time.monotonic() + self._drain
        now = time.monotonic()
        if code is None:
            kill_at = self._stop.kill_at
            if kill_at is not None and now >= kill_at:
                self._stop.kill_at = None
                child.kill_group()
            return
        if streams.open_streams:
            assert self._drain_until is not None
            if now < self._drain_until:
                return
            # Something the process started holds its pipes: kill the group while the
            # unreaped leader still reserves the group id, and stop reading.
            child.kill_group()
            streams.stop_reading()
            self._absorb([(OUT, b""), (ERR, b"")])
        self._finish()

    def _finish(self) -> None:
        code = self._child.reap()
        self._streams.close()
        self._child.close_pidfd()
        if self._write_lock.acquire(blocking=False):
            # Otherwise a writer holds stdin; it sees the exit and closes stdin itself.
            try:
                self._close_stdin_locked()
            finally:
                self._write_lock.release()
        on_exit, self._on_exit = self._on_exit, None
        if on_exit is not None:
            on_exit()
        self._exit = ProcessExited(code)

    def _close_stdin_locked(self) -> None:
        self._child.close_stdin()

    def _wait_writable(self, fd: int) -> None:
        """Wait for room in stdin, reading output meanwhile when no one else is reading."""
        if self._read_lock.acquire(blocking=False):
            try:
                if self._exit is None:
                    self._absorb(self._streams.wait_stdin_writable(_WRITE_RECHECK))
                    self._advance()
            finally:
                self._read_lock.release()
            return
        # Another thread is reading the output, so the child cannot block on it.
        if sys.platform == "win32":
            time.sleep(_WRITE_RECHECK)
            return
        poller = select.poll()
        poller.register(fd, select.POLLOUT)
        poller.poll(_WRITE_RECHECK * 1000)


class _Overflowed:
    """Stands in the output queue where a too-long line would have been."""

    __slots__ = ("error",)

    def __init__(self, error: LineTooLongError) -> None:
        self.error = error
