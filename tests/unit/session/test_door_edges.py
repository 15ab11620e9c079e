"""The front doors at their edges: handlers that raise, locks that must not leak or be skipped,
values of the wrong type, and the words both doors share."""

from __future__ import annotations

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.events import AgentEvent, AssistantText
from agentshim.testing import FakeExecutor
from agentshim.testing.checkpoints import FakeCheckpointStore

from .scripted_claude import ENV, PROVIDER, resumed_id
from .test_doors import answer, claude_agent

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
