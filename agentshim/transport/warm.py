"""Processes started before the conversation that will use them: a warm pool for one-per-process CLIs.

A CLI that serves one conversation per process (Claude Code's stream-json) can still be
started ahead of time: :class:`WarmProcesses` holds processes spawned with exactly the
request a new conversation would make (argv, working directory, environment), and hands one
to the first conversation that asks for that request, which then says its hello and runs its
first turn on it without waiting for the CLI to start. A process that died while it waited
is ended and never handed out. What is never taken is ended by :meth:`WarmProcesses.release`,
or, given a :class:`WarmIdle`, once it has waited that long (by the Agent's idle housekeeper,
the thread that releases idle conversations' processes: no thread of its own).
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from agentshim.core.clock import Monotonic
from agentshim.execution.process import Process, SpawnRequest, end_process

__all__ = ["IdleRelease", "IdleSchedule", "WarmIdle", "WarmProcesses"]


class IdleRelease(Protocol):
    """Something that ends what it keeps once that has been idle long enough."""

    def release_if_idle(self) -> bool:
        """End what has been idle long enough (now, on this thread); whether it ended any."""
        ...


class IdleSchedule(Protocol):
    """Who looks at an :class:`IdleRelease` when it is due: an Agent's idle housekeeper."""

    def schedule(self, session: IdleRelease, due: float, /) -> None:
        """Call ``session.release_if_idle()`` at ``due``; replaces its earlier due time."""
        ...

    def forget(self, session: IdleRelease, /) -> None:
        """Do not look at ``session`` (what it keeps is in use again)."""
        ...


@dataclass(frozen=True, slots=True)
class WarmIdle:
    """How long a warm process may wait unused before it is ended, and who ends it.

    ``after`` seconds on ``clock`` (the schedule's clock) since it last served nobody; the
    ``schedule`` calls back when that is due.
    """

    schedule: IdleSchedule
    after: float
    clock: Monotonic

    def due(self) -> float:
        """When something that goes idle now is due."""
        return self.clock() + self.after


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
        self._due: dict[int, float] = {}
        self._idle: WarmIdle | None = None

    def add(self, request: SpawnRequest, process: Process, idle: WarmIdle | None = None) -> None:
        """Keep ``process``, started with ``request``, for a conversation that asks for it.

        With ``idle``, it is ended once it has waited ``idle.after`` seconds untaken.
        """
        with self._lock:
            key = _key(request.argv, request.cwd, request.env)
            self._waiting.setdefault(key, []).append(process)
            if idle is None:
                return
            self._idle = idle
            self._due[id(process)] = idle.due()
            first = min(self._due.values())
        idle.schedule.schedule(self, first)

    def release_if_idle(self) -> bool:
        """End the processes that waited their idle time; look again when the next is due."""
        idle = self._idle
        if idle is None:
            return False
        now, ended = idle.clock(), list[Process]()
        with self._lock:
            for waiting in self._waiting.values():
                for process in list(waiting):
                    if self._due.get(id(process), now + 1) <= now:
                        waiting.remove(process)
                        del self._due[id(process)]
                        ended.append(process)
            following = min(self._due.values(), default=None)
        if following is not None:
            idle.schedule.schedule(self, following)
        for process in ended:
            self._end(process)
        return bool(ended)

    def take(self, argv: Sequence[str], cwd: str | None, env: Mapping[str, str]) -> Process | None:
        """A running process started with this argv, cwd and env, no longer kept; or None."""
        dead: list[Process] = []
        found: Process | None = None
        with self._lock:
            waiting = self._waiting.get(_key(argv, cwd, env), [])
            while waiting and found is None:
                process = waiting.pop(0)
                self._due.pop(id(process), None)
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
            self._due.clear()
            idle, self._idle = self._idle, None
        if idle is not None:
            idle.schedule.forget(self)
        for process in kept:
            self._end(process)

    def _end(self, process: Process) -> None:
        end_process(process, self._close_grace)
