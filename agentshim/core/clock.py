"""Time as an injected dependency, so waits can be cancelled and simulations skip real time."""

from __future__ import annotations

import threading
import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "StopSignal", "SystemClock"]


@runtime_checkable
class StopSignal(Protocol):
    """Something a wait can be cut short by; ``threading.Event`` is one."""

    def is_set(self) -> bool:
        """Return True once the signal has fired."""
        ...

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the signal fires or ``timeout`` passes; True if it fired."""
        ...


@runtime_checkable
class Clock(Protocol):
    """A monotonic clock whose waits can be stopped early."""

    def monotonic(self) -> float:
        """Seconds on a clock that never goes backwards."""
        ...

    def wait(self, seconds: float, stop: StopSignal | None = None) -> bool:
        """Wait ``seconds`` unless ``stop`` fires first; True when stopped early."""
        ...


class SystemClock:
    """The real clock: ``time.monotonic`` and a wait on the stop signal or a sleep."""

    def monotonic(self) -> float:
        """Return ``time.monotonic()``."""
        return time.monotonic()

    def wait(self, seconds: float, stop: StopSignal | None = None) -> bool:
        """Sleep ``seconds`` (at least 0), returning True at once if ``stop`` fires."""
        seconds = max(0.0, seconds)
        if stop is None:
            # An Event nobody sets gives an interruptible-by-nothing sleep with one code path.
            threading.Event().wait(seconds)
            return False
        if stop.is_set():
            return True
        return stop.wait(seconds)
