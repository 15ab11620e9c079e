"""Small child programs and observers shared by the execution tests."""

from __future__ import annotations

import os
import sys
import textwrap
import threading

from agentshim.execution.executor import CommandHandle

PY = sys.executable
ENV = {"PATH": os.environ.get("PATH", os.defpath)}


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
        self.thread_counts: list[int] = []

    def started(self, handle: CommandHandle) -> None:
        self.handle = handle
        self.events.append("started")
        self.threads.add(threading.get_ident())

    def stdout(self, line: str) -> None:
        self.out.append(line)
        self.events.append("stdout")
        self.threads.add(threading.get_ident())
        self.thread_counts.append(threading.active_count())

    def stderr(self, line: str) -> None:
        self.err.append(line)
        self.events.append("stderr")
        self.threads.add(threading.get_ident())
        self.thread_counts.append(threading.active_count())


def is_alive(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) process."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            stat = handle.read()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def children(parent: int | None = None) -> list[int]:
    """Pids (zombies included) whose parent is ``parent`` (default: this process)."""
    parent = os.getpid() if parent is None else parent
    found: list[int] = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as handle:
                stat = handle.read()
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent:
            found.append(int(entry))
    return found


def open_fds() -> int:
    """How many descriptors this process has open."""
    return len(os.listdir("/proc/self/fd"))


def wait_dead(pid: int, timeout: float = 5.0) -> bool:
    """Wait until ``pid`` is gone or a zombie; True if it died in time."""
    stop = threading.Event()
    waited = 0.0
    while is_alive(pid):
        if waited >= timeout:
            return False
        stop.wait(0.01)
        waited += 0.01
    return True
