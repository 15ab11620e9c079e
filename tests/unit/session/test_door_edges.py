"""The front doors at their edges: handlers that raise, locks that must not leak or be skipped,
values of the wrong type, and the words both doors share."""

from __future__ import annotations

from agentshim.testing import FakeExecutor

from .scripted_claude import resumed_id
from .test_doors import answer, claude_agent


class TestOneVocabulary:
    def test_agent_start_session_takes_the_session_id_to_resume(self) -> None:
        executor = FakeExecutor([answer("hi", session_id="s-9")])
        session = claude_agent(executor).start_session(session_id="s-9")
        assert session.session_id == "s-9"
        assert session.turn("x").result.text == "hi"
        assert resumed_id(executor.requests[0]) == "s-9"
