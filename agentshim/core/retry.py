"""How a session retries a transient failure in place: the waits, their jitter, the provider's hint."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeGuard

from agentshim.core._checks import seconds, sequence
from agentshim.core.errors import InvalidRequestError

__all__ = ["RetryPolicy"]

_DEFAULT_DELAYS = (30.0, 60.0, 120.0, 240.0, 480.0)


def _is_number(value: object) -> TypeGuard[float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How a transient failure is retried in place.

    ``delays`` are the waits before the 1st, 2nd, ... retry; their number is the most retries
    a turn gets. ``jitter`` (0 <= jitter < 1, off by default) spreads each wait by up to that
    fraction either way; the spread comes from a random sample the session draws from a
    generator seeded with ``seed``, so a seeded session waits the same every run. A failure
    that says when the provider will accept requests again (``retry_after``) waits at least
    that long, and is not retried when that is more than ``max_hint`` away.

    Raises:
        InvalidRequestError: a delay or ``max_hint`` that is not a finite number >= 0, or
            ``jitter`` outside [0, 1).
    """

    delays: Sequence[float] = _DEFAULT_DELAYS
    jitter: float = 0.0
    seed: int | None = None
    max_hint: float = 900.0

    def __post_init__(self) -> None:
        raw = sequence("RetryPolicy", "delays", self.delays, "seconds such as (30, 60)")
        delays = [seconds("RetryPolicy", "delays", delay) for delay in raw]
        if (
            not _is_number(self.jitter)
            or not math.isfinite(self.jitter)
            or not 0 <= self.jitter < 1
        ):
            raise InvalidRequestError(
                "RetryPolicy.jitter",
                f"{self.jitter!r} is not in [0, 1)",
                f"RetryPolicy.jitter must be in [0, 1), got {self.jitter!r}; 0 turns it off",
            )
        seconds("RetryPolicy", "max_hint", self.max_hint)
        object.__setattr__(self, "delays", tuple(delays))

    @classmethod
    def never(cls) -> RetryPolicy:
        """A policy that never retries."""
        return cls(delays=())

    @property
    def max_retries(self) -> int:
        """The most retries one turn gets."""
        return len(self.delays)

    def delay(
        self, retry: int, *, sample: float = 0.5, retry_after: float | None = None
    ) -> float | None:
        """Seconds to wait before retry number ``retry`` (0-based), or None to give up.

        ``sample`` is a uniform random number in [0, 1); 0.5 means no spread.

        Raises:
            InvalidRequestError: ``retry`` is negative or not an int.
        """
        if isinstance(retry, bool) or not isinstance(retry, int) or retry < 0:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "retry",
                f"{retry!r} is not an int >= 0",
                f"RetryPolicy.delay(retry) needs a retry number that is not negative (an int "
                f">= 0), got {retry!r}",
            )
        if retry >= len(self.delays):
            return None
        base = self.delays[retry]
        wait = base * (1.0 + self.jitter * (2.0 * min(max(sample, 0.0), 1.0) - 1.0))
        # An infinite hint ("not before ever") gives up like any hint beyond max_hint.
        if retry_after is not None and not math.isnan(retry_after):
            if retry_after > self.max_hint:
                return None
            wait = max(wait, retry_after)
        return max(0.0, wait)
