"""Session behaviour outside the policy table: tickets, checkpoints at start, events, adopt, close."""

from __future__ import annotations

import threading
from dataclasses import replace

import pytest

from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import (
    FailureKind,
    InvalidRequestError,
    InvalidSessionIdError,
    NoRunningTurnError,
    ProviderCapabilityError,
    SessionStateError,
    TurnFailedError,
)
from agentshim.core.events import AgentEvent, AssistantText, Lifecycle, RunStarted
from agentshim.core.permissions import ApprovalPolicy, NativeMode, NativePermissions
from agentshim.core.profile import RenewalBudget
from agentshim.core.retry import RetryPolicy
from agentshim.core.session_policy import Continuity, SessionPolicy
from agentshim.core.usage import ProviderUsage, TokenUsage
from agentshim.session import Session
from agentshim.state.checkpoints import Checkpoint
from agentshim.testing import RecordingEventHandler
from agentshim.testing.checkpoints import FakeCheckpointStore
from agentshim.testing.clock import FakeClock, SequentialIds
from agentshim.testing.conversation import FAKE_PROFILE, FakeOutcome, FakeTransport

from .helpers import HANG_GUARD_S, KEY, Rig, TurnOnThread, spec

ok = FakeOutcome.success


def make(transport: FakeTransport, **kwargs: object) -> Session:
    return Session(transport, spec(), clock=FakeClock(), ids=SequentialIds(), **kwargs)  # type: ignore[arg-type]


class TestTickets:
    def test_prepare_names_the_turn_before_it_runs(self) -> None:
        rig = Rig([ok()])
        ticket = rig.session.prepare_turn("hello")
        assert ticket.turn_id == "turn_1"
        assert rig.transport.calls == []
        turn = rig.session.turn(ticket)
        assert turn.turn_id == "turn_1"
        assert rig.transport.calls[0].request.prompt == "hello"

    def test_a_ticket_runs_only_once(self) -> None:
        rig = Rig([ok(), ok()])
        ticket = rig.session.prepare_turn("once")
        rig.session.turn(ticket)
        with pytest.raises(SessionStateError, match="stale or was already run"):
            rig.session.turn(ticket)
        assert len(rig.transport.calls) == 1

    def test_a_newer_ticket_supersedes_an_older_one(self) -> None:
        rig = Rig([ok(), ok()])
        old = rig.session.prepare_turn("old")
        new = rig.session.prepare_turn("new")
        with pytest.raises(SessionStateError):
            rig.session.turn(old)
        assert rig.session.turn(new).result.text == "ok"
        assert [call.request.prompt for call in rig.transport.calls] == ["new"]

    def test_a_ticket_of_another_session_is_refused(self) -> None:
        one, two = Rig([ok()]), Rig([ok()])
        ticket = one.session.prepare_turn("mine")
        two.session.prepare_turn("theirs")
        with pytest.raises(SessionStateError):
            two.session.turn(ticket)


class TestCheckpointAtConstruction:
    def test_a_session_resumes_the_saved_conversation(self) -> None:
        usage = ProviderUsage(tokens=TokenUsage(input_tokens=9), provider="fake")
        store = FakeCheckpointStore({KEY: Checkpoint("conv-saved", usage, turns=4)})
        transport = FakeTransport([ok()])
        session = make(transport, checkpoints=store, checkpoint_key=KEY)
        assert session.session_id == "conv-saved"
        session.turn("again")
        assert transport.opened[0].resume_session_id == "conv-saved"
        assert transport.opened[0].previous_usage == usage
        assert store.saved[KEY].turns == 5

    def test_the_saved_turn_count_keeps_counting_toward_renewal(self) -> None:
        store = FakeCheckpointStore({KEY: Checkpoint("conv-saved", turns=2)})
        transport = FakeTransport([ok()])
        session = make(
            transport,
            checkpoints=store,
            checkpoint_key=KEY,
            policy=SessionPolicy(renewal=RenewalBudget(max_turns=3)),
        )
        session.turn("third")
        assert session.session_id is None
        assert KEY not in store.saved

    def test_an_explicit_resume_id_wins_and_is_saved(self) -> None:
        store = FakeCheckpointStore({KEY: Checkpoint("conv-saved")})
        transport = FakeTransport([ok()])
        session = Session(
            transport,
            spec(resume_session_id="conv-explicit"),
            clock=FakeClock(),
            checkpoints=store,
            checkpoint_key=KEY,
        )
        assert session.session_id == "conv-explicit"
        assert store.saved[KEY].session_id == "conv-explicit"
        session.turn("go")
        assert transport.opened[0].resume_session_id == "conv-explicit"

    def test_a_store_needs_a_key_and_the_key_is_validated(self) -> None:
        with pytest.raises(InvalidRequestError, match="together") as caught:
            make(FakeTransport(), checkpoints=FakeCheckpointStore())
        assert caught.value.field == "checkpoint_key"
        with pytest.raises(InvalidRequestError, match="checkpoint key") as caught:
            make(FakeTransport(), checkpoints=FakeCheckpointStore(), checkpoint_key="../up")
        assert caught.value.field == "checkpoint_key"

    def test_a_failing_store_costs_durability_not_the_turn(self) -> None:
        log: list[str] = []
        store = FakeCheckpointStore(fail_saves=True)
        session = make(
            FakeTransport([ok("kept")]), checkpoints=store, checkpoint_key=KEY, log=log.append
        )
        turn = session.turn("go")
        assert turn.result.text == "kept"
        assert any("could not save checkpoint" in line for line in log)

    def test_a_provider_that_cannot_resume_refuses_an_explicit_resume_id(self) -> None:
        profile = replace(FAKE_PROFILE, supports_resume=False)
        with pytest.raises(ProviderCapabilityError, match="cannot resume"):
            Session(FakeTransport(profile=profile), spec(resume_session_id="conv-1"))


