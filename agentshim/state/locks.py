"""Keyed locks: one lock per key, created on demand and freed when nobody holds or waits on it.

:class:`ConversationLock` is how a turn holds its provider conversation in such a registry.
"""

from __future__ import annotations

import threading
from collections.abc import Generator, Hashable
from contextlib import contextmanager
from dataclasses import dataclass, field

from agentshim.core.clock import StopSignal
from agentshim.core.events import AgentEvent, Emit, SessionStarted

__all__ = ["ConversationLock", "KeyedLocks"]

#: How often a turn waiting for another turn in the same conversation checks for a stop (s).
_POLL_S = 0.05


@dataclass
class _Entry:
    lock: threading.Lock = field(default_factory=threading.Lock)
    users: int = 0


class KeyedLocks:
    """A registry of locks by key (e.g. ``(provider, conversation id)``).

    An entry exists only while some thread holds or waits for its lock, so the registry does
    not grow with the number of conversations ever seen.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._entries: dict[Hashable, _Entry] = {}

    def _enter(self, key: Hashable) -> _Entry:
        with self._guard:
            entry = self._entries.get(key)
            if entry is None:
                entry = self._entries[key] = _Entry()
            entry.users += 1
            return entry

    def _leave(self, key: Hashable, entry: _Entry) -> None:
        with self._guard:
            entry.users -= 1
            if entry.users == 0:
                del self._entries[key]

    def acquire(self, key: Hashable, *, blocking: bool = True, timeout: float = -1) -> bool:
        """Take the lock for ``key``; False when not blocking (or timed out) and it is held."""
        entry = self._enter(key)
        got = entry.lock.acquire(blocking, timeout)
        if not got:
            self._leave(key, entry)
        return got

    def release(self, key: Hashable) -> None:
        """Release the lock for ``key``, taken earlier with ``acquire``."""
        with self._guard:
            entry = self._entries.get(key)
        if entry is None:
            raise RuntimeError(f"lock {key!r} is not held")
        entry.lock.release()
        self._leave(key, entry)

    @contextmanager
    def hold(self, key: Hashable) -> Generator[None, None, None]:
        """Hold the lock for ``key`` for the duration of a ``with`` block."""
        self.acquire(key)
        try:
            yield
        finally:
            self.release(key)

    def __len__(self) -> int:
        """The number of keys currently held or waited on."""
        with self._guard:
            return len(self._entries)


class ConversationLock:
    """The lock one turn holds on its provider conversation, in a shared registry.

    Keys are ``(provider, session_id)``. A turn that resumes a conversation ``wait``-s for it
    before anything runs; a fresh turn has no id yet, so its events go through ``watching``,
    which takes the lock the moment ``SessionStarted`` names the conversation: another session
    that adopts the id mid-turn then waits for this turn to end. ``release`` frees whatever
    was taken; one object serves one turn.
    """

    __slots__ = ("_held", "_locks", "_provider")

    def __init__(self, locks: KeyedLocks, provider: str) -> None:
        self._locks = locks
        self._provider = provider
        self._held: tuple[str, str] | None = None

    def wait(self, session_id: str, stop: StopSignal) -> bool:
        """Wait for ``session_id``'s lock; False (nothing taken) when ``stop`` fires first."""
        key = (self._provider, session_id)
        while not self._locks.acquire(key, timeout=_POLL_S):
            if stop.is_set():
                return False
        self._held = key
        return True

    def watching(self, emit: Emit) -> Emit:
        """``emit``, taking the conversation's lock first when an event names it."""

        def locking_emit(event: AgentEvent) -> None:
            if self._held is None and isinstance(event, SessionStarted):
                key = (self._provider, event.session_id)
                if self._locks.acquire(key, blocking=False):
                    self._held = key
            emit(event)

        return locking_emit

    def release(self) -> None:
        """Release the lock this turn holds, if any; idempotent."""
        key, self._held = self._held, None
        if key is not None:
            self._locks.release(key)
