"""The end of a process wait: ``timeout`` seconds on the monotonic clock, or no end.

Private to the execution package and its test doubles: every ``next_output``, ``read`` and
``wait`` of a process turns its ``timeout`` into one of these, so the arithmetic (a negative
timeout counts as 0, None never ends) is written once.
"""

from __future__ import annotations

import time

__all__ = ["Deadline"]


class Deadline:
    """``timeout`` seconds (at least 0) from when it is made; ``timeout`` None: never."""

    __slots__ = ("_at",)

    def __init__(self, timeout: float | None) -> None:
        self._at = None if timeout is None else time.monotonic() + max(timeout, 0.0)

    def remaining(self) -> float | None:
        """The seconds left, never below 0; None when the wait has no end."""
        return None if self._at is None else max(self._at - time.monotonic(), 0.0)

    def passed(self) -> bool:
        """Whether the deadline has come (never, for a wait without end)."""
        return self._at is not None and time.monotonic() >= self._at
