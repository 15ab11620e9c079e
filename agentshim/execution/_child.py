"""A child process in its own process group, signalled and reaped without pid-reuse races.

Private to the execution package. The rule that makes signalling safe: the group leader is
never reaped while anything may still signal its group. Exit is detected with
``waitid(..., WNOWAIT)``, which leaves the leader a zombie; a zombie keeps its pid and so its
process group id reserved, so ``killpg`` cannot reach an unrelated process that happens to
reuse the number. Only :meth:`ChildProcess.reap` collects the zombie, under the same lock
that every signal takes, and after it nothing is ever signalled again.
"""

from __future__ import annotations

import errno
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable, Mapping, Sequence

from agentshim.core.errors import AgentShimError, CliNotFoundError, InvalidRequestError

from ._validate import check_start

if sys.platform != "win32":
    import fcntl

__all__ = ["POSIX", "ChildProcess", "exit_status", "open_pidfd", "start_error"]

POSIX = sys.platform != "win32"
"""Whether process groups and ``killpg`` are available."""

# A child starts in its own session on POSIX and in its own process group on Windows, so
# signals reach everything it starts.
if sys.platform == "win32":
    _NEW_PROCESS_GROUP = subprocess.CREATE_NEW_PROCESS_GROUP
else:
    _NEW_PROCESS_GROUP = 0

# Whether exit can be seen without reaping. CPython leaves os.waitid out on macOS; there the
# leader is reaped when its exit is noticed, and from then on its group is not signalled.
_PEEK = POSIX and hasattr(os, "waitid") and hasattr(os, "WNOWAIT")

# A bigger stdout pipe means fewer wake-ups per megabyte (about 10% more throughput). Kept
# modest and on stdout only: every user has a soft limit on the total size of their pipes.
_STDOUT_PIPE_SIZE = 1 << 18


class ChildProcess:
    """A started process with piped stdin, stdout and stderr, leading its own process group."""

    __slots__ = (
        "_lock",
        "_popen",
        "_reaped",
        "_returncode",
        "pid",
        "pidfd",
        "stderr_fd",
        "stdin_fd",
        "stdout_fd",
    )

    def __init__(self, popen: subprocess.Popen[bytes]) -> None:
        assert popen.stdin is not None
        assert popen.stdout is not None
        assert popen.stderr is not None
        self._popen = popen
        self._lock = threading.Lock()
        self._reaped = False
        self._returncode: int | None = None
        self.pid = popen.pid
        self.stdin_fd: int | None = popen.stdin.fileno()
        self.stdout_fd = popen.stdout.fileno()
        self.stderr_fd = popen.stderr.fileno()
        self.pidfd = open_pidfd(popen.pid)

    @classmethod
    def start(cls, argv: Sequence[str], cwd: str | None, env: Mapping[str, str]) -> ChildProcess:
        """Start ``argv`` in a new session (POSIX) or process group (Windows).

        Raises:
            InvalidRequestError: The request cannot reach a process as given (a NUL byte in
                an argument, the environment or the working directory; ``=`` in a
                variable's name; anything else Popen refuses before starting).
            CliNotFoundError: The program does not exist or may not be executed.
            AgentShimError: The working directory does not exist or the start failed otherwise.
        """
        check_start(argv, cwd, env)
        try:
            popen = subprocess.Popen(
                list(argv),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=dict(env),
                bufsize=0,
                close_fds=True,
                start_new_session=POSIX,
                creationflags=_NEW_PROCESS_GROUP,
            )
        except OSError as exc:
            raise start_error(exc, argv, cwd) from exc
        except (ValueError, TypeError) as exc:
            # Popen's own checks, for whatever check_start does not foresee (a value of the
            # wrong type, a platform's extra rule); nothing was started.
            raise InvalidRequestError(
                "request",
                str(exc),
                f"cannot run {argv[0]!r}: {exc}; check the argv, env and cwd of the request",
            ) from exc
        child = cls(popen)
        if POSIX:
            _widen_pipe(child.stdout_fd)
        return child

    @property
    def returncode(self) -> int | None:
        """The exit status once the process is known to have exited, else ``None``."""
        return self._returncode

    def poll_exit(self) -> int | None:
        """Return the exit status if the process has exited, without reaping it."""
        if self._returncode is not None:
            return self._returncode
        if not _PEEK:
            with self._lock:
                code = self._popen.poll()
                if code is not None:
                    self._reaped = True
                    self._returncode = code
            return code
        try:
            info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            # Someone else reaped it (a SIGCHLD handler set to SIG_IGN, a stray os.wait()).
            self._returncode = self._foreign_reap()
            return self._returncode
        if info is None:
            return None
        self._returncode = exit_status(info)
        return self._returncode

    def terminate_group(self) -> None:
        """Send SIGTERM to the group (then SIGCONT, so stopped members can act on it)."""
        if sys.platform == "win32":
            self._signal(lambda: self._popen.terminate())
            return
        self._signal(lambda: _killpg(self.pid, signal.SIGTERM, signal.SIGCONT))

    def kill_group(self) -> None:
        """Send SIGKILL to the group."""
        if sys.platform == "win32":
            self._signal(lambda: self._popen.kill())
            return
        self._signal(lambda: _killpg(self.pid, signal.SIGKILL))

    def _signal(self, send: Callable[[], None]) -> None:
        # Under the lock reap() takes, so a signal and the reaping can never interleave.
        with self._lock:
            if not self._reaped:
                send()

    def reap(self) -> int:
        """Wait for the process to exit, collect it, and return its exit status.

        Blocks until the leader exits; callers kill the group first when they cannot wait.
        """
        if _PEEK and self._returncode is None:
            try:
                info = os.waitid(os.P_PID, self.pid, os.WEXITED | os.WNOWAIT)
            except ChildProcessError:
                info = None
            self._returncode = exit_status(info) if info is not None else self._foreign_reap()
        with self._lock:
            if not self._reaped:
                code = self._popen.wait()
                if self._returncode is None:
                    self._returncode = code
                self._reaped = True
        assert self._returncode is not None
        return self._returncode

    @property
    def reaped(self) -> bool:
        """Whether the process has been collected (and so may no longer be signalled)."""
        return self._reaped

    def close_stdin(self) -> None:
        """Close our end of the process's stdin; idempotent."""
        stdin = self._popen.stdin
        self.stdin_fd = None
        if stdin is not None:
            try:
                stdin.close()
            except OSError:
                pass  # a broken pipe on close means the reader is gone, which is fine

    def close_output(self, stdout: bool) -> None:
        """Close our end of stdout (``stdout=True``) or stderr; idempotent."""
        stream = self._popen.stdout if stdout else self._popen.stderr
        if stream is not None:
            stream.close()

    def close_outputs(self) -> None:
        """Close our ends of stdout and stderr; idempotent."""
        self.close_output(True)
        self.close_output(False)

    def close_pidfd(self) -> None:
        """Close the pidfd, if there is one; idempotent."""
        if self.pidfd is not None:
            os.close(self.pidfd)
            self.pidfd = None

    def abandon(self) -> None:
        """Kill the group, close every descriptor and reap the process (for a failed start).

        For a child whose run could not begin (its streams could not be set up): nothing of
        it is left behind, and it is never signalled after it was reaped.
        """
        self.kill_group()
        self.close_outputs()
        self.close_stdin()
        self.close_pidfd()
        self.reap()

    def _foreign_reap(self) -> int:
        with self._lock:
            self._reaped = True
        if self._popen.returncode is None:
            self._popen.returncode = 0
        return self._popen.returncode


