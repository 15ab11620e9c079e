"""One usage recap from a session's events: tokens, reported cost, turns, duration, context.

Which number comes from where is the whole content of :func:`summarize_usage`:

- tokens: a turn that has ended counts with its turn report (the CLI's own total for it);
  a turn still running counts with its per-call reports, so a turn in flight is never
  "0 tokens". Per-call counts are not used once their turn has reported: Claude Code's
  assistant frames carry the output count of the message's start (``output_tokens: 1`` in
  the recordings), which only the turn's total corrects. A CLI that reports only per call
  (Pi) is counted from its calls, one that reports only per turn (Codex) from its turns.
- cost, turns and duration only ever come from what the CLI reported: pricing a call needs a
  rate card, and a figure this library made up here would be one nobody can stand behind.
- context: the latest call's prompt size, against the window the caller passes.

Nothing measured gives None: nothing measured is not zero measured.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from agentshim.core.events import UsageReport, UsageScope
from agentshim.core.usage import CostSource, TokenUsage

__all__ = ["UsageSummary", "summarize_usage"]


@dataclass(frozen=True, slots=True)
class UsageSummary:
    """What a session (or a turn) used, folded from its UsageReport events.

    ``tokens`` in the normalized breakdown (see ``TokenUsage``); ``calls`` how many model
    calls were reported one by one. ``cost_usd``, ``turns`` and ``duration_ms`` are the CLI's
    own figures, None when it reported none. ``context_tokens`` is the prompt size of the
    latest reported call, ``context_window`` the window it is measured against (None when
    unknown), and ``context_fraction`` the one over the other.
    """

    tokens: TokenUsage
    calls: int = 0
    cost_usd: float | None = None
    turns: int | None = None
    duration_ms: int | None = None
    context_tokens: int | None = None
    context_window: int | None = None

    @property
    def context_fraction(self) -> float | None:
        """How full the context window is (0.0 to 1.0 and beyond), or None when unknown."""
        if self.context_tokens is None or not self.context_window:
            return None
        return self.context_tokens / self.context_window


def _reported_cost(report: UsageReport) -> float | None:
    if report.usage.cost_source is not CostSource.REPORTED:
        return None
    return report.cost_usd if report.cost_usd is not None else report.usage.total_cost_usd


def _add(total: float | None, amount: float | None) -> float | None:
    if amount is None:
        return total
    return amount if total is None else total + amount


def summarize_usage(
    events: Iterable[object], *, context_window: int | None = None
) -> UsageSummary | None:
    """Fold the UsageReport events among ``events`` into one recap (see the module's rules).

    Other events are ignored, so a session's whole event list can be passed as it is.
    Returns None when no report measured anything (no known token count, no reported cost).
    """
    tokens = TokenUsage()
    cost: float | None = None
    turns: int | None = None
    duration: int | None = None
    # The running turn's calls, replaced by its turn report when that arrives.
    pending = TokenUsage()
    pending_cost: float | None = None
    measured = False
    calls = 0
    context: int | None = None
    for event in events:
        if not isinstance(event, UsageReport):
            continue
        usage = event.usage
        if event.scope is UsageScope.CALL:
            calls += 1
            if usage.increment_known:
                pending = pending + usage.tokens
                context = usage.tokens.input_tokens
                measured = True
            pending_cost = _add(pending_cost, _reported_cost(event))
            continue
        if usage.increment_known:
            tokens = tokens + usage.tokens
            measured = True
        else:
            # The turn's total is unknown: its calls are the best count there is.
            tokens = tokens + pending
        turn_cost = _reported_cost(event)
        cost = _add(cost, turn_cost if turn_cost is not None else pending_cost)
        turns = (turns or 0) + usage.tokens.turns
        if event.duration_ms is not None:
            duration = (duration or 0) + event.duration_ms
        pending = TokenUsage()
        pending_cost = None
    tokens = tokens + pending
    cost = _add(cost, pending_cost)
    if not measured and cost is None:
        return None
    return UsageSummary(
        tokens=tokens,
        calls=calls,
        cost_usd=cost,
        turns=turns,
        duration_ms=duration,
        context_tokens=context,
        context_window=context_window,
    )