class TestEvents:
    def test_handlers_then_on_event_receive_every_event_in_order(self) -> None:
        recorder = RecordingEventHandler()
        seen: list[tuple[str, AgentEvent]] = []
        transport = FakeTransport([ok("hello")])
        session = make(transport, event_handlers=[recorder])
        session.turn("go", on_event=lambda e: seen.append(("turn", e)))
        assert [event for _, event in seen] == recorder.events
        assert isinstance(recorder.events[0], RunStarted)
        assert AssistantText("hello") in recorder.events

    def test_events_arrive_on_the_thread_that_runs_the_turn(self) -> None:
        threads: set[int] = set()
        session = make(FakeTransport([ok()]))
        session.turn(
            session.prepare_turn("go"), on_event=lambda _: threads.add(threading.get_ident())
        )
        assert threads == {threading.get_ident()}

    def test_the_policys_decisions_are_reported_as_lifecycle_events(self) -> None:
        recorder = RecordingEventHandler()
        transport = FakeTransport([FakeOutcome.failure(FailureKind.TRANSIENT), ok()])
        session = make(transport, event_handlers=[recorder])
        session.turn("go")
        kinds = [e.kind for e in recorder.events if isinstance(e, Lifecycle)]
        assert "retry_scheduled" in kinds

    @pytest.mark.parametrize(
        "kind",
        [
            "retry_scheduled",
            "conversation_replaced",
            "conversation_forgotten",
            "conversation_retired",
            "conversation_released",
        ],
    )
    def test_every_policy_decision_reaches_the_handlers_and_on_event(self, kind: str) -> None:
        scripts: dict[str, tuple[list[FakeOutcome], dict[str, object]]] = {
            "retry_scheduled": ([FakeOutcome.failure(FailureKind.TRANSIENT), ok()], {}),
            "conversation_replaced": ([FakeOutcome.resume_refused(), ok()], {}),
            "conversation_forgotten": ([FakeOutcome.failure(FailureKind.CONTEXT_OVERFLOW)], {}),
            "conversation_retired": ([ok()], {"renewal": RenewalBudget(max_turns=1)}),
            "conversation_released": ([ok()], {"idle_release_after": 60}),
        }
        script, options = scripts[kind]
        recorder = RecordingEventHandler()
        rig = Rig(script, holding="conv-old", event_handlers=[recorder], **options)  # type: ignore[arg-type]
        if kind == "conversation_released":
            rig.transport.extend([ok()])
            rig.run()
            rig.clock.advance(61)
            recorder.events.clear()
        seen: list[AgentEvent] = []
        ticket = rig.session.prepare_turn("go")
        try:
            rig.session.turn(ticket, on_event=seen.append)
        except TurnFailedError:
            assert kind == "conversation_forgotten"
        kinds = [e.kind for e in seen if isinstance(e, Lifecycle)]
        assert kind in kinds
        assert seen == recorder.events
        assert any(line.startswith(f"{kind}: ") for line in rig.log)

    @pytest.mark.parametrize(
        ("raises_on", "script"),
        [
            pytest.param(AssistantText, [ok("a"), ok("b")], id="turn-event"),
            pytest.param(
                Lifecycle,
                # The transient failure would be retried: the handler's error stops that.
                [FakeOutcome.failure(FailureKind.TRANSIENT), ok("b"), ok("c")],
                id="policy-event",
            ),
        ],
    )
    def test_a_handler_that_raises_fails_the_turn_with_its_own_exception(
        self, raises_on: type[AgentEvent], script: list[FakeOutcome]
    ) -> None:
        class Boom(Exception):
            pass

        def explode(event: AgentEvent) -> None:
            if isinstance(event, raises_on):
                raise Boom("handler broke")

        transport = FakeTransport(script)
        session = make(transport)
        with pytest.raises(Boom):
            session.turn("go", on_event=explode)
        assert len(transport.calls) == 1
        assert session.turn("again").result.text == "b"