def _killpg(pgid: int, *signals: int) -> None:
    for sig in signals:
        try:
            os.killpg(pgid, sig)
        except ProcessLookupError:
            return  # the group is already empty
        except PermissionError:
            # A member became setuid; the leader, which we own, still gets the signal.
            try:
                os.kill(pgid, sig)
            except OSError:
                return


def exit_status(info: os.waitid_result) -> int:
    """The exit status ``waitid`` reported: the code it exited with, or minus its signal."""
    if info.si_code == os.CLD_EXITED:
        return info.si_status
    return -info.si_status


def open_pidfd(pid: int) -> int | None:
    """A descriptor that becomes readable when ``pid`` exits; None where pidfds do not exist."""
    pidfd_open = getattr(os, "pidfd_open", None)
    if pidfd_open is None:
        return None
    try:
        fd: int = pidfd_open(pid)
    except OSError:
        return None
    return fd


def _widen_pipe(fd: int) -> None:
    if sys.platform == "win32":
        return
    setpipe: int | None = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setpipe is None:
        return
    try:
        fcntl.fcntl(fd, setpipe, _STDOUT_PIPE_SIZE)
    except OSError:
        pass  # over the system's pipe-max-size: the default size works, only slower


def start_error(exc: OSError, argv: Sequence[str], cwd: str | None) -> AgentShimError:
    program = argv[0]
    if cwd is not None and exc.filename == cwd:
        return InvalidRequestError(
            "cwd",
            f"{cwd!r} is not usable ({exc.strerror})",
            f"cannot run {program!r}: working directory {cwd!r} is not usable "
            f"({exc.strerror}); create it or pass another cwd",
        )
    if exc.errno in (errno.ENOENT, errno.ENOTDIR):
        return CliNotFoundError(program)
    if exc.errno in (errno.EACCES, errno.EPERM, errno.ENOEXEC):
        return CliNotFoundError(
            program,
            f"{program!r} exists but cannot be executed ({exc.strerror}); "
            "fix its permissions or point to the real binary",
        )
    return AgentShimError(
        f"cannot start {program!r}: {exc.strerror or exc}; check the program and its cwd"
    )
