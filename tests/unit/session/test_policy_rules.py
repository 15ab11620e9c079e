"""One test per rule of the recovery policy, through Session, FakeTransport and FakeClock."""

from __future__ import annotations

import pytest

from agentshim.core.errors import (
    AgentShimError,
    ContinuityError,
    FailureKind,
    SessionResumeError,
    SessionStateError,
    TurnFailedError,
    TurnTimeoutError,
)
from agentshim.core.profile import RenewalBudget
from agentshim.core.retry import RetryPolicy
from agentshim.core.session_policy import Continuity
from agentshim.core.usage import TokenUsage
from agentshim.testing.conversation import FakeOutcome

from .helpers import Rig

ok = FakeOutcome.success


class TestTransientFailure:
    def test_is_retried_in_place_after_the_first_delay(self) -> None:
        rig = Rig([ok("a"), FakeOutcome.failure(FailureKind.TRANSIENT), ok("b")])
        rig.run()
        turn = rig.run()
        assert turn.result.text == "b"
        assert turn.continuity is Continuity.CONTINUED
        assert rig.clock.waits == [30.0]
        assert rig.resumed_ids == [None, "conv-1", "conv-1"]
        assert len(rig.transport.conversations) == 1

    def test_waits_every_delay_in_turn_then_fails_keeping_the_conversation(self) -> None:
        transient = FakeOutcome.failure(FailureKind.TRANSIENT, detail="overloaded")
        rig = Rig([ok("a"), *[transient] * 3], retry=RetryPolicy(delays=(1, 2)))
        rig.run()
        with pytest.raises(TurnFailedError, match="overloaded") as raised:
            rig.run()
        assert raised.value.kind is FailureKind.TRANSIENT
        assert rig.clock.waits == [1.0, 2.0]
        assert len(rig.transport.calls) == 4
        assert rig.session.session_id == "conv-1"
        assert rig.checkpoint == "conv-1"

    def test_the_default_schedule_is_thirty_to_four_hundred_eighty_seconds(self) -> None:
        rig = Rig([FakeOutcome.failure(FailureKind.TRANSIENT)] * 6)
        with pytest.raises(TurnFailedError):
            rig.run()
        assert rig.clock.waits == [30.0, 60.0, 120.0, 240.0, 480.0]

    def test_a_providers_retry_hint_lengthens_the_wait(self) -> None:
        hinted = FakeOutcome.failure(FailureKind.TRANSIENT, retry_after=95.0)
        rig = Rig([hinted, ok()], retry=RetryPolicy(delays=(10,)))
        rig.run()
        assert rig.clock.waits == [95.0]

    def test_a_hint_beyond_the_longest_acceptable_wait_fails_at_once(self) -> None:
        hinted = FakeOutcome.failure(FailureKind.TRANSIENT, retry_after=7200.0)
        rig = Rig([hinted, ok()], retry=RetryPolicy(delays=(10,), max_hint=600))
        with pytest.raises(TurnFailedError):
            rig.run()
        assert rig.clock.waits == []
        assert rig.transport.remaining == 1


class TestResumeRefused:
    def test_on_a_resumed_turn_replays_once_in_a_fresh_conversation(self) -> None:
        rig = Rig(
            [FakeOutcome.resume_refused(), ok("fresh", session_id="conv-new")],
            holding="conv-old",
        )
        turn = rig.run()
        assert turn.continuity is Continuity.REPLACED
        assert turn.session_id == "conv-new"
        assert turn.result.text == "fresh"
        assert rig.resumed_ids == ["conv-old", None]
        assert [spec.resume_session_id for spec in rig.transport.opened] == ["conv-old", None]
        assert rig.transport.conversations[0].closed
        assert rig.checkpoint == "conv-new"
        assert rig.session.session_id == "conv-new"

    def test_the_replacement_is_tried_only_once(self) -> None:
        rig = Rig(
            [
                FakeOutcome.resume_refused(),
                FakeOutcome.failure(FailureKind.OTHER, session_id="conv-2"),
            ],
            holding="conv-old",
        )
        with pytest.raises(TurnFailedError):
            rig.run()
        assert rig.resumed_ids == ["conv-old", None]

    @pytest.mark.parametrize("how", ["strict", "pinned"])
    def test_a_strict_or_pinned_turn_fails_and_keeps_the_conversation(self, how: str) -> None:
        rig = Rig([FakeOutcome.resume_refused(), ok()], holding="conv-old")
        with pytest.raises(SessionResumeError):
            rig.run(expect="conv-old" if how == "strict" else None, pin=how == "pinned")
        assert rig.session.session_id == "conv-old"
        assert rig.checkpoint == "conv-old"
        assert rig.transport.remaining == 1

    def test_on_a_turn_that_opened_its_own_conversation_forgets_without_replay(self) -> None:
        rig = Rig([FakeOutcome.resume_refused(), ok()])
        with pytest.raises(SessionResumeError):
            rig.run()
        assert rig.resumed_ids == [None]
        assert rig.session.session_id is None
        assert rig.checkpoint is None
        assert rig.transport.remaining == 1


