"""PtyProcess: a long-lived process on a pseudo-terminal of its own, in its own process group.

For programs that only run interactively (a full-screen TUI): stdin, stdout and stderr are
the terminal's slave side, which is also the process's controlling terminal; the caller
holds the master side, writes keystrokes to it and reads the raw bytes the program draws.
POSIX only (``os.openpty``). Like :class:`~agentshim.execution.HostProcess`, no helper thread
exists: whichever thread calls :meth:`PtyProcess.read` or :meth:`PtyProcess.wait` waits on
the master and on the process's exit itself, and :meth:`PtyProcess.wake` ends such a wait
from another thread.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

from agentshim.core.errors import ProcessClosedError, ProviderCapabilityError

from ._child import exit_status, open_pidfd, start_error
from ._deadline import Deadline
from ._validate import check_start
from .process import SpawnRequest

if sys.platform != "win32":
    import fcntl
    import struct
    import termios

__all__ = ["PtyExecutor", "PtyProcess", "PtySize"]

# Without a pidfd the process's exit is noticed by polling this often.
_EXIT_POLL = 0.05
_CHUNK = 1 << 16
# How long output is still read after the program exited, while something else draws.
_DRAIN = 1.0
# How many non-blocking reads a wait(0) does at most before it answers.
_LOOKS = 64


class PtySize:
    """A terminal's size in character cells (rows by columns)."""

    __slots__ = ("columns", "rows")

    def __init__(self, rows: int = 45, columns: int = 160) -> None:
        self.rows = rows
        self.columns = columns


@runtime_checkable
class PtyExecutor(Protocol):
    """An executor that can also start a process on a terminal of its own."""

    def spawn_pty(self, request: SpawnRequest, size: PtySize | None = None) -> PtyProcess:
        """Start ``request`` on a new pseudo-terminal; see :class:`PtyProcess`."""
        ...


