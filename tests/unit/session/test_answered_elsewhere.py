"""A resume the provider answers in another conversation is never reported as a continuation.

The recording: ``codex exec resume <name>`` with a name that matches nothing starts a new
thread and exits 0 (``tests/fixtures/codex/resume_missing_name``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentshim.agent import Agent
from agentshim.core.errors import ContinuityError
from agentshim.core.events import AgentEvent, Lifecycle
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.session_policy import Continuity
from agentshim.execution.executor import CommandRequest
from agentshim.session import Session
from agentshim.testing import FakeExecutor, FakeRun, scripted_turn
from agentshim.testing.clock import FakeClock, SequentialIds
from tests.unit.providers.fixtures import flag_value

from .scripted_claude import ENV

FIXTURE = Path(__file__).resolve().parents[2] / "fixtures" / "codex" / "resume_missing_name"
RECORDED = FIXTURE.with_suffix(".stdout.jsonl").read_text(encoding="utf-8").splitlines()
NEW_THREAD = json.loads(RECORDED[0])["thread_id"]
REQUESTED = "no-such-thread-name"


def resumed(request: CommandRequest) -> str | None:
    """The thread ``codex exec resume <thread>`` was told to continue, or None for a new one."""
    return flag_value(request.argv, "resume")


class Codex:
    """Answers the first run with the recording, then continues whatever thread it is asked."""

    def __init__(self) -> None:
        self.asked: list[str | None] = []
        self.executor = FakeExecutor(self._run)

    def _run(self, request: CommandRequest) -> FakeRun:
        thread = resumed(request)
        self.asked.append(thread)
        if len(self.asked) == 1:
            return FakeRun(stdout=RECORDED)
        return scripted_turn("codex", text="again", session_id=thread or "fresh-thread")


def open_session(codex: Codex, events: list[AgentEvent]) -> Session:
    agent = Agent(
        "codex",
        executor=codex.executor,
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        env=ENV,
        clock=FakeClock(),
        ids=SequentialIds(),
        event_handlers=[_Collect(events)],
    )
    return agent.start_session("/work", session_id=REQUESTED)


def test_an_ordinary_turn_adopts_the_new_conversation_and_says_it_was_replaced() -> None:
    codex, events = Codex(), []
    session = open_session(codex, events)

    turn = session.turn("hi")

    assert turn.continuity is Continuity.REPLACED
    assert turn.session_id == NEW_THREAD
    assert turn.result.resumed is False
    assert session.session_id == NEW_THREAD
    assert any(isinstance(e, Lifecycle) and e.kind == "conversation_lost" for e in events)
    following = session.turn("and now")
    assert following.continuity is Continuity.CONTINUED
    assert codex.asked == [REQUESTED, NEW_THREAD]


@pytest.mark.parametrize("pin", [False, True])
def test_a_strict_or_pinned_turn_fails_and_keeps_its_conversation(pin: bool) -> None:
    codex, events = Codex(), []
    session = open_session(codex, events)
    ticket = session.prepare_turn("hi", expect_session_id=None if pin else REQUESTED, pin=pin)

    with pytest.raises(ContinuityError) as raised:
        session.turn(ticket)

    assert (raised.value.expected, raised.value.actual) == (REQUESTED, NEW_THREAD)
    assert "new conversation" in str(raised.value)
    assert session.session_id == REQUESTED
    # The next turn asks for the held conversation again, not the thread codex made up.
    session.turn("again")
    assert codex.asked == [REQUESTED, REQUESTED]


class _Collect:
    def __init__(self, into: list[AgentEvent]) -> None:
        self.into = into

    def on_event(self, event: AgentEvent) -> None:
        self.into.append(event)