class TestUnclassifiedFailure:
    def test_of_a_resumed_turn_forgets_the_conversation(self) -> None:
        rig = Rig([FakeOutcome.failure(FailureKind.OTHER), ok("cold")], holding="conv-old")
        with pytest.raises(TurnFailedError):
            rig.run()
        assert rig.session.session_id is None
        assert rig.checkpoint is None
        assert rig.session.last_turn_session_id == "conv-old"
        turn = rig.run()
        assert turn.continuity is Continuity.RESET
        assert rig.resumed_ids == ["conv-old", None]

    def test_of_a_pinned_turn_keeps_it(self) -> None:
        rig = Rig([FakeOutcome.failure(FailureKind.OTHER)], holding="conv-old")
        with pytest.raises(TurnFailedError):
            rig.run(pin=True)
        assert rig.session.session_id == "conv-old"
        assert rig.checkpoint == "conv-old"

    def test_of_a_fresh_turn_keeps_what_it_named(self) -> None:
        rig = Rig([FakeOutcome.failure(FailureKind.OTHER, session_id="conv-9")])
        with pytest.raises(TurnFailedError):
            rig.run()
        assert rig.session.session_id == "conv-9"
        assert rig.checkpoint == "conv-9"


class TestContextOverflow:
    def test_forgets_the_conversation(self) -> None:
        rig = Rig([FakeOutcome.failure(FailureKind.CONTEXT_OVERFLOW)], holding="conv-old")
        with pytest.raises(TurnFailedError) as raised:
            rig.run()
        assert raised.value.kind is FailureKind.CONTEXT_OVERFLOW
        assert rig.session.session_id is None
        assert rig.checkpoint is None
        assert rig.transport.conversations[0].closed

    @pytest.mark.parametrize("how", ["strict", "pinned"])
    def test_keeps_it_for_a_strict_or_pinned_turn(self, how: str) -> None:
        rig = Rig([FakeOutcome.failure(FailureKind.CONTEXT_OVERFLOW)], holding="conv-old")
        with pytest.raises(TurnFailedError):
            rig.run(expect="conv-old" if how == "strict" else None, pin=how == "pinned")
        assert rig.session.session_id == "conv-old"
        assert rig.checkpoint == "conv-old"


@pytest.mark.parametrize(
    ("outcome", "error"),
    [
        (FakeOutcome.failure(FailureKind.USAGE_LIMIT), TurnFailedError),
        (FakeOutcome.failure(FailureKind.AUTH), TurnFailedError),
        (FakeOutcome.failure(FailureKind.SCHEMA), TurnFailedError),
        (FakeOutcome.timeout(300), TurnTimeoutError),
        (FakeOutcome.raises(AgentShimError("the transport broke")), AgentShimError),
        (FakeOutcome.raises(KeyError("a bug")), KeyError),
    ],
    ids=["usage_limit", "auth", "schema", "timeout", "error", "foreign_error"],
)
def test_other_failures_fail_keeping_the_conversation_and_checkpoint(
    outcome: FakeOutcome, error: type[BaseException]
) -> None:
    rig = Rig([outcome, ok("later")], holding="conv-old")
    with pytest.raises(error):
        rig.run()
    assert rig.session.session_id == "conv-old"
    assert rig.checkpoint == "conv-old"
    assert rig.clock.waits == []
    turn = rig.run()
    assert turn.continuity is Continuity.CONTINUED
    assert rig.resumed_ids == ["conv-old", "conv-old"]
    assert len(rig.transport.conversations) == 1