class TestAdoptReleaseClose:
    def test_adopt_makes_the_next_turn_resume_that_conversation(self) -> None:
        rig = Rig([ok(), ok()])
        rig.run()
        assert rig.session.adopt("conv-elsewhere")
        assert rig.checkpoint == "conv-elsewhere"
        assert rig.transport.conversations[0].closed
        turn = rig.run()
        assert turn.session_id == "conv-elsewhere"
        assert rig.resumed_ids == [None, "conv-elsewhere"]

    def test_adopt_refuses_an_unsafe_id(self) -> None:
        rig = Rig()
        with pytest.raises(InvalidSessionIdError):
            rig.session.adopt("../../etc/passwd")

    def test_adopt_returns_false_when_closed_or_unsupported(self) -> None:
        rig = Rig()
        rig.session.close()
        assert not rig.session.adopt("conv-1")
        cannot = make(FakeTransport(profile=replace(FAKE_PROFILE, supports_resume=False)))
        assert not cannot.adopt("conv-1")
        assert cannot.session_id is None

    def test_release_keeps_the_id_and_the_next_turn_reopens_it(self) -> None:
        rig = Rig([ok(), ok()])
        rig.run()
        rig.session.release()
        assert rig.transport.conversations[0].closed
        assert rig.session.session_id == "conv-1"
        rig.run()
        assert [s.resume_session_id for s in rig.transport.opened] == [None, "conv-1"]

    def test_close_is_idempotent_keeps_the_checkpoint_and_closes_the_conversation(self) -> None:
        rig = Rig([ok()])
        rig.run()
        rig.session.close()
        rig.session.close()
        assert rig.session.closed
        assert rig.transport.conversations[0].closed
        assert rig.checkpoint == "conv-1"

    def test_the_context_manager_closes_the_session(self) -> None:
        rig = Rig([ok()])
        with rig.session as session:
            session.turn("go")
        assert rig.session.closed
        with pytest.raises(SessionStateError):
            rig.session.prepare_turn("more")

    def test_a_transport_that_cannot_open_fails_the_turn_with_its_error(self) -> None:
        bypass_only = replace(FAKE_PROFILE, native_permission_modes=(NativeMode.BYPASS,))
        transport = FakeTransport([ok()], profile=bypass_only)
        read_only = ConversationSpec(
            permissions=NativePermissions.read_only(), approvals=ApprovalPolicy.DENY
        )
        session = Session(transport, read_only, clock=FakeClock())
        with pytest.raises(ProviderCapabilityError):
            session.turn("go")
        assert transport.calls == []


class TestSteer:
    def test_steer_sends_text_into_the_running_turn(self) -> None:
        transport = FakeTransport([FakeOutcome.hang()], steerable=True)
        session = make(transport)
        runner = TurnOnThread(session, session.prepare_turn("long"))
        assert runner.started.wait(HANG_GUARD_S)
        session.steer("also do this")
        session.interrupt()
        runner.join()
        assert transport.conversations[0].steered == ["also do this"]  # type: ignore[attr-defined]

    def test_steer_with_no_running_turn_raises(self) -> None:
        session = make(FakeTransport([ok()], steerable=True))
        with pytest.raises(NoRunningTurnError):
            session.steer("anyone?")

    def test_steer_on_a_one_shot_transport_raises_capability_error(self) -> None:
        session = make(FakeTransport([ok()]))
        with pytest.raises(ProviderCapabilityError, match="cannot take messages"):
            session.steer("hello")
        session.turn("go")
        with pytest.raises(ProviderCapabilityError):
            session.steer("hello")


def test_retry_jitter_is_deterministic_under_a_seed() -> None:
    def waits(seed: int) -> list[float]:
        transport = FakeTransport([FakeOutcome.failure(FailureKind.TRANSIENT)] * 3)
        clock = FakeClock()
        retry = RetryPolicy(delays=(100, 100), jitter=0.5, seed=seed)
        session = Session(transport, spec(), policy=SessionPolicy(retry=retry), clock=clock)
        with pytest.raises(TurnFailedError):
            session.turn("go")
        return clock.waits

    first, again, other = waits(7), waits(7), waits(8)
    assert first == again
    assert first != other
    assert all(50 <= wait <= 150 for wait in first + other)
    assert first != [100.0, 100.0]


def test_continuity_is_exported_from_the_session_module() -> None:
    from agentshim import session as module

    assert module.Continuity is Continuity
