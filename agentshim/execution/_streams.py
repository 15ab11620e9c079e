"""Moving bytes between the caller and a child's pipes: a selector, or reader threads.

Private to the execution package. :class:`SelectorStreams` is the POSIX implementation: the
calling thread waits on non-blocking pipes with :mod:`selectors` and does every read and
write itself, so no helper thread exists. :class:`ThreadStreams` is the fallback for
platforms whose selectors cannot wait on pipes (Windows): one thread per pipe moves bytes
through a queue, and the caller sees exactly the same interface.

Both report stream chunks as ``(tag, data)`` pairs, with ``b""`` meaning end of stream.
"""

from __future__ import annotations

import os
import queue
import selectors
import threading
from typing import Protocol

from ._child import ChildProcess

__all__ = ["ERR", "OUT", "SIDE", "SelectorStreams", "Streams", "ThreadStreams"]

OUT = 1
"""Tag of a stdout chunk."""
ERR = 2
"""Tag of a stderr chunk."""
SIDE = 7
"""Tag of a readiness report of a watched side channel (its data is always ``b""``)."""
_STDIN = 3
_WAKE = 4
_PIDFD = 5
_STDIN_READY = 6

# Read size: large enough that a fast producer costs few system calls per megabyte.
CHUNK = 1 << 18
# Write size for stdin: a pipe takes at most its capacity per call anyway.
_WRITE_CHUNK = 1 << 16
# How long closing waits for a stdin writer thread whose child was just killed.
_WRITER_JOIN = 2.0

# The longest single wait handed to the OS. epoll and poll take whole milliseconds in a C int
# (about 24.8 days); a longer timeout (a caller's 30-day turn) would overflow, so a wait is
# cut to this and the caller's loop, which checks its own deadline, waits again.
_LONGEST_WAIT = 1_000_000.0


def _bounded(timeout: float | None) -> float | None:
    return timeout if timeout is None or timeout <= _LONGEST_WAIT else _LONGEST_WAIT


class Streams(Protocol):
    """What the run loop and HostProcess need from the I/O layer."""

    @property
    def open_streams(self) -> int:
        """How many of stdout and stderr have not reached end of stream."""
        ...

    @property
    def exit_hint(self) -> bool:
        """Whether the child may have exited since the last poll (reset by :meth:`poll`)."""
        ...

    @property
    def polls_for_exit(self) -> bool:
        """Whether exit is only noticed by polling, so waits must be kept short."""
        ...

    def feed_stdin(self, data: bytes) -> None:
        """Write ``data`` to stdin in the background of :meth:`poll`, then close stdin."""
        ...

    def poll(self, timeout: float | None) -> list[tuple[int, bytes]]:
        """Wait up to ``timeout`` for output, an exit hint or a wake-up; return the chunks."""
        ...

    def watch(self, fd: int) -> bool:
        """Also wait on ``fd``, reported as a ``(SIDE, b"")`` chunk; False if it cannot."""
        ...

    def wake(self) -> None:
        """Make a blocked :meth:`poll` return; safe from any thread, also after close."""
        ...

    def stop_reading(self) -> None:
        """Give up on stdout and stderr: they count as closed from now on."""
        ...

    def wait_stdin_writable(self, timeout: float | None) -> list[tuple[int, bytes]]:
        """Wait until stdin can take bytes (or ``timeout``), reading output meanwhile."""
        ...

    def close(self) -> None:
        """Release what the streams hold and close stdout and stderr once nothing reads them."""
        ...