class TestSuccess:
    def test_keeps_the_conversation_and_saves_the_checkpoint_with_usage(self) -> None:
        usage = TokenUsage(input_tokens=50, output_tokens=5)
        rig = Rig([ok("hi", session_id="conv-7", usage=usage)])
        turn = rig.run()
        assert turn.continuity is Continuity.CONTINUED
        assert turn.session_id == "conv-7"
        saved = rig.store.saved["user-1"]
        assert saved.session_id == "conv-7"
        assert saved.turns == 1
        assert saved.usage is not None
        assert saved.usage.tokens == usage

    def test_the_next_turn_resumes_with_the_saved_usage_as_baseline(self) -> None:
        usage = TokenUsage(input_tokens=50, output_tokens=5)
        rig = Rig([ok(usage=usage), ok()])
        rig.run()
        rig.session.release()
        rig.run()
        reopened = rig.transport.opened[1]
        assert reopened.resume_session_id == "conv-1"
        assert reopened.previous_usage is not None
        assert reopened.previous_usage.tokens == usage

    def test_the_renewal_budget_of_turns_retires_the_conversation(self) -> None:
        rig = Rig([ok(), ok(), ok()], renewal=RenewalBudget(max_turns=2))
        first, second = rig.run(), rig.run()
        assert (first.continuity, second.continuity) == (Continuity.CONTINUED,) * 2
        assert second.session_id == "conv-1"
        assert rig.session.session_id is None
        assert rig.checkpoint is None
        third = rig.run()
        assert third.continuity is Continuity.RESET
        assert third.session_id == "conv-2"
        assert rig.resumed_ids == [None, "conv-1", None]

    def test_a_turn_with_too_many_input_tokens_retires_it(self) -> None:
        big = ok(usage=TokenUsage(input_tokens=900_000))
        rig = Rig([big, ok()], renewal=RenewalBudget(max_turn_input_tokens=800_000))
        rig.run()
        assert rig.session.session_id is None
        assert rig.run().continuity is Continuity.RESET

    def test_a_turn_that_took_too_long_retires_it(self) -> None:
        rig = Rig([ok(duration_ms=700_000), ok()], renewal=RenewalBudget(max_turn_duration=600))
        rig.run()
        assert rig.session.session_id is None

    def test_a_pinned_turn_is_not_retired(self) -> None:
        rig = Rig([ok(), ok()], renewal=RenewalBudget(max_turns=1))
        rig.run(pin=True)
        assert rig.session.session_id == "conv-1"
        rig.run()
        assert rig.session.session_id is None

    def test_a_strict_turn_is_not_retired(self) -> None:
        rig = Rig([ok(), ok()], renewal=RenewalBudget(max_turns=1), holding="conv-old")
        rig.run(expect="conv-old")
        assert rig.session.session_id == "conv-old"
        assert rig.checkpoint == "conv-old"
        rig.run()
        assert rig.session.session_id is None
        assert rig.checkpoint is None

    def test_an_interrupted_success_counts_no_turn_toward_renewal(self) -> None:
        rig = Rig([ok(interrupted=True), ok(interrupted=True), ok()], renewal=RenewalBudget(1))
        first = rig.run()
        assert first.result.interrupted
        rig.run()
        assert rig.session.session_id == "conv-1"
        assert rig.store.saved["user-1"].turns == 0
        rig.run()
        assert rig.session.session_id is None


class TestIdleRelease:
    def test_an_idle_conversation_is_closed_at_prepare_and_reopened_by_id(self) -> None:
        rig = Rig([ok(), ok()], idle_release_after=60)
        rig.run()
        first = rig.transport.conversations[0]
        rig.clock.advance(61)
        ticket = rig.session.prepare_turn("later")
        assert first.closed
        assert rig.session.session_id == "conv-1"
        assert rig.checkpoint == "conv-1"
        turn = rig.session.turn(ticket)
        assert turn.continuity is Continuity.CONTINUED
        assert [spec.resume_session_id for spec in rig.transport.opened] == [None, "conv-1"]

    def test_a_conversation_used_recently_stays_open(self) -> None:
        rig = Rig([ok(), ok()], idle_release_after=60)
        rig.run()
        rig.clock.advance(59)
        rig.run()
        assert len(rig.transport.opened) == 1
        assert not rig.transport.conversations[0].closed


class TestNamedConversation:
    def test_a_failure_that_names_a_new_conversation_adopts_it_first(self) -> None:
        rig = Rig([FakeOutcome.failure(FailureKind.AUTH, session_id="conv-5"), ok()])
        with pytest.raises(TurnFailedError):
            rig.run()
        assert rig.session.session_id == "conv-5"
        assert rig.checkpoint == "conv-5"
        rig.run()
        assert rig.resumed_ids == [None, "conv-5"]

    def test_a_transient_failure_naming_it_retries_in_that_conversation(self) -> None:
        named = FakeOutcome.failure(FailureKind.TRANSIENT, session_id="conv-5")
        rig = Rig([named, ok()])
        rig.run()
        assert rig.resumed_ids == [None, "conv-5"]


class TestStrictTurns:
    def test_a_strict_turn_on_another_conversation_is_refused_before_anything_runs(
        self,
    ) -> None:
        rig = Rig([ok()], holding="conv-old")
        with pytest.raises(ContinuityError) as raised:
            rig.session.prepare_turn("go", expect_session_id="conv-other")
        assert (raised.value.expected, raised.value.actual) == ("conv-other", "conv-old")
        assert rig.transport.calls == []

    def test_a_strict_turn_whose_conversation_changed_after_prepare_is_refused(self) -> None:
        rig = Rig([ok()], holding="conv-old")
        ticket = rig.session.prepare_turn("go", expect_session_id="conv-old")
        assert rig.session.adopt("conv-else")
        with pytest.raises(ContinuityError):
            rig.session.turn(ticket)
        assert rig.transport.calls == []

    def test_a_strict_turn_with_no_conversation_is_refused(self) -> None:
        rig = Rig([ok()])
        with pytest.raises(ContinuityError):
            rig.session.prepare_turn("go", expect_session_id="conv-1")


def test_a_closed_session_refuses_turns() -> None:
    rig = Rig([ok()])
    prepared = rig.session.prepare_turn("before close")
    rig.session.close()
    with pytest.raises(SessionStateError, match="closed"):
        rig.session.prepare_turn("go")
    with pytest.raises(SessionStateError, match="closed"):
        rig.session.turn(prepared)
    assert rig.transport.calls == []
    assert rig.transport.opened == []
