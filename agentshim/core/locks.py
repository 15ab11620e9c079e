"""Keyed locks: one lock per key, created on demand and freed when nobody holds or waits on it."""

from __future__ import annotations

import threading
from collections.abc import Generator, Hashable
from contextlib import contextmanager
from dataclasses import dataclass, field

__all__ = ["KeyedLocks"]


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