class SelectorStreams:
    """Non-blocking pipes multiplexed on the calling thread; POSIX only."""

    def __init__(self, child: ChildProcess) -> None:
        self._child = child
        self._selector = selectors.DefaultSelector()
        self._lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        self._wake_open = True
        self._stdin_data = memoryview(b"")
        self.open_streams = 0
        """How many of stdout and stderr have not reached end of stream."""
        self.exit_hint = False
        """Whether the pidfd reported an exit during the last poll."""
        try:
            for fd in (self._wake_r, self._wake_w):
                os.set_blocking(fd, False)
            self._selector.register(self._wake_r, selectors.EVENT_READ, _WAKE)
            for fd, tag in ((child.stdout_fd, OUT), (child.stderr_fd, ERR)):
                os.set_blocking(fd, False)
                self._selector.register(fd, selectors.EVENT_READ, tag)
                self.open_streams += 1
            if child.pidfd is not None:
                self._selector.register(child.pidfd, selectors.EVENT_READ, _PIDFD)
            if child.stdin_fd is not None:
                os.set_blocking(child.stdin_fd, False)
        except BaseException:
            self.close()
            raise

    @property
    def polls_for_exit(self) -> bool:
        """True when no pidfd is available (not Linux, or an old kernel)."""
        return self._child.pidfd is None

    def feed_stdin(self, data: bytes) -> None:
        """Write ``data`` to stdin whenever the pipe has room, then close it."""
        stdin_fd = self._child.stdin_fd
        if stdin_fd is None:
            return
        if not data:
            self._child.close_stdin()
            return
        self._stdin_data = memoryview(data)
        self._selector.register(stdin_fd, selectors.EVENT_WRITE, _STDIN)

    def watch(self, fd: int) -> bool:
        """Also wait on ``fd``; a readable one is reported as ``(SIDE, b"")``."""
        self._selector.register(fd, selectors.EVENT_READ, SIDE)
        return True

    def poll(self, timeout: float | None) -> list[tuple[int, bytes]]:
        """Wait up to ``timeout`` and do every read and write that became possible."""
        self.exit_hint = False
        chunks: list[tuple[int, bytes]] = []
        for key, _ in self._selector.select(_bounded(timeout)):
            tag: int = key.data
            if tag in (OUT, ERR):
                fd = key.fd
                try:
                    data = os.read(fd, CHUNK)
                except BlockingIOError:
                    continue
                if not data:
                    self._selector.unregister(fd)
                    self.open_streams -= 1
                chunks.append((tag, data))
            elif tag == _STDIN:
                self._write_stdin()
            elif tag == _PIDFD:
                self.exit_hint = True
                # A pidfd stays readable after exit; stop watching it or every poll spins.
                self._selector.unregister(key.fd)
            elif tag == _WAKE:
                self._drain_wake()
            elif tag == SIDE:
                chunks.append((SIDE, b""))
        return chunks

    def _write_stdin(self) -> None:
        stdin_fd = self._child.stdin_fd
        assert stdin_fd is not None
        try:
            written = os.write(stdin_fd, self._stdin_data[:_WRITE_CHUNK])
        except BlockingIOError:
            return
        except (BrokenPipeError, ConnectionResetError):
            written = len(self._stdin_data)  # the child stopped reading; the rest is moot
        self._stdin_data = self._stdin_data[written:]
        if not self._stdin_data:
            self._selector.unregister(stdin_fd)
            self._child.close_stdin()

    def _drain_wake(self) -> None:
        try:
            while os.read(self._wake_r, 4096):
                pass
        except BlockingIOError:
            pass

    def wake(self) -> None:
        """Write a byte to the wake-up pipe (unless it is closed)."""
        with self._lock:
            if not self._wake_open:
                return
            try:
                os.write(self._wake_w, b"\0")
            except BlockingIOError:
                pass  # the pipe is full, so a wake-up is already pending

    def stop_reading(self) -> None:
        """Unregister stdout and stderr."""
        for fd in (self._child.stdout_fd, self._child.stderr_fd):
            try:
                self._selector.unregister(fd)
            except KeyError:
                continue
        self.open_streams = 0

    def wait_stdin_writable(self, timeout: float | None) -> list[tuple[int, bytes]]:
        """Wait until stdin can take bytes (or ``timeout``), reading output meanwhile."""
        stdin_fd = self._child.stdin_fd
        if stdin_fd is None:
            return []
        self._selector.register(stdin_fd, selectors.EVENT_WRITE, _STDIN_READY)
        try:
            return self.poll(timeout)
        finally:
            self._selector.unregister(stdin_fd)

    def close(self) -> None:
        """Close the selector, the wake-up pipe, and the child's stdout and stderr."""
        with self._lock:
            if not self._wake_open:
                return
            self._wake_open = False
            os.close(self._wake_r)
            os.close(self._wake_w)
        self._selector.close()
        self._child.close_outputs()


