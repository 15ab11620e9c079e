"""The spending meter: what a turn's usage reports add up to, and when a limit is crossed."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.core.events import UsageReport, UsageScope
from agentshim.core.limits import Spend, SpendingLimits, SpendingMeter, UnknownCost
from agentshim.core.usage import ProviderUsage, TokenUsage


def report(tokens: int, cost: float | None, scope: UsageScope) -> UsageReport:
    usage = ProviderUsage(tokens=TokenUsage(input_tokens=tokens), total_cost_usd=cost)
    return UsageReport(usage, cost, scope)


def unpriced(usage: ProviderUsage) -> float | None:
    return None


reports = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=10_000),
        st.sampled_from([UsageScope.CALL, UsageScope.TURN]),
    ),
    max_size=30,
)


@settings(max_examples=200, deadline=None)
@given(reports, st.integers(min_value=0, max_value=50_000))
def test_spent_never_goes_down_and_the_first_crossing_is_reported_once_over(
    steps: list[tuple[int, UsageScope]], limit: int
) -> None:
    meter = SpendingMeter(SpendingLimits(max_tokens=limit), Spend(), unpriced)
    before = 0
    turn_reports = 0
    calls_since = 0
    for tokens, scope in steps:
        crossing = meter.observe(report(tokens, 0.0, scope))
        spent = meter.spent.tokens
        assert spent >= before, "spending went down"
        if scope is UsageScope.TURN:
            turn_reports += tokens
            calls_since = 0
        else:
            calls_since += tokens
        # Never less than either account: turn reports so far plus the calls after them.
        assert spent >= turn_reports + calls_since
        assert (crossing is not None) == (spent > limit)
        if crossing is not None:
            assert (crossing.limit_name, crossing.limit, crossing.spent) == (
                "max_tokens",
                limit,
                spent,
            )
        before = spent


def test_a_turn_report_replaces_the_calls_it_covers() -> None:
    meter = SpendingMeter(SpendingLimits(max_tokens=10**9), Spend(), unpriced)
    meter.observe(report(100, 0.1, UsageScope.CALL))
    meter.observe(report(150, 0.2, UsageScope.CALL))
    meter.observe(report(250, 0.5, UsageScope.TURN))
    assert meter.spent == Spend(250, 0.5)


def test_the_session_total_counts_what_came_before() -> None:
    limits = SpendingLimits(max_session_cost_usd=1.0)
    meter = SpendingMeter(limits, Spend(10, 0.9), unpriced)
    crossing = meter.observe(report(5, 0.2, UsageScope.CALL))
    assert crossing is not None
    assert crossing.limit_name == "max_session_cost_usd"
    assert crossing.spent is not None
    assert abs(crossing.spent - 1.1) < 1e-9


def test_unpriced_usage_under_a_cost_limit_is_refused_or_allowed_as_asked() -> None:
    refusing = SpendingMeter(SpendingLimits(max_cost_usd=1.0), Spend(), unpriced)
    crossing = refusing.observe(report(5, None, UsageScope.CALL))
    assert crossing is not None
    assert crossing.spent is None
    allowing = SpendingMeter(
        SpendingLimits(max_cost_usd=1.0, unknown_cost=UnknownCost.ALLOW), Spend(), unpriced
    )
    assert allowing.observe(report(5, None, UsageScope.CALL)) is None
    assert allowing.spent.cost_unknown


def test_a_session_at_its_limit_is_refused_and_one_below_is_not() -> None:
    limits = SpendingLimits(max_session_tokens=100)
    assert limits.refusal(Spend(99)) is None
    refused = limits.refusal(Spend(100))
    assert refused is not None
    assert refused.limit_name == "max_session_tokens"
