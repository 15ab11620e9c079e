"""Processes started before the conversation that will use them: a warm pool for one-per-process CLIs.

A CLI that serves one conversation per process (Claude Code's stream-json) can still be
started ahead of time: :class:`WarmProcesses` holds processes spawned with exactly the
request a new conversation would make (argv, working directory, environment), and hands one
to the first conversation that asks for that request, which then says its hello and runs its
first turn on it without waiting for the CLI to start. A process that died while it waited
is ended and never handed out. What is never taken is ended by :meth:`WarmProcesses.release`.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from agentshim.execution.process import Process, SpawnRequest

__all__ = ["WarmProcesses"]

_Key = tuple[tuple[str, ...], str | None, tuple[tuple[str, str], ...]]


def _key(argv: Sequence[str], cwd: str | None, env: Mapping[str, str]) -> _Key:
    return tuple(argv), cwd, tuple(sorted(env.items()))


class WarmProcesses:
    """Started processes waiting for a conversation that starts exactly like them; thread-safe.

    ``close_grace`` is how long each step of ending a process is given.
    """

    def __init__(self, close_grace: float = 5.0) -> None:
        self._close_grace = close_grace
        self._lock = threading.Lock()
        self._waiting: dict[_Key, list[Process]] = {}

    def add(self, request: SpawnRequest, process: Process) -> None:
        """Keep ``process``, started with ``request``, for a conversation that asks for it."""
        with self._lock:
            key = _key(request.argv, request.cwd, request.env)
            self._waiting.setdefault(key, []).append(process)

    def take(self, argv: Sequence[str], cwd: str | None, env: Mapping[str, str]) -> Process | None:
        """A running process started with this argv, cwd and env, no longer kept; or None."""
        dead: list[Process] = []
        found: Process | None = None
        with self._lock:
            waiting = self._waiting.get(_key(argv, cwd, env), [])
            while waiting and found is None:
                process = waiting.pop(0)
                if process.wait(0) is None:
                    found = process
                else:
                    dead.append(process)
        for process in dead:
            self._end(process)
        return found

    def count(self) -> int:
        """How many processes are kept now."""
        with self._lock:
            return sum(len(waiting) for waiting in self._waiting.values())

    def release(self) -> None:
        """End every process still kept."""
        with self._lock:
            kept = [process for waiting in self._waiting.values() for process in waiting]
            self._waiting.clear()
        for process in kept:
            self._end(process)

    def _end(self, process: Process) -> None:
        grace = self._close_grace
        process.close_stdin()
        if process.wait(grace) is None:
            process.terminate()
            if process.wait(grace) is None:
                process.kill()
                process.wait(grace)
