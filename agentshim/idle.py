"""Idle release on time: one housekeeper per Agent closes the CLIs of quiet conversations.

A session given ``idle_release_after`` asks its Agent's :class:`IdleHousekeeper` to look at
it again when that much time has passed since its last turn. The housekeeper is one thread
for every session of the Agent, started when the first such session goes idle and ended when
none waits any more; it sleeps until the earliest due time (or until a session comes or
goes), never on a timer. A due session closes its conversation's process and keeps its id,
exactly as if a turn had been prepared then: the ``conversation_released`` event arrives
first among the next turn's events, on that turn's thread, and the turn reopens the
conversation by id. A session running a turn is left alone; it asks again when the turn ends.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Protocol

from agentshim.core.clock import Clock

__all__ = ["IdleHousekeeper", "IdleSession"]


class IdleSession(Protocol):
    """What the housekeeper needs of a session."""

    def release_if_idle(self) -> bool:
        """Close the live conversation if it has been idle long enough; whether it did."""
        ...


class IdleHousekeeper:
    """Releases idle sessions when they are due, from one thread; see the module docstring.

    ``clock`` gives the time due times are on and the waits until them (an injected fake
    clock makes the waits instant and the release times exact). ``log`` hears a release
    that raised (the session is dropped from the schedule; its next turn decides again).
    """

    def __init__(self, clock: Clock, *, log: Callable[[str], None] | None = None) -> None:
        self._clock = clock
        self._log = log
        self._lock = threading.Lock()
        self._due: dict[int, tuple[float, IdleSession]] = {}
        self._changed = threading.Event()
        self._thread: threading.Thread | None = None

    @property
    def scheduled(self) -> int:
        """How many sessions wait for their due time."""
        with self._lock:
            return len(self._due)

    def schedule(self, session: IdleSession, due: float) -> None:
        """Look at ``session`` at ``due`` (on the clock); replaces its earlier due time."""
        with self._lock:
            self._due[id(session)] = (due, session)
            self._changed.set()
            # Not alive: a forked child inherits the record of a thread it does not have.
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="agentshim-idle-release", daemon=True
                )
                self._thread.start()

    def forget(self, session: IdleSession) -> None:
        """Do not look at ``session`` (a turn began, or it closed)."""
        with self._lock:
            if self._due.pop(id(session), None) is not None:
                self._changed.set()

    def _run(self) -> None:
        me = threading.current_thread()
        while (step := self._next(me)) is not None:
            ripe, wait = step
            # Outside the lock: a release closes a process, and a session that ends a turn
            # meanwhile schedules itself again.
            for session in ripe:
                self._release(session)
            if not ripe:
                self._clock.wait(wait, self._changed)

    def _next(self, me: threading.Thread) -> tuple[list[IdleSession], float] | None:
        """The sessions due now (taken off the schedule), else the wait until the earliest.

        None when thread ``me`` is to end: another replaced it, or no session waits.
        """
        with self._lock:
            if self._thread is not me:
                return None
            if not self._due:
                self._thread = None
                return None
            now = self._clock.monotonic()
            ripe = [session for due, session in self._due.values() if due <= now]
            for session in ripe:
                del self._due[id(session)]
            if ripe:
                return ripe, 0.0
            self._changed.clear()
            return [], min(due for due, _ in self._due.values()) - now

    def _release(self, session: IdleSession) -> None:
        try:
            session.release_if_idle()
        except Exception as error:
            if self._log is not None:
                self._log(f"releasing an idle session failed: {error!r}")
