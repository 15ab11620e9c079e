"""RetryPolicy validation and delays, and how failures are classified for the policy."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    CliTimeoutError,
    FailureKind,
    InvalidRequestError,
    SessionResumeError,
    TurnCancelledError,
    TurnFailedError,
)
from agentshim.core.session_policy import (
    FailureOutcome,
    Prepare,
    RetryPolicy,
    SessionPolicy,
    Succeeded,
    classify_failure,
)


@pytest.mark.parametrize(
    "kwargs",
    [
        {"delays": (30, -1)},
        {"delays": (math.inf,)},
        {"delays": (math.nan,)},
        {"jitter": 1.0},
        {"jitter": -0.1},
        {"jitter": math.nan},
        {"max_hint": -5},
        {"delays": "30"},
        {"delays": ("30",)},
        {"jitter": "0.1"},
        {"max_hint": None},
    ],
)
def test_invalid_settings_are_refused(kwargs: dict[str, object]) -> None:
    with pytest.raises(InvalidRequestError, match="RetryPolicy") as caught:
        RetryPolicy(**kwargs)  # type: ignore[arg-type]
    assert caught.value.field == f"RetryPolicy.{next(iter(kwargs))}"


def test_the_defaults_and_never() -> None:
    assert RetryPolicy().delays == (30.0, 60.0, 120.0, 240.0, 480.0)
    assert RetryPolicy().max_retries == 5
    assert RetryPolicy.never().delay(0) is None
    assert RetryPolicy(delays=[1, 2]).delays == (1.0, 2.0)


def test_delays_run_out() -> None:
    policy = RetryPolicy(delays=(1, 2))
    assert [policy.delay(n) for n in range(3)] == [1.0, 2.0, None]
    with pytest.raises(InvalidRequestError, match="negative"):
        policy.delay(-1)


@given(
    base=st.floats(0, 1e4),
    jitter=st.floats(0, 0.99),
    sample=st.floats(0, 1, exclude_max=True),
)
def test_jitter_stays_within_its_fraction(base: float, jitter: float, sample: float) -> None:
    wait = RetryPolicy(delays=(base,), jitter=jitter).delay(0, sample=sample)
    assert wait is not None
    assert base * (1 - jitter) - 1e-6 <= wait <= base * (1 + jitter) + 1e-6


def test_without_jitter_the_sample_changes_nothing() -> None:
    policy = RetryPolicy(delays=(10,))
    assert {policy.delay(0, sample=s) for s in (0.0, 0.3, 0.99)} == {10.0}


def test_a_retry_hint_sets_a_floor_and_a_far_one_gives_up() -> None:
    policy = RetryPolicy(delays=(10,), max_hint=100)
    assert policy.delay(0, retry_after=3) == 10.0
    assert policy.delay(0, retry_after=42) == 42.0
    assert policy.delay(0, retry_after=101) is None
    assert policy.delay(0, retry_after=math.inf) is None
    assert policy.delay(0, retry_after=math.nan) == 10.0


def test_idle_release_must_be_a_sane_number() -> None:
    with pytest.raises(InvalidRequestError, match="idle_release_after"):
        SessionPolicy(idle_release_after=-1)
    with pytest.raises(InvalidRequestError, match=r"SessionPolicy\.retry"):
        SessionPolicy(retry=(30, 60))  # type: ignore[arg-type]


def test_an_event_that_cannot_happen_is_a_value_error() -> None:
    policy = SessionPolicy()
    with pytest.raises(ValueError, match="Succeeded cannot happen while the session is idle"):
        policy.step(policy.initial(), Succeeded(0.0))
    state, _ = policy.step(policy.initial(), Prepare(0.0))
    assert state == policy.initial()


@pytest.mark.parametrize(
    ("error", "outcome"),
    [
        (SessionResumeError(("cli",), 1, session_id="s"), FailureOutcome.RESUME_REFUSED),
        (CliExitError(("cli",), 1, kind=FailureKind.TRANSIENT), FailureKind.TRANSIENT),
        (TurnFailedError("x", kind=FailureKind.USAGE_LIMIT), FailureKind.USAGE_LIMIT),
        (TurnFailedError("x", kind=FailureKind.AUTH), FailureKind.AUTH),
        (TurnFailedError("x", kind=FailureKind.SCHEMA), FailureKind.SCHEMA),
        (
            TurnFailedError("x", kind=FailureKind.CONTEXT_OVERFLOW),
            FailureKind.CONTEXT_OVERFLOW,
        ),
        (TurnFailedError("x"), FailureKind.OTHER),
        (CliTimeoutError(("cli",), 5.0), FailureOutcome.TIMEOUT),
        (TurnCancelledError("stop"), FailureOutcome.INTERRUPTED),
        (AgentShimError("other"), FailureOutcome.ERROR),
        (RuntimeError("bug"), FailureOutcome.ERROR),
    ],
)
def test_failures_are_classified_by_base_type(
    error: BaseException, outcome: FailureKind | FailureOutcome
) -> None:
    assert classify_failure(error) is outcome
