"""Contract suites for the session layer's seams: Conversation and Transport.

Subclass one as ``Test<Impl>``, implement its factory methods, and pytest runs the inherited
tests against your implementation::

    class TestMyTransport(TransportContract):
        def make_transport(self, turns: Sequence[ContractTurn]) -> Transport:
            return MyTransport(...)

agentshim runs them for its real implementations and for the fakes in
:mod:`agentshim.testing`, which is what lets a Session test on a fake stand for the real thing.
A conversation or transport factory receives a script of :class:`ContractTurn` and must
return something whose turns play it: answer ``text``, or run until interrupted (``hang``).

This module needs pytest.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import ClassVar

import pytest

from agentshim.core.conversation import (
    Conversation,
    ConversationSpec,
    SteerableConversation,
    Transport,
    TurnStop,
)
from agentshim.core.errors import (
    NoRunningTurnError,
    ProviderCapabilityError,
    SessionStateError,
    TurnCancelledError,
)
from agentshim.core.events import AssistantText, TurnInterrupted
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.profile import ProviderProfile
from agentshim.core.turn import TurnRequest, TurnResult

from ._liveness import returns_within
from .recording import RecordingEventHandler

__all__ = [
    "ContractTurn",
    "ConversationContract",
    "SteerableConversationContract",
    "TransportContract",
]


@dataclass(frozen=True, slots=True)
class ContractTurn:
    """One scripted turn for a contract suite: answer ``text``, or ``hang`` until interrupted.

    With ``ask`` the CLI first asks to run a tool that writes, and answers ``text`` after.
    """

    text: str = "done"
    hang: bool = False
    ask: bool = False


# The conversations the suites resume. UUID-shaped, the only form some CLIs resume (Claude Code
# refuses any other), so a suite run against a real CLI can give it conversations of these ids.
_RESUMED_ID = "c0de0000-0000-4000-8000-000000000001"
_KEPT_ID = "c0de0000-0000-4000-8000-000000000002"
_INTERRUPTED_ID = "c0de0000-0000-4000-8000-000000000003"
_EARLY_ID = "c0de0000-0000-4000-8000-000000000004"
_STOPPED_ID = "c0de0000-0000-4000-8000-000000000005"
_BACK_ID = "c0de0000-0000-4000-8000-000000000006"
_OTHER_ID = "c0de0000-0000-4000-8000-000000000007"
_STEER_ID = "c0de0000-0000-4000-8000-000000000008"


def _spec(resume_session_id: str | None = None) -> ConversationSpec:
    return ConversationSpec(
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        resume_session_id=resume_session_id,
    )


def _interrupt_when_running(conversation: Conversation, done: threading.Event) -> None:
    # Keep interrupting until the turn ends: an interrupt before the turn started is ignored.
    while not done.wait(0.02):
        conversation.interrupt()


def _turn_unless_cancelled(
    conversation: Conversation,
    limit: float,
    events: RecordingEventHandler | None = None,
    stop: TurnStop | None = None,
) -> TurnResult | None:
    """Run a turn that waits; None when it is cancelled instead of finishing.

    The turn has no deadline, so only an interrupt or ``stop`` ends it: one that ends nothing
    leaves it blocked, and the test fails after ``limit`` seconds (a liveness guard, never a
    speed limit).
    """
    handler = RecordingEventHandler() if events is None else events

    def turn() -> TurnResult | None:
        try:
            return conversation.turn(TurnRequest("wait"), handler, stop)
        except TurnCancelledError:
            return None

    return returns_within(limit, turn)


def _run_hanging(
    conversation: Conversation, limit: float, events: RecordingEventHandler | None = None
) -> TurnResult | None:
    """Run a turn that waits, interrupting it from another thread until it ends."""
    done = threading.Event()
    helper = threading.Thread(target=_interrupt_when_running, args=(conversation, done))
    helper.start()
    try:
        return _turn_unless_cancelled(conversation, limit, events)
    finally:
        done.set()
        helper.join(limit)


class ConversationContract:
    """What every :class:`~agentshim.core.conversation.Conversation` does."""

    io_timeout: ClassVar[float] = 60.0
    """How long a turn that should end may block before the test fails as hung.

    A liveness guard, never a speed limit: no test asserts how fast anything was.
    """

    def make_conversation(
        self, turns: Sequence[ContractTurn], *, resume_session_id: str | None = None
    ) -> Conversation:
        """Open a conversation whose turns play ``turns`` (resuming ``resume_session_id`` if given)."""
        raise NotImplementedError

    def kill_idle_process(self, conversation: Conversation) -> bool:
        """SIGKILL the process ``conversation`` keeps between turns, as an operator would.

        Return False when the conversation keeps no process of its own (the default): the
        suite's test of a process dying while idle is then skipped.
        """
        del conversation
        return False

    def test_a_process_killed_while_idle_is_replaced_and_the_conversation_resumed(
        self,
    ) -> None:
        """A process killed between turns costs no turn: the next resumes in a new process."""
        conversation = self.make_conversation([ContractTurn("one"), ContractTurn("two")])
        first = conversation.turn(TurnRequest("1"), RecordingEventHandler())
        if not self.kill_idle_process(conversation):
            pytest.skip("the conversation keeps no process between turns")
        events = RecordingEventHandler()
        second = conversation.turn(TurnRequest("2"), events)
        assert second.text == "two"
        assert second.resumed
        assert second.respawned
        assert second.session_id == first.session_id == conversation.session_id
        assert "process_respawned" in events.lifecycle_kinds()
        conversation.close()

    def test_a_fresh_conversation_is_unnamed_until_a_turn_names_it(self) -> None:
        """A fresh conversation is unnamed until a turn names it."""
        conversation = self.make_conversation([ContractTurn("hello")])
        assert conversation.session_id is None
        result = conversation.turn(TurnRequest("hi"), RecordingEventHandler())
        assert result.text == "hello"
        assert result.session_id is not None
        assert conversation.session_id == result.session_id
        assert not result.resumed
        assert not result.interrupted

    def test_events_arrive_on_the_calling_thread(self) -> None:
        """Events arrive on the calling thread."""
        conversation = self.make_conversation([ContractTurn("hello")])
        events = RecordingEventHandler()
        conversation.turn(TurnRequest("hi"), events)
        assert events.events
        assert events.threads == {threading.get_ident()}

    def test_a_second_turn_continues_the_same_conversation(self) -> None:
        """A second turn continues the same conversation."""
        conversation = self.make_conversation([ContractTurn("one"), ContractTurn("two")])
        first = conversation.turn(TurnRequest("1"), RecordingEventHandler())
        second = conversation.turn(TurnRequest("2"), RecordingEventHandler())
        assert second.text == "two"
        assert second.resumed
        assert second.session_id == first.session_id == conversation.session_id

    def test_a_resumed_conversation_carries_its_id_from_the_start(self) -> None:
        """A resumed conversation carries its id from the start."""
        conversation = self.make_conversation(
            [ContractTurn("again")], resume_session_id=_RESUMED_ID
        )
        assert conversation.session_id == _RESUMED_ID
        result = conversation.turn(TurnRequest("hi"), RecordingEventHandler())
        assert result.resumed
        assert result.session_id == _RESUMED_ID

    def test_interrupt_ends_a_running_turn_and_keeps_the_conversation(self) -> None:
        """Interrupt ends a running turn and keeps the conversation."""
        conversation = self.make_conversation(
            [ContractTurn(hang=True), ContractTurn("after")], resume_session_id=_KEPT_ID
        )
        result = _run_hanging(conversation, self.io_timeout)
        assert result is None or result.interrupted
        assert conversation.session_id == _KEPT_ID
        after = conversation.turn(TurnRequest("next"), RecordingEventHandler())
        assert after.text == "after"
        assert not after.interrupted

    def test_an_interrupted_result_comes_with_a_turn_interrupted_event(self) -> None:
        """An interrupted result comes with a turn interrupted event."""
        conversation = self.make_conversation(
            [ContractTurn(hang=True)], resume_session_id=_INTERRUPTED_ID
        )
        events = RecordingEventHandler()
        result = _run_hanging(conversation, self.io_timeout, events)
        if result is None:
            return  # cancelled: no result to carry the event
        assert result.interrupted
        assert events.of_type(TurnInterrupted)

    def test_a_stop_requested_before_the_turn_means_it_never_runs(self) -> None:
        """A stop requested before the turn began: TurnCancelledError, and nothing ran.

        The conversation is kept, and the next turn gets the first scripted answer.
        """
        conversation = self.make_conversation(
            [ContractTurn("first"), ContractTurn("second")], resume_session_id=_EARLY_ID
        )
        stop = TurnStop()
        stop.request()
        events = RecordingEventHandler()
        with pytest.raises(TurnCancelledError):
            conversation.turn(TurnRequest("hi"), events, stop)
        assert conversation.session_id == _EARLY_ID
        assert not events.of_type(AssistantText), "the stopped turn ran: it emitted an answer"
        after = conversation.turn(TurnRequest("next"), RecordingEventHandler())
        assert after.text == "first", "the stopped turn ran and used up the first answer"

    def test_a_stop_requested_while_the_turn_runs_ends_it(self) -> None:
        """A stop requested mid-turn ends it (interrupted, or TurnCancelledError)."""
        conversation = self.make_conversation(
            [ContractTurn(hang=True)], resume_session_id=_STOPPED_ID
        )
        stop = TurnStop()
        events = RecordingEventHandler()
        timer = threading.Timer(0.1, stop.request)
        timer.start()
        try:
            result = _turn_unless_cancelled(conversation, self.io_timeout, events, stop)
        finally:
            timer.cancel()
        assert result is None or result.interrupted
        if result is not None:
            assert events.of_type(TurnInterrupted)
        assert conversation.session_id == _STOPPED_ID

    def test_interrupt_with_no_turn_running_does_nothing(self) -> None:
        """Interrupt with no turn running does nothing."""
        conversation = self.make_conversation([ContractTurn("fine")])
        conversation.interrupt()
        result = conversation.turn(TurnRequest("hi"), RecordingEventHandler())
        assert result.text == "fine"
        assert not result.interrupted

    def test_close_is_idempotent_and_refuses_later_turns(self) -> None:
        """Close is idempotent and refuses later turns."""
        conversation = self.make_conversation([ContractTurn("unused")])
        conversation.close()
        conversation.close()
        with pytest.raises(SessionStateError):
            conversation.turn(TurnRequest("hi"), RecordingEventHandler())


class SteerableConversationContract(ConversationContract):
    """What a conversation that takes messages mid-turn does, on top of every conversation's.

    ``make_conversation`` must return a
    :class:`~agentshim.core.conversation.SteerableConversation`.
    """

    def _steerable(self, turns: Sequence[ContractTurn]) -> SteerableConversation:
        conversation = self.make_conversation(turns, resume_session_id=_STEER_ID)
        assert isinstance(conversation, SteerableConversation)
        return conversation

    def test_steer_with_no_turn_running_raises_no_running_turn(self) -> None:
        """Steer with no turn running raises NoRunningTurnError, before and after a turn."""
        conversation = self._steerable([ContractTurn("fine")])
        with pytest.raises(NoRunningTurnError):
            conversation.steer("too early")
        conversation.turn(TurnRequest("hi"), RecordingEventHandler())
        with pytest.raises(NoRunningTurnError):
            conversation.steer("too late")

    def test_steer_reaches_a_running_turn_which_still_ends_once(self) -> None:
        """A message steered into a running turn is taken; the turn still ends with one result."""
        conversation = self._steerable([ContractTurn(hang=True), ContractTurn("after")])
        steered = threading.Event()
        failures: list[BaseException] = []

        def steer_then_interrupt() -> None:
            deadline = time.monotonic() + self.io_timeout
            while time.monotonic() < deadline:
                try:
                    conversation.steer("also this")
                except NoRunningTurnError:
                    time.sleep(0.01)  # the turn has not started yet
                    continue
                except BaseException as error:  # reported on the test's thread
                    failures.append(error)
                    return
                steered.set()
                break
            conversation.interrupt()

        helper = threading.Thread(target=steer_then_interrupt)
        helper.start()
        try:
            result = _turn_unless_cancelled(conversation, self.io_timeout)
        finally:
            helper.join(self.io_timeout)
        assert not failures, failures
        assert steered.is_set(), "steer never reached the running turn"
        assert result is None or result.interrupted
        after = conversation.turn(TurnRequest("next"), RecordingEventHandler())
        assert after.text.startswith("after")


class TransportContract:
    """What every :class:`~agentshim.core.conversation.Transport` does."""

    def make_transport(self, turns: Sequence[ContractTurn]) -> Transport:
        """Return a transport whose turns (across all its conversations) play ``turns``."""
        raise NotImplementedError

    def unsupported_permissions(self) -> NativePermissions | None:
        """Native permissions the transport must refuse, or None when it accepts every kind."""
        return None

    def test_it_has_a_profile(self) -> None:
        """It has a profile."""
        transport = self.make_transport([])
        assert isinstance(transport.profile, ProviderProfile)
        assert transport.profile.name

    def test_open_returns_a_fresh_conversation(self) -> None:
        """Open returns a fresh conversation."""
        transport = self.make_transport([ContractTurn("hi")])
        conversation = transport.open(_spec())
        try:
            assert isinstance(conversation, Conversation)
            assert conversation.session_id is None
            result = conversation.turn(TurnRequest("hello"), RecordingEventHandler())
            assert result.text == "hi"
            assert not result.resumed
        finally:
            conversation.close()

    def test_open_with_resume_session_id_continues_that_conversation(self) -> None:
        """Open with resume id continues that conversation."""
        transport = self.make_transport([ContractTurn("back")])
        conversation = transport.open(_spec(resume_session_id=_BACK_ID))
        try:
            assert conversation.session_id == _BACK_ID
            result = conversation.turn(TurnRequest("hello"), RecordingEventHandler())
            assert result.resumed
            assert result.session_id == _BACK_ID
        finally:
            conversation.close()

    def test_conversations_are_independent(self) -> None:
        """Conversations are independent."""
        transport = self.make_transport([ContractTurn("a"), ContractTurn("b")])
        first = transport.open(_spec())
        second = transport.open(_spec(resume_session_id=_OTHER_ID))
        try:
            first.turn(TurnRequest("1"), RecordingEventHandler())
            first.close()
            result = second.turn(TurnRequest("2"), RecordingEventHandler())
            assert result.text == "b"
            assert second.session_id == _OTHER_ID
            assert first.session_id != second.session_id
        finally:
            second.close()

    def test_it_refuses_permissions_it_cannot_honour(self) -> None:
        """It refuses permissions it cannot honour."""
        permissions = self.unsupported_permissions()
        if permissions is None:
            pytest.skip("this transport accepts every native permission mode")
        transport = self.make_transport([ContractTurn("never")])
        spec = ConversationSpec(permissions=permissions, approvals=ApprovalPolicy.FAIL_TURN)
        with pytest.raises(ProviderCapabilityError):
            transport.open(spec)
