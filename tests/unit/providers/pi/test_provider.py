from __future__ import annotations

from functools import partial

import pytest

from agentshim.core.errors import (
    ProviderCapabilityError,
)
from agentshim.core.events import (
    Lifecycle,
)
from agentshim.core.mcp import StdioMcpServer
from agentshim.core.turn import TurnRequest
from agentshim.providers.pi import PiProvider
from agentshim.testing import RecordingEventHandler
from tests.unit.providers.fixtures import fake_agent, load_capture

agent_for = partial(fake_agent, "pi")
FULL_ID = "01a2275a-1c2a-72ae-8ced-4a8fdca01c2e"


class TestCaptureReplayThroughTheAgent:
    def test_resume_by_partial_id_is_the_same_conversation(self) -> None:
        recorder = RecordingEventHandler()
        agent, executor = agent_for(load_capture("pi", "c_resume_full_id").fake_run(), recorder)
        session = agent.start_session(session_id="01a2275a")
        result = session.turn("What did I ask you before?")
        assert result.resumed
        assert result.session_id == session.session_id == "01a2275a"
        assert executor.requests[0].argv[-2:] == ("--session", "01a2275a")
        assert Lifecycle("session_resolved", FULL_ID) in recorder.events
        assert not [e for e in recorder.of_type(Lifecycle) if e.kind == "resume_replaced"]

    def test_api_errors_exit_0_in_the_recordings(self) -> None:
        assert {
            load_capture("pi", n).exit_code
            for n in ("e1_http500", "e2_http529", "e3_http401", "e4_http400_too_long")
        } == {0}


class TestRequests:
    def test_mcp_servers_are_refused_before_anything_runs(self) -> None:
        agent, executor = agent_for(load_capture("pi", "a_plain_text").fake_run())
        with pytest.raises(ProviderCapabilityError):
            agent.run(TurnRequest("hi", mcp_servers=(StdioMcpServer("s", "python3"),)))
        assert executor.requests == []

    def test_reasoning_effort_becomes_thinking(self) -> None:
        agent, executor = agent_for(load_capture("pi", "a_plain_text").fake_run())
        agent.run(TurnRequest("hi", reasoning_effort="low"))
        assert list(executor.requests[0].argv[-2:]) == ["--thinking", "low"]

    def test_short_session_ids_option(self) -> None:
        agent, _ = agent_for(
            load_capture("pi", "a_plain_text").fake_run(),
            provider=PiProvider(short_session_ids=True),
        )
        assert agent.run("hi").session_id == "01a2275a"
