"""Spending limits: what a turn and a session may spend, and the meter that watches a turn.

:class:`SpendingLimits` is the value (per turn ``max_cost_usd`` and ``max_tokens``, per session
``max_session_cost_usd`` and ``max_session_tokens``, and what an unpriced report means);
:class:`SpendingMeter` adds up one turn's live :class:`~agentshim.core.events.UsageReport`
events and says when a limit is crossed. Both are pure: the session interrupts the turn.

Tokens are input tokens (cached ones included) plus output tokens. Call reports are parts of
the turn report that follows them, so the meter counts the calls since the last turn report
and replaces them with it when it comes, as ``UsageReport`` documents (keeping the larger of
the two: an interrupted turn's report may count less than its calls did).
"""

from __future__ import annotations

import dataclasses
import enum
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict

from agentshim.core.errors import InvalidRequestError
from agentshim.core.events import UsageReport, UsageScope
from agentshim.core.usage import ProviderUsage

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "Crossing",
    "LimitOverrides",
    "Spend",
    "SpendingLimits",
    "SpendingMeter",
    "UnknownCost",
]


class UnknownCost(enum.Enum):
    """What a cost limit makes of usage whose cost is unknown (a model with no price)."""

    REFUSE = "refuse"
    """Stop the turn at the first report that cannot be priced, as if over the limit; a
    session that spent an unknown amount refuses further turns while it has a cost limit."""
    ALLOW = "allow"
    """Let it run: its tokens count, its cost is left out of the cost limits (which then
    bound only the priced part)."""


@dataclass(frozen=True, slots=True)
class Spend:
    """What was spent: tokens, the priced cost, and whether some cost could not be priced."""

    tokens: int = 0
    cost_usd: float = 0.0
    cost_unknown: bool = False

    def __add__(self, other: Spend) -> Spend:
        return Spend(
            self.tokens + other.tokens,
            self.cost_usd + other.cost_usd,
            self.cost_unknown or other.cost_unknown,
        )


@dataclass(frozen=True, slots=True)
class Crossing:
    """A limit that was crossed: its name (``max_cost_usd``...), its value and what was spent.

    ``spent`` is None when the cost is unknown and ``UnknownCost.REFUSE`` applies.
    """

    limit_name: str
    limit: float
    spent: float | None


def _limit(name: str, value: object, integral: bool) -> None:
    if value is None:
        return
    number_ok = (
        isinstance(value, int)
        if integral
        else isinstance(value, int | float) and math.isfinite(value)
    )
    if isinstance(value, bool) or not number_ok or value < 0:  # type: ignore[operator]
        kind = "an int" if integral else "a finite number"
        raise InvalidRequestError(
            name,
            f"{value!r:.60} is not {kind} >= 0",
            f"{name} must be {kind} >= 0 (or None for no limit), not {value!r:.60}",
        )


class LimitOverrides(TypedDict, total=False):
    """The limits :meth:`SpendingLimits.overridden` may replace; None leaves one as it is."""

    max_cost_usd: float | None
    max_tokens: int | None
    max_session_cost_usd: float | None
    max_session_tokens: int | None
    unknown_cost: UnknownCost | None


