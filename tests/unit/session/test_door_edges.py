"""The front doors at their edges: handlers that raise, locks that must not leak or be skipped,
values of the wrong type, and the words both doors share."""

from __future__ import annotations

import threading

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.agent import Agent
from agentshim.core.events import AgentEvent, AssistantText, SessionStarted
from agentshim.testing import FakeExecutor
from agentshim.testing.checkpoints import FakeCheckpointStore
from agentshim.testing.conversation import FakeOutcome, FakeTransport

from .scripted_claude import ENV, PROVIDER, resumed_id
from .test_doors import BYPASS, DENY, WAIT_S, InThread, answer, claude_agent

PIPE = BrokenPipeError(32, "Broken pipe")


def disconnected(event: AgentEvent) -> None:
    """A streaming client that went away: writing the event to it fails."""
    if isinstance(event, AssistantText):
        raise PIPE


class TestOneVocabulary:
    def test_agent_start_session_takes_the_session_id_to_resume(self) -> None:
        executor = FakeExecutor([answer("hi", session_id="s-9")])
        session = claude_agent(executor).start_session(session_id="s-9")
        assert session.session_id == "s-9"
        assert session.turn("x").result.text == "hi"
        assert resumed_id(executor.requests[0]) == "s-9"


class TestAHandlerThatRaisesAnOSError:
    def test_an_agent_session_turn_fails_with_the_handlers_own_exception(self) -> None:
        session = CliAgent(PROVIDER, executor=FakeExecutor([answer()]), env=ENV).start_session()
        with pytest.raises(BrokenPipeError) as caught:
            session.turn("x", on_event=disconnected)
        assert caught.value is PIPE

    def test_a_resumed_session_turn_keeps_its_conversation_and_checkpoint(self) -> None:
        store = FakeCheckpointStore()
        agent = claude_agent(FakeExecutor([answer(), answer("again")]))
        session = agent.start_session(checkpoints=store, checkpoint_key="k")
        session.adopt("s-1")
        with pytest.raises(BrokenPipeError) as caught:
            session.turn("x", on_event=disconnected)
        assert caught.value is PIPE
        assert session.session_id == "s-1"
        saved = store.load("k")
        assert saved is not None and saved.session_id == "s-1"


class TestAFreshTurnHoldsTheConversationItNames:
    def test_under_agent_over_a_session_that_adopts_the_id_mid_turn_waits(self) -> None:
        transport = FakeTransport(
            [FakeOutcome.success("a", session_id="conv-1"), FakeOutcome.success("b")]
        )
        agent = Agent.over(transport, permissions=BYPASS, approvals=DENY)
        first, second = agent.start_session(), agent.start_session()
        named, release = threading.Event(), threading.Event()

        def hold(event: AgentEvent) -> None:
            if isinstance(event, SessionStarted):
                named.set()
                release.wait(WAIT_S)

        one = InThread(lambda: first.turn("one", on_event=hold))
        assert named.wait(WAIT_S)
        assert second.adopt("conv-1")
        two = InThread(lambda: second.turn("two"))
        two.thread.join(0.3)
        assert two.thread.is_alive(), "the second session ran in conv-1 during the first turn"
        release.set()
        one.join()
        two.join()
        assert (one.error, two.error) == (None, None)
        assert [c.session_id for c in transport.conversations] == ["conv-1", "conv-1"]
