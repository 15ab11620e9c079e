"""interrupt, close and concurrent run from other threads, with real threads and real waits."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from agentshim.core.clock import SystemClock
from agentshim.core.conversation import Conversation, ConversationSpec, TurnStop
from agentshim.core.errors import (
    FailureKind,
    SessionStateError,
    TurnCancelledError,
    TurnFailedError,
)
from agentshim.core.events import AgentEvent, TurnInterrupted
from agentshim.core.profile import ProviderProfile
from agentshim.core.retry import RetryPolicy
from agentshim.core.session_policy import SessionPolicy
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.session import Session
from agentshim.testing.conversation import FakeOutcome, FakeTransport

from .helpers import HANG_GUARD_S, ContendedLeases, TurnOnThread, second_turn_waits_for_first, spec


def session_on(transport: FakeTransport, **kwargs: object) -> Session:
    return Session(transport, spec(), clock=SystemClock(), **kwargs)  # type: ignore[arg-type]


def test_interrupt_during_a_retry_wait_ends_it_at_once() -> None:
    transport = FakeTransport([FakeOutcome.failure(FailureKind.TRANSIENT, detail="overloaded")])
    # An hour's retry wait: only the interrupt can end it within the join's minute.
    session = session_on(transport, policy=SessionPolicy(retry=RetryPolicy(delays=(3600,))))
    runner = TurnOnThread(session, session.prepare_turn("go"))
    assert runner.waiting.wait(HANG_GUARD_S)
    session.interrupt()
    runner.join()
    assert isinstance(runner.error, TurnFailedError)
    assert runner.error.kind is FailureKind.TRANSIENT
    assert len(transport.calls) == 1


def test_interrupt_before_the_turn_starts_raises_turn_cancelled() -> None:
    transport = FakeTransport([FakeOutcome.success()])
    session = session_on(transport)
    ticket = session.prepare_turn("go")
    session.interrupt()
    with pytest.raises(TurnCancelledError):
        session.turn(ticket)
    assert transport.calls == []
    assert session.turn("again").result.text == "ok"


def test_interrupt_ends_a_running_turn_with_an_interrupted_result() -> None:
    transport = FakeTransport([FakeOutcome.hang(), FakeOutcome.success("next")])
    session = session_on(transport)
    runner = TurnOnThread(session, session.prepare_turn("long"))
    assert runner.started.wait(HANG_GUARD_S)
    session.interrupt()
    runner.join()
    assert runner.turn is not None
    assert runner.turn.result.interrupted
    assert any(isinstance(event, TurnInterrupted) for event in runner.events)
    assert session.turn("more").result.text == "next"
    assert len(transport.conversations) == 1


class LateStartTransport:
    """Wraps a FakeTransport so an interrupt lands just before each turn really starts."""

    def __init__(self, inner: FakeTransport) -> None:
        self.inner = inner
        self.session: Session | None = None

    @property
    def profile(self) -> ProviderProfile:
        return self.inner.profile

    def open(self, spec: ConversationSpec) -> Conversation:
        return LateStartConversation(self, self.inner.open(spec))


class LateStartConversation:
    def __init__(self, transport: LateStartTransport, inner: Conversation) -> None:
        self.transport = transport
        self.inner = inner

    @property
    def session_id(self) -> str | None:
        return self.inner.session_id

    def turn(
        self,
        request: TurnRequest,
        emit: Callable[[AgentEvent], None],
        stop: TurnStop | None = None,
    ) -> TurnResult:
        assert self.transport.session is not None
        # The inner conversation is not running yet: the interrupt lands before its turn.
        self.transport.session.interrupt()
        return self.inner.turn(request, emit, stop)

    def interrupt(self) -> None:
        self.inner.interrupt()

    def close(self) -> None:
        self.inner.close()


def test_an_interrupt_that_arrives_before_the_conversation_runs_is_not_lost() -> None:
    # A lost interrupt would leave the hang to end at its limit, in TurnTimeoutError.
    inner = FakeTransport([FakeOutcome.hang(limit=HANG_GUARD_S), FakeOutcome.success("next")])
    transport = LateStartTransport(inner)
    session = Session(transport, spec(), clock=SystemClock())
    transport.session = session
    with pytest.raises(TurnCancelledError):
        session.turn("long")
    assert inner.calls == [], "the stopped turn ran anyway"
    assert inner.conversations[0].cancelled_before_start == 1


def test_a_concurrent_run_raises_session_state_error() -> None:
    transport = FakeTransport([FakeOutcome.hang(), FakeOutcome.success()])
    session = session_on(transport)
    runner = TurnOnThread(session, session.prepare_turn("long"))
    assert runner.started.wait(HANG_GUARD_S)
    second = session.prepare_turn("second")
    with pytest.raises(SessionStateError, match="already running"):
        session.turn(second)
    assert not session.adopt("conv-other")
    with pytest.raises(SessionStateError, match="while a turn runs"):
        session.release()
    session.interrupt()
    runner.join()
    assert runner.turn is not None
    assert len(transport.calls) == 1
    assert session.session_id is None, "adopt() changed a session that was running"
    assert not transport.conversations[0].closed, "release() closed the running conversation"


def test_close_from_another_thread_interrupts_and_closes() -> None:
    transport = FakeTransport([FakeOutcome.hang(), FakeOutcome.success()])
    session = session_on(transport)
    runner = TurnOnThread(session, session.prepare_turn("long"))
    assert runner.started.wait(HANG_GUARD_S)
    closer = threading.Thread(target=session.close)
    closer.start()
    closer.join(HANG_GUARD_S)
    assert not closer.is_alive()
    # Not interrupted, the hang would end at its limit in TurnTimeoutError, not a result.
    runner.join()
    assert runner.turn is not None
    assert runner.turn.result.interrupted
    assert session.closed
    assert transport.conversations[0].closed
    with pytest.raises(SessionStateError):
        session.prepare_turn("after close")


def test_two_sessions_never_run_turns_in_one_conversation_at_once() -> None:
    leases = ContendedLeases()
    transport = FakeTransport([FakeOutcome.hang(), FakeOutcome.success("second")])
    first = session_on(transport, leases=leases)
    second = session_on(transport, leases=leases)
    assert first.adopt("conv-shared")
    assert second.adopt("conv-shared")
    assert second_turn_waits_for_first(transport, first, second, leases).result.text == "second"
    assert len(leases) == 0


def test_a_turn_waiting_for_the_conversation_lock_can_be_interrupted() -> None:
    leases = ContendedLeases()
    transport = FakeTransport([FakeOutcome.hang(), FakeOutcome.success()])
    first = session_on(transport, leases=leases)
    second = session_on(transport, leases=leases)
    first.adopt("conv-shared")
    second.adopt("conv-shared")
    one = TurnOnThread(first, first.prepare_turn("one"))
    assert one.started.wait(HANG_GUARD_S)
    two = TurnOnThread(second, second.prepare_turn("two"))
    assert leases.refused.wait(HANG_GUARD_S), "the second turn never asked for the conversation"
    # It waits in line behind a turn that hangs: only the interrupt ends its wait.
    second.interrupt()
    two.join()
    assert isinstance(two.error, TurnCancelledError)
    first.interrupt()
    one.join()
    assert len(transport.calls) == 1
