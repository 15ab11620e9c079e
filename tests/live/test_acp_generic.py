"""Live: the public generic ACP provider on real processes of agents that speak ACP.

Each agent is named only by its command line (``AcpAgentConfig``), as a user names one
agentshim has no provider for, and driven through ``Agent`` / ``Session`` on the real
``HostCommandExecutor``. The agents here need no model: agentshim's shipped fake ACP agent
(``python -m agentshim.testing.acp_agent``). What is asserted is what a user sees: results,
events, approvals, and the processes left (found in ``/proc`` by a marker in their argv).

Run with ``pytest tests/live/test_acp_generic.py``.
"""

from __future__ import annotations

import os
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentshim import Agent
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import TransportKind
from agentshim.core.events import AgentEvent, ApprovalAnswered, ModeChanged, ToolCall, ToolResult
from agentshim.providers.acp import AcpAgentConfig

from .streams import NEEDS_PROC, TURN_TIMEOUT, Background, acp_agent, wait_for
from .suite import live_processes

pytestmark = NEEDS_PROC

ROOT = Path(__file__).parents[2]


class FakeAgent:
    """The shipped fake ACP agent, as a user would configure it."""

    def __init__(self) -> None:
        self.marker = f"agentshim-live-{uuid.uuid4().hex[:12]}"
        command = [sys.executable, "-m", "agentshim.testing.acp_agent", self.marker]
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        self.config = AcpAgentConfig(name="fake-acp", command=command, display_name="fake ACP")
        self.env = env

    def agent(self, transport: TransportKind = TransportKind.LONG_LIVED) -> Agent:
        asked: list[ApprovalRequest] = []
        self.asked = asked

        def decide(request: ApprovalRequest) -> ApprovalDecision:
            asked.append(request)
            if len(asked) % 2 == 0:
                return ApprovalDecision.deny("not this one")
            return ApprovalDecision.allow()

        return acp_agent(self.config, decide, self.env, transport)

    def left(self) -> list[int]:
        return [p.pid for p in live_processes() if self.marker in p.cmdline]


@pytest.fixture
def fake() -> Iterator[FakeAgent]:
    agent = FakeAgent()
    yield agent
    assert agent.left() == []


class TestTheShippedFakeAgent:
    def test_two_turns_a_tool_allowed_and_one_denied_a_mode_switch_and_close(
        self, fake: FakeAgent, tmp_path: Path
    ) -> None:
        events: list[AgentEvent] = []
        with fake.agent().start_session(str(tmp_path)) as session:
            first = session.turn("hello", on_event=events.append).result
            assert "you said: hello" in first.text
            allowed = session.turn("TOOL one", on_event=events.append).result
            assert allowed.text == "the tool ran"
            denied = session.turn("TOOL two", on_event=events.append).result
            assert denied.text == "denied"
            session.set_mode("plan")
            session.turn("after the switch", on_event=events.append)
            assert len(fake.left()) == 1  # every turn on one process
        assert [e.allowed for e in events if isinstance(e, ApprovalAnswered)] == [True, False]
        calls = [e.tool_id for e in events if isinstance(e, ToolCall)]
        ends = [e.tool_id for e in events if isinstance(e, ToolResult)]
        assert sorted(calls) == sorted(ends)
        assert [e.mode_id for e in events if isinstance(e, ModeChanged)][-1] == "plan"
        wait_for(lambda: fake.left() == [], 10, "the agent's exit after close")

    def test_an_interrupt_mid_tool_ends_the_turn_and_leaves_no_process(
        self, fake: FakeAgent, tmp_path: Path
    ) -> None:
        with fake.agent().start_session(str(tmp_path)) as session:
            running = Background(lambda: session.turn("SLOW please").result)
            wait_for(lambda: fake.left() != [], 30, "the agent's start")
            session.interrupt()
            result = running.join(TURN_TIMEOUT)
            assert result.interrupted
            assert "you said: again" in session.turn("again").result.text
        wait_for(lambda: fake.left() == [], 10, "the agent's exit after close")

    def test_one_shot_turns_load_the_session_in_a_new_process(
        self, fake: FakeAgent, tmp_path: Path
    ) -> None:
        with fake.agent(TransportKind.ONE_SHOT).start_session(str(tmp_path)) as session:
            first = session.turn("one").result
            assert fake.left() == []  # the turn's process ended with it
            second = session.turn("two").result
        assert second.session_id == first.session_id
        assert second.resumed
        assert "you said: two" in second.text