def _controlling_terminal() -> None:
    # Runs in the child after setsid(): the terminal on stdin becomes its controlling one,
    # so the program sees a real interactive session (job control, window size).
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class PtyProcess:
    """A process started on a pseudo-terminal; every method is safe from any thread.

    :meth:`read` returns the bytes the program drew, as they come (no line framing).
    When the process has exited and everything it drew has been read, the rest of its
    process group is killed, it is reaped, the terminal is closed, ``on_exit`` runs, and
    :attr:`returncode` is set; :meth:`read` then returns None at once.
    """

    def __init__(
        self, popen: subprocess.Popen[bytes], master: int, on_exit: Callable[[], None] | None
    ) -> None:
        self._popen = popen
        self._master: int | None = master
        self._on_exit = on_exit
        self._read_lock = threading.Lock()
        self._write_lock = threading.Lock()
        self._signal_lock = threading.Lock()
        self._wake_lock = threading.Lock()
        self._wake_r, self._wake_w = os.pipe()
        os.set_blocking(self._wake_r, False)
        os.set_blocking(self._wake_w, False)
        self._exited_at: float | None = None
        self._returncode: int | None = None
        self._reaped = False
        self._pidfd = open_pidfd(popen.pid)
        self._watched: int | None = None

    @classmethod
    def start(
        cls,
        request: SpawnRequest,
        *,
        size: PtySize | None = None,
        on_exit: Callable[[], None] | None = None,
    ) -> PtyProcess:
        """Start ``request`` in a new session on a new pseudo-terminal of ``size``.

        Raises:
            ProviderCapabilityError: not on POSIX.
            InvalidRequestError: the request cannot reach a process (a NUL byte, ...).
            CliNotFoundError: the program does not exist or is not executable.
            AgentShimError: the working directory is unusable.
        """
        if sys.platform == "win32":
            raise ProviderCapabilityError(
                "a process on a pseudo-terminal needs POSIX; use a pipe-based transport here"
            )
        check_start(request.argv, request.cwd, request.env)
        shape = size or PtySize()
        master, slave = os.openpty()
        fcntl.ioctl(
            master, termios.TIOCSWINSZ, struct.pack("HHHH", shape.rows, shape.columns, 0, 0)
        )
        try:
            popen = subprocess.Popen(
                list(request.argv),
                stdin=slave,
                stdout=slave,
                stderr=slave,
                cwd=request.cwd,
                env=dict(request.env),
                close_fds=True,
                start_new_session=True,
                preexec_fn=_controlling_terminal,
            )
        except OSError as exc:
            os.close(master)
            raise start_error(exc, request.argv, request.cwd) from exc
        finally:
            os.close(slave)
        os.set_blocking(master, False)
        return cls(popen, master, on_exit)

    @property
    def pid(self) -> int:
        """The process id (also its process group id)."""
        return self._popen.pid

    @property
    def returncode(self) -> int | None:
        """The exit status once the process has ended and been cleaned up, else None."""
        return self._returncode if self._reaped else None

    def write(self, data: bytes) -> None:
        """Write ``data`` to the terminal (what the program reads as typed input).

        Raises:
            ProcessClosedError: the process has ended.
        """
        view = memoryview(data)
        with self._write_lock:
            while view:
                master = self._master
                if master is None or self._reaped:
                    raise ProcessClosedError(
                        "cannot write: the program on the terminal has exited; start a new one"
                    )
                try:
                    view = view[os.write(master, view) :]
                except BlockingIOError:
                    select.select([], [master], [], _EXIT_POLL)
                except OSError as exc:
                    raise ProcessClosedError(
                        f"cannot write to the terminal ({exc.strerror}); the program has "
                        "probably exited; start a new one"
                    ) from exc

    def read(self, timeout: float | None) -> bytes | None:
        """The next bytes the program drew; None after ``timeout``, on a wake, or once it ended."""
        deadline = Deadline(timeout)
        remaining = deadline.remaining()
        if not self._read_lock.acquire(timeout=-1 if remaining is None else remaining):
            return None
        try:
            return self._read_locked(deadline)
        finally:
            self._read_lock.release()

    def watch(self, fd: int | None) -> None:
        """Also wait on ``fd`` (None: no more): :meth:`read` returns None while it is readable.

        For a signal the caller gets beside the terminal (a hook that ran), so the reader
        wakes when it comes and at no other time; the caller drains ``fd`` itself.
        """
        self._watched = fd

    def wake(self) -> None:
        """End a :meth:`read` blocked on another thread now (it returns None)."""
        with self._wake_lock:
            if self._wake_w >= 0:
                with contextlib.suppress(BlockingIOError, OSError):
                    os.write(self._wake_w, b"x")

    def terminate(self) -> None:
        """SIGTERM the process group; idempotent."""
        self._signal(signal.SIGTERM)

    def kill(self) -> None:
        """SIGKILL the process group now; idempotent."""
        self._signal(signal.SIGKILL)

    def wait(self, timeout: float | None) -> int | None:
        """Wait until the process has ended (reading and dropping what it draws); its status.

        Returns None if that takes longer than ``timeout`` seconds. ``wait(0)`` does not
        block but still looks: it notices an exit that happened while nobody read (and reads
        nothing of a program still running).
        """
        deadline = Deadline(timeout)
        looked = False
        while not self._reaped:
            remaining = deadline.remaining()
            if remaining == 0:
                if looked or not self._leader_exited():
                    return None  # still running: what it drew stays for the next read
                looked = True
                # Bounded, so a program that draws without pause cannot hold the caller.
                for _ in range(_LOOKS):
                    if self.read(0.0) is None:
                        break
                continue
            self.read(remaining)
        return self._returncode

    def close(self) -> None:
        """Kill the process group and clean up; idempotent."""
        if not self._reaped:
            self.kill()
            self.wait(None)

    # -- internals -------------------------------------------------------------------------

    def _signal(self, signum: int) -> None:
        # Under the lock the reaping takes: once reaped, the group id may belong to another.
        with self._signal_lock:
            if not self._reaped:
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    os.killpg(self._popen.pid, signum)
        self.wake()

    def _read_locked(self, deadline: Deadline) -> bytes | None:
        while True:
            if self._reaped:
                return None
            master = self._master
            assert master is not None
            if self._exited_at is None and self._leader_exited():
                self._exited_at = time.monotonic()
            if self._exited_at is not None:
                data = _read_now(master)
                # Bounded: what the program left holding the terminal must not keep it open.
                if data and time.monotonic() - self._exited_at < _DRAIN:
                    return data
                self._finish()
                return None
            waits = [master, self._wake_r]
            if self._pidfd is not None:
                waits.append(self._pidfd)
            watched = self._watched
            if watched is not None:
                waits.append(watched)
            wait = deadline.remaining()
            if self._pidfd is None:
                wait = _EXIT_POLL if wait is None else min(wait, _EXIT_POLL)
            try:
                ready, _, _ = select.select(waits, [], [], wait)
            except InterruptedError:
                ready = []
            if self._wake_r >= 0 and self._wake_r in ready:
                with contextlib.suppress(BlockingIOError, OSError):
                    os.read(self._wake_r, 4096)
                return None
            if watched is not None and watched in ready and master not in ready:
                return None
            if master in ready:
                data = _read_now(master)
                if data:
                    return data
                if data is None:  # EIO: nothing holds the terminal's other side any more
                    self._leader_exited(block=True)
                    self._exited_at = time.monotonic()
                    continue
            if deadline.passed():
                return None

    def _leader_exited(self, *, block: bool = False) -> bool:
        flags = os.WEXITED | os.WNOWAIT | (0 if block else os.WNOHANG)
        try:
            info = os.waitid(os.P_PID, self._popen.pid, flags)
        except ChildProcessError:
            return True
        if info is None:
            return False
        self._returncode = exit_status(info)
        return True

    def _finish(self) -> None:
        with self._signal_lock:
            # What the program left in its group (a hook, a tool) ends with it.
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(self._popen.pid, signal.SIGKILL)
            code = self._popen.wait()
            if self._returncode is None:
                self._returncode = code
            self._reaped = True
        for fd in (self._master, self._pidfd):
            if fd is not None:
                with contextlib.suppress(OSError):
                    os.close(fd)
        self._master = self._pidfd = None
        with self._wake_lock:
            for fd in (self._wake_r, self._wake_w):
                with contextlib.suppress(OSError):
                    os.close(fd)
            self._wake_r = self._wake_w = -1
        on_exit, self._on_exit = self._on_exit, None
        if on_exit is not None:
            on_exit()


def _read_now(master: int) -> bytes | None:
    """What the master holds now: bytes, b"" when nothing is there, None at EIO (closed)."""
    try:
        return os.read(master, _CHUNK)
    except BlockingIOError:
        return b""
    except OSError:
        return None