@dataclass(frozen=True, slots=True)
class SpendingLimits:
    """The limits a session's turns run under; None is no limit.

    A turn that crosses ``max_cost_usd`` or ``max_tokens``, or takes its session past
    ``max_session_cost_usd`` or ``max_session_tokens``, is stopped; a session already at a
    session limit refuses the next turn. ``unknown_cost`` says what a cost limit makes of
    usage that cannot be priced (refused by default: never counted as free).

    Raises:
        InvalidRequestError: a limit that is negative, not a number (tokens: not an int), or an
            ``unknown_cost`` that is not an UnknownCost.
    """

    max_cost_usd: float | None = None
    max_tokens: int | None = None
    max_session_cost_usd: float | None = None
    max_session_tokens: int | None = None
    unknown_cost: UnknownCost = UnknownCost.REFUSE

    def __post_init__(self) -> None:
        _limit("max_cost_usd", self.max_cost_usd, integral=False)
        _limit("max_tokens", self.max_tokens, integral=True)
        _limit("max_session_cost_usd", self.max_session_cost_usd, integral=False)
        _limit("max_session_tokens", self.max_session_tokens, integral=True)
        if not isinstance(self.unknown_cost, UnknownCost):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "unknown_cost",
                f"{self.unknown_cost!r:.60} is not an UnknownCost",
                "unknown_cost must be UnknownCost.REFUSE or UnknownCost.ALLOW, "
                f"not {self.unknown_cost!r:.60}",
            )

    @property
    def limited(self) -> bool:
        """True when any limit is set."""
        return any(
            value is not None
            for value in (
                self.max_cost_usd,
                self.max_tokens,
                self.max_session_cost_usd,
                self.max_session_tokens,
            )
        )

    def overridden(self, **overrides: Unpack[LimitOverrides]) -> SpendingLimits:
        """These limits with each one given (not None) replaced (keywords: LimitOverrides).

        Raises:
            InvalidRequestError: a replacement is not a valid limit.
        """
        given = {name: value for name, value in overrides.items() if value is not None}
        return dataclasses.replace(self, **given)

    def refusal(self, spent: Spend) -> Crossing | None:
        """The session limit a session that has ``spent`` already reached, if any."""
        cost_limit = self.max_session_cost_usd
        if cost_limit is not None:
            if spent.cost_unknown and self.unknown_cost is UnknownCost.REFUSE:
                return Crossing("max_session_cost_usd", cost_limit, None)
            if spent.cost_usd >= cost_limit:
                return Crossing("max_session_cost_usd", cost_limit, spent.cost_usd)
        token_limit = self.max_session_tokens
        if token_limit is not None and spent.tokens >= token_limit:
            return Crossing("max_session_tokens", token_limit, spent.tokens)
        return None


def _larger(turn: Spend, calls: Spend) -> Spend:
    """The larger of two accounts of the same spending, field by field."""
    unknown = turn.cost_unknown and (calls.cost_unknown or calls.tokens == 0)
    return Spend(max(turn.tokens, calls.tokens), max(turn.cost_usd, calls.cost_usd), unknown)


class SpendingMeter:
    """One turn's live spend against ``limits``, on top of what its session ``before`` spent.

    ``price`` gives the cost of a report's usage when the CLI did not report one (None when
    the model has no price). Not thread-safe: the turn's events arrive on one thread.
    """

    def __init__(
        self,
        limits: SpendingLimits,
        before: Spend,
        price: Callable[[ProviderUsage], float | None],
    ) -> None:
        self._limits = limits
        self._before = before
        self._price = price
        self._reported = Spend()
        self._calls = Spend()

    @property
    def spent(self) -> Spend:
        """What the turn has spent so far, by its reports."""
        return self._reported + self._calls

    def observe(self, report: UsageReport) -> Crossing | None:
        """Count ``report``; return the first limit the turn has now crossed, if any."""
        spend = self._spend(report)
        if report.scope is UsageScope.TURN:
            # The turn report replaces the calls before it; an interrupted turn's report can
            # say less than its calls did, and what was spent stays spent.
            self._reported = self._reported + _larger(spend, self._calls)
            self._calls = Spend()
        else:
            self._calls = self._calls + spend
        return self._crossing()

    def _spend(self, report: UsageReport) -> Spend:
        usage = report.usage
        tokens = usage.tokens.input_tokens + usage.tokens.output_tokens
        cost = report.cost_usd if report.cost_usd is not None else usage.total_cost_usd
        if cost is None:
            cost = self._price(usage)
        if cost is None:
            unknown = tokens > 0 or not usage.increment_known
            return Spend(tokens, 0.0, unknown)
        return Spend(tokens, cost)

    def _crossing(self) -> Crossing | None:
        limits = self._limits
        turn = self.spent
        session = self._before + turn
        refuse_unknown = limits.unknown_cost is UnknownCost.REFUSE
        for name, limit, spent in (
            ("max_cost_usd", limits.max_cost_usd, turn),
            ("max_session_cost_usd", limits.max_session_cost_usd, session),
        ):
            if limit is None:
                continue
            if spent.cost_unknown and refuse_unknown:
                return Crossing(name, limit, None)
            if spent.cost_usd > limit:
                return Crossing(name, limit, spent.cost_usd)
        for name, limit, spent in (
            ("max_tokens", limits.max_tokens, turn),
            ("max_session_tokens", limits.max_session_tokens, session),
        ):
            if limit is not None and spent.tokens > limit:
                return Crossing(name, limit, spent.tokens)
        return None
