"""The session-layer test doubles do what their documentation says."""

from __future__ import annotations

import pytest

from agentshim.core.errors import (
    FailureKind,
    SessionResumeError,
    TurnFailedError,
    TurnTimeoutError,
)
from agentshim.core.events import AgentEvent, Reasoning, SessionStarted, UsageReport
from agentshim.core.turn import TurnRequest
from agentshim.core.usage import TokenUsage
from agentshim.state.checkpoints import Checkpoint
from agentshim.testing.checkpoints import CheckpointOp, FakeCheckpointStore
from agentshim.testing.conversation import FakeCall, FakeOutcome, FakeTransport

from .helpers import spec


def test_a_script_function_sees_each_call_and_picks_its_outcome() -> None:
    seen: list[tuple[str, str | None]] = []

    def script(call: FakeCall) -> FakeOutcome:
        seen.append((call.request.prompt, call.session_id))
        return FakeOutcome.success(call.request.prompt.upper())

    conversation = FakeTransport(script).open(spec(resume_session_id="conv-3"))
    result = conversation.turn(TurnRequest("hello"), lambda _: None)
    assert result.text == "HELLO"
    assert seen == [("hello", "conv-3")]


def test_an_outcome_names_the_method_that_built_it() -> None:
    built = [
        FakeOutcome.success(),
        FakeOutcome.failure(FailureKind.TRANSIENT),
        FakeOutcome.resume_refused(),
        FakeOutcome.timeout(),
        FakeOutcome.hang(),
        FakeOutcome.raises(ValueError("boom")),
    ]
    kinds = [outcome.kind for outcome in built]
    assert kinds == ["success", "failure", "resume_refused", "timeout", "hang", "raise"]
    assert repr(built[0]).startswith("FakeOutcome(kind='success'")


def test_a_used_up_script_fails_loudly() -> None:
    conversation = FakeTransport([]).open(spec())
    with pytest.raises(AssertionError, match="script is used up"):
        conversation.turn(TurnRequest("one too many"), lambda _: None)


def test_success_emits_its_events_names_the_conversation_and_reports_usage() -> None:
    events: list[AgentEvent] = []
    usage = TokenUsage(input_tokens=12, output_tokens=3)
    transport = FakeTransport(
        [FakeOutcome.success("hi", usage=usage, events=[Reasoning("hmm")], duration_ms=40)]
    )
    result = transport.open(spec()).turn(TurnRequest("x"), events.append)
    assert SessionStarted("conv-1") in events
    assert Reasoning("hmm") in events
    reports = [e for e in events if isinstance(e, UsageReport)]
    assert reports[0].usage.tokens == usage
    assert result.usage.tokens == usage
    assert result.duration_ms == 40
    assert result.session_id == "conv-1"
    assert transport.calls[0].resumed is False


def test_failures_raise_the_errors_a_real_transport_would() -> None:
    transport = FakeTransport(
        [
            FakeOutcome.failure(FailureKind.USAGE_LIMIT, detail="quota", retry_after=60),
            FakeOutcome.resume_refused(),
            FakeOutcome.timeout(12),
        ]
    )
    conversation = transport.open(spec(resume_session_id="conv-8"))
    with pytest.raises(TurnFailedError) as failed:
        conversation.turn(TurnRequest("a"), lambda _: None)
    assert failed.value.kind is FailureKind.USAGE_LIMIT
    assert failed.value.detail == "quota"
    assert getattr(failed.value, "retry_after", None) == 60
    with pytest.raises(SessionResumeError) as refused:
        conversation.turn(TurnRequest("b"), lambda _: None)
    assert refused.value.session_id == "conv-8"
    with pytest.raises(TurnTimeoutError) as timed_out:
        conversation.turn(TurnRequest("c"), lambda _: None)
    assert timed_out.value.timeout == 12


def test_a_forgotten_hang_times_out_instead_of_blocking_forever() -> None:
    conversation = FakeTransport([FakeOutcome.hang(limit=0.05)]).open(spec())
    with pytest.raises(TurnTimeoutError):
        conversation.turn(TurnRequest("x"), lambda _: None)


def test_the_script_can_be_extended() -> None:
    transport = FakeTransport([FakeOutcome.success("a")])
    transport.extend([FakeOutcome.success("b")])
    assert transport.remaining == 2


def test_the_fake_store_records_calls_and_fails_on_demand() -> None:
    store = FakeCheckpointStore({"k": Checkpoint("conv-1")}, fail_clears=True)
    assert store.load("k") == Checkpoint("conv-1")
    store.save("k", Checkpoint("conv-2"))
    with pytest.raises(OSError, match="Read-only"):
        store.clear("k")
    assert store.ops == [
        CheckpointOp("load", "k", Checkpoint("conv-1")),
        CheckpointOp("save", "k", Checkpoint("conv-2")),
        CheckpointOp("clear", "k"),
    ]
    assert store.of("save") == [CheckpointOp("save", "k", Checkpoint("conv-2"))]
    assert store.saved == {"k": Checkpoint("conv-2")}
