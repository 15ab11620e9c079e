"""Time as an injected dependency, so waits can be cancelled and simulations skip real time."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "Monotonic", "StopSignal", "SystemClock"]

Monotonic = Callable[[], float]
"""A function giving seconds on a clock that never goes backwards: ``time.monotonic``, or a
test's fake. What a deadline, a timeout or a tool call's duration is measured on."""

# The longest timeout a threading wait accepts; Event.wait raises OverflowError past it.
_LONGEST_WAIT = threading.TIMEOUT_MAX


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
        """Sleep ``seconds`` (at least 0), returning True at once if ``stop`` fires.

        Any length is accepted: a wait longer than the platform's longest timed wait
        (``threading.TIMEOUT_MAX``), ``float("inf")`` included, is made of several waits, so
        it lasts until ``stop`` fires. NaN counts as 0.
        """
        seconds = max(0.0, seconds)
        if stop is None:
            # An Event nobody sets gives an interruptible-by-nothing sleep with one code path.
            stop = threading.Event()
        elif stop.is_set():
            return True
        if seconds <= _LONGEST_WAIT:
            return stop.wait(seconds)
        deadline = time.monotonic() + seconds  # inf stays inf: wait until stopped
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return stop.is_set()
            if stop.wait(min(remaining, _LONGEST_WAIT)):
                return True
