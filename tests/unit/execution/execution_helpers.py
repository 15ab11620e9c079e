"""Small child programs and observers shared by the execution tests."""

from __future__ import annotations

import os
import select
import sys
import textwrap
import threading

import pytest

from agentshim.execution.executor import CommandHandle
from agentshim.testing._liveness import HANG_GUARD_S

PY = sys.executable
ENV = {"PATH": os.environ.get("PATH", os.defpath)}

OUTLAST = 180
"""Seconds a child that only a kill should end sleeps: longer than any :data:`HANG_GUARD_S`
wait, so a process seen ending within one was ended, not finished on its own."""

GRANDCHILD = f"""
    import subprocess, sys
    grandchild = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep({OUTLAST}); print('outlived')"])
    print(grandchild.pid)
"""
"""A child program that starts a grandchild in its own process group, prints the grandchild's
pid and exits at once: the grandchild keeps stdout and stderr open. Left alone, the grandchild
prints ``outlived`` once it has slept :data:`OUTLAST` seconds, so a run that waited for it
instead of ending it shows that line."""

HAS_PROC = os.path.isdir("/proc/self/fd")
"""Whether this platform has a Linux-style /proc, which the process observers below read."""

needs_proc = pytest.mark.skipif(
    not HAS_PROC,
    reason="observes processes and descriptors through /proc, which this platform lacks",
)
"""Mark a test (or, as ``pytestmark``, a module) that uses the /proc observers below."""


def py(code: str, *args: str) -> list[str]:
    """Argv running ``code`` in an unbuffered Python child."""
    return [PY, "-u", "-c", textwrap.dedent(code), *args]


class RecordingSink:
    """Records the handle, every line, and the thread each callback ran on."""

    def __init__(self) -> None:
        self.handle: CommandHandle | None = None
        self.out: list[str] = []
        self.err: list[str] = []
        self.events: list[str] = []
        self.threads: set[int] = set()
        self.alive: set[threading.Thread] = set()  # every thread alive at a line's callback

    def started(self, handle: CommandHandle) -> None:
        self.handle = handle
        self.events.append("started")
        self.threads.add(threading.get_ident())

    def stdout(self, line: str) -> None:
        self.out.append(line)
        self.events.append("stdout")
        self.threads.add(threading.get_ident())
        self.alive.update(threading.enumerate())

    def stderr(self, line: str) -> None:
        self.err.append(line)
        self.events.append("stderr")
        self.threads.add(threading.get_ident())
        self.alive.update(threading.enumerate())


def _require_proc() -> None:
    # Without /proc every pid would look gone and a "was it killed?" check would pass by
    # default; fail loudly instead, so a test that forgot needs_proc cannot pass vacuously.
    if not HAS_PROC:
        raise RuntimeError("this observer needs /proc; mark the test with needs_proc")


def _stat_fields(pid: int) -> list[str] | None:
    # The fields of /proc/<pid>/stat after the command name (which may hold spaces).
    _require_proc()
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except (FileNotFoundError, ProcessLookupError):
        return None
    return stat.rsplit(")", 1)[1].split()


def proc_state(pid: int) -> str | None:
    """The state letter of ``pid`` ("Z" for a zombie), or None when there is no such pid."""
    fields = _stat_fields(pid)
    return None if fields is None else fields[0]


def parent_of(pid: int) -> int | None:
    """The parent pid of ``pid``, or None when there is no such pid."""
    fields = _stat_fields(pid)
    return None if fields is None else int(fields[1])


def is_alive(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) process."""
    return proc_state(pid) not in (None, "Z")


def open_fds() -> int:
    """How many descriptors this process has open."""
    _require_proc()
    return len(os.listdir("/proc/self/fd"))


def wait_dead(pid: int, timeout: float = HANG_GUARD_S) -> bool:
    """Wait until ``pid`` is gone or a zombie; True if it ended within ``timeout`` (a hang guard).

    Waits on the process itself (a pidfd becomes readable when it exits) where the system
    offers one; elsewhere it looks at /proc now and then.
    """
    _require_proc()
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    except (AttributeError, OSError):  # no pidfd here (an old kernel, a seccomp profile)
        return _looked_dead(pid, timeout)
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


def _looked_dead(pid: int, timeout: float) -> bool:
    stop = threading.Event()
    waited = 0.0
    while is_alive(pid):
        if waited >= timeout:
            return False
        stop.wait(0.01)
        waited += 0.01
    return True
