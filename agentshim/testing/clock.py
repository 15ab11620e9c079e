"""FakeClock and SequentialIds: time and identifiers a test controls completely."""

from __future__ import annotations

import threading

from agentshim.core.clock import StopSignal

__all__ = ["FakeClock", "SequentialIds"]


class FakeClock:
    """A Clock whose waits return at once, advancing its time by the seconds waited.

    A wait whose stop signal is already set returns True without advancing. Every wait is
    recorded in :attr:`waits` (the seconds asked for), so a test can assert on back-off
    schedules without sleeping.
    """

    def __init__(self, start: float = 0.0) -> None:
        self._lock = threading.Lock()
        self._now = start
        self.waits: list[float] = []

    def monotonic(self) -> float:
        """The current fake time."""
        with self._lock:
            return self._now

    def wait(self, seconds: float, stop: StopSignal | None = None) -> bool:
        """Record the wait; return True if ``stop`` is set, else advance time and return False."""
        seconds = max(0.0, seconds)
        with self._lock:
            self.waits.append(seconds)
        if stop is not None and stop.is_set():
            return True
        self.advance(seconds)
        return False

    def advance(self, seconds: float) -> None:
        """Move time forward by ``seconds`` (never backwards)."""
        with self._lock:
            self._now += max(0.0, seconds)


class SequentialIds:
    """An IdAllocator handing out ``<prefix>_1``, ``<prefix>_2``, ... (one counter for all)."""

    def __init__(self, start: int = 1) -> None:
        self._lock = threading.Lock()
        self._next = start

    def new_id(self, prefix: str) -> str:
        """Return the next id with ``prefix``."""
        with self._lock:
            number = self._next
            self._next += 1
        return f"{prefix}_{number}"
