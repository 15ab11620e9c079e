"""What the live stream-transport suites share: counting spawns, finding processes, waiting.

Each provider's ``test_<provider>_stream.py`` runs a long-lived transport on the real CLI;
these helpers see what a user would: the processes it spawned (and which are still alive,
found in ``/proc`` by the run's HOME), and a turn running on another thread.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from agentshim.core.turn import TurnResult
from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.host_process import HostProcess
from agentshim.execution.process import SpawnRequest
from agentshim.execution.pty_process import PtyProcess, PtySize

__all__ = ["Background", "CountingExecutor", "alive", "run_processes", "wait_for"]


class CountingExecutor(HostCommandExecutor):
    """The host executor, keeping every long-lived process it spawns (and its argv)."""

    def __init__(self) -> None:
        super().__init__()
        self.spawned: list[tuple[SpawnRequest, HostProcess | PtyProcess]] = []

    def spawn(self, request: SpawnRequest) -> HostProcess:
        process = super().spawn(request)
        self.spawned.append((request, process))
        return process

    def spawn_pty(self, request: SpawnRequest, size: PtySize | None = None) -> PtyProcess:
        process = super().spawn_pty(request, size)
        self.spawned.append((request, process))
        return process

    @property
    def argvs(self) -> list[tuple[str, ...]]:
        return [tuple(request.argv) for request, _ in self.spawned]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def run_processes(home: Path, needle: str) -> list[int]:
    """Live processes of the run (by HOME) whose command line contains ``needle``."""
    marker = f"HOME={home}".encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, UnicodeDecodeError):
            continue
        if marker in environ.split(b"\0") and needle in cmdline and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


def wait_for(condition: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {within:g} s"
        time.sleep(0.05)


class Background:
    """A turn running on another thread: its result, or the error it raised."""

    def __init__(self, run: Callable[[], TurnResult]) -> None:
        self.value: TurnResult | None = None
        self.error: BaseException | None = None
        self.ended_at: float | None = None
        self._thread = threading.Thread(target=self._main, args=(run,), daemon=True)
        self._thread.start()

    def _main(self, run: Callable[[], TurnResult]) -> None:
        try:
            self.value = run()
        except BaseException as error:  # handed to the test thread
            self.error = error
        self.ended_at = time.monotonic()

    def join(self, timeout: float) -> TurnResult:
        self._thread.join(timeout)
        assert not self._thread.is_alive(), f"the turn did not return within {timeout:g} s"
        if self.error is not None:
            raise self.error
        assert self.value is not None
        return self.value