class ThreadStreams:
    """One thread per pipe feeding a queue; the fallback where selectors cannot wait on pipes.

    The reader threads own stdout and stderr and close them at end of stream, so a pipe that
    something else keeps open past :meth:`stop_reading` never has its descriptor closed under
    a blocked read.
    """

    def __init__(self, child: ChildProcess) -> None:
        self._child = child
        self._queue: queue.SimpleQueue[tuple[int, bytes]] = queue.SimpleQueue()
        self.open_streams = 2
        """How many of stdout and stderr have not reached end of stream."""
        self._reading = True
        self._writer: threading.Thread | None = None
        for tag in (OUT, ERR):
            threading.Thread(
                target=self._read, args=(tag,), name=f"agentshim-pipe-{tag}", daemon=True
            ).start()

    # No pidfd here: exit is only ever found by polling.
    exit_hint = False
    polls_for_exit = True

    def _read(self, tag: int) -> None:
        fd = self._child.stdout_fd if tag == OUT else self._child.stderr_fd
        try:
            while True:
                data = os.read(fd, CHUNK)
                self._queue.put((tag, data))
                if not data:
                    return
        except OSError:
            self._queue.put((tag, b""))
        finally:
            self._child.close_output(tag == OUT)

    def feed_stdin(self, data: bytes) -> None:
        """Write ``data`` from a thread, then close stdin."""
        self._writer = threading.Thread(
            target=self._write, args=(data,), name="agentshim-stdin", daemon=True
        )
        self._writer.start()

    def _write(self, data: bytes) -> None:
        stdin_fd = self._child.stdin_fd
        view = memoryview(data)
        try:
            while view and stdin_fd is not None:
                view = view[os.write(stdin_fd, view[:_WRITE_CHUNK]) :]
        except OSError:
            pass  # the child stopped reading or is gone; the rest is moot
        finally:
            self._child.close_stdin()

    def watch(self, fd: int) -> bool:
        """Threads cannot wait on another descriptor here: the caller polls it instead."""
        del fd
        return False

    def poll(self, timeout: float | None) -> list[tuple[int, bytes]]:
        """Wait up to ``timeout`` for the first queued item, then take all that are queued."""
        try:
            items = [self._queue.get(timeout=_bounded(timeout))]
        except queue.Empty:
            return []
        while True:
            try:
                items.append(self._queue.get_nowait())
            except queue.Empty:
                break
        chunks: list[tuple[int, bytes]] = []
        for tag, data in items:
            if tag == _WAKE or not self._reading:
                continue
            if not data:
                self.open_streams -= 1
            chunks.append((tag, data))
        return chunks

    def wake(self) -> None:
        """Queue a wake-up item."""
        self._queue.put((_WAKE, b""))

    def stop_reading(self) -> None:
        """Ignore stdout and stderr from now on; the reader threads end with the pipes."""
        self._reading = False
        self.open_streams = 0

    def wait_stdin_writable(self, timeout: float | None) -> list[tuple[int, bytes]]:
        """Not needed with threads (writes block and readers drain); polls output instead."""
        return self.poll(timeout)

    def close(self) -> None:
        """Stop listening; the reader threads close their pipes when those reach their end.

        A stdin writer is given a moment to notice the child is gone, so stdin is never
        closed under a write in progress.
        """
        self._reading = False
        if self._writer is not None:
            self._writer.join(_WRITER_JOIN)
