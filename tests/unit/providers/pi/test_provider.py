from __future__ import annotations

from typing import Any

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import (
    CliExitError,
    FailureKind,
    ProviderCapabilityError,
    SessionResumeError,
)
from agentshim.core.events import (
    Lifecycle,
    ProviderErrorReported,
    SessionStarted,
    ToolCall,
    ToolResult,
    UsageReport,
)
from agentshim.core.mcp import StdioMcpServer
from agentshim.core.profile import McpMechanism, OutputSchemaStyle
from agentshim.core.turn import TurnRequest
from agentshim.core.usage import CostSource
from agentshim.providers import get_plugin, get_provider
from agentshim.providers.pi import PROFILE, PiProvider
from agentshim.testing import FakeExecutor, RecordingEventHandler
from tests.unit.providers.fixtures import load_capture

from ._captures import EXPECTED

BINARIES = {"pi": "/usr/bin/pi"}
SUCCESSES = sorted(name for name, e in EXPECTED.items() if e.kind is None)
FAILURES = sorted(name for name, e in EXPECTED.items() if e.kind is not None)
RESUME_LOST = ("d_resume_missing_nonuuid", "d_resume_missing_uuid")
FULL_ID = "01a2275a-1c2a-72ae-8ced-4a8fdca01c2e"


def agent_for(
    runs: Any, recorder: RecordingEventHandler | None = None, provider: PiProvider | None = None
) -> tuple[CliAgent, FakeExecutor]:
    executor = FakeExecutor(runs, binaries=BINARIES)
    agent = CliAgent(
        provider or "pi",
        executor=executor,
        env={"PATH": "/usr/bin"},
        event_handlers=[recorder] if recorder is not None else (),
    )
    return agent, executor


class TestProfile:
    def test_declared_facts(self) -> None:
        assert PROFILE.name == "pi"
        assert PROFILE.binary == "pi"
        assert PROFILE.supports_resume
        assert PROFILE.supports_reasoning_effort
        assert PROFILE.mcp is McpMechanism.NONE
        assert PROFILE.mcp_config_file is None
        assert PROFILE.output_schema is OutputSchemaStyle.NONE
        assert PROFILE.state_root_env == "PI_CODING_AGENT_DIR"
        assert "ANTHROPIC_API_KEY" in PROFILE.auth_env_vars
        assert all(
            any(f.startswith(d + "/") for d in PROFILE.state_dirs) for f in PROFILE.auth_files
        )
        assert set(PROFILE.credential_files) <= set(PROFILE.auth_files)
        assert dict(PROFILE.container_env) == {}

    def test_catalog_plugin(self) -> None:
        plugin = get_plugin("pi")
        assert plugin.profile is PROFILE
        assert isinstance(get_provider("pi"), PiProvider)
        assert plugin.resume_command(FULL_ID) == f"pi --session {FULL_ID}"


class TestCaptureReplayThroughTheAgent:
    @pytest.mark.parametrize("name", SUCCESSES)
    def test_successful_turn(self, name: str) -> None:
        capture, expected = load_capture("pi", name), EXPECTED[name]
        recorder = RecordingEventHandler()
        agent, executor = agent_for(capture.fake_run(), recorder)
        session = agent.start_session(session_id=capture.flag_value("--session"))

        result = session.turn(capture.stdin)

        assert result.text == expected.text
        assert result.session_id == expected.session_id == session.session_id
        assert result.resumed is (capture.flag_value("--session") is not None)
        assert result.usage.tokens.input_tokens == expected.input_tokens
        assert result.usage.tokens.output_tokens == expected.output_tokens
        assert result.usage.cost_source is CostSource.REPORTED
        assert result.cost_usd == 0.0
        assert recorder.of_type(SessionStarted) == [SessionStarted(expected.session_id or "")]
        assert recorder.of_type(UsageReport)
        (request,) = executor.requests
        assert request.stdin == capture.stdin
        assert request.env["NO_COLOR"] == "1"
        assert request.env["CI"] == "1"

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

    def test_tool_events_reach_the_handler(self) -> None:
        recorder = RecordingEventHandler()
        agent, _ = agent_for(load_capture("pi", "b_tool_bash").fake_run(), recorder)
        agent.run("Run echo hello in bash.")
        (call,) = recorder.of_type(ToolCall)
        (result,) = recorder.of_type(ToolResult)
        assert (call.tool, result.stdout, result.exit_code) == ("bash", "hello\n", 0)

    @pytest.mark.parametrize("name", [n for n in FAILURES if n not in RESUME_LOST])
    def test_failed_turn_raises_with_its_kind_even_on_exit_0(self, name: str) -> None:
        capture, expected = load_capture("pi", name), EXPECTED[name]
        recorder = RecordingEventHandler()
        agent, _ = agent_for(capture.fake_run(), recorder)
        session = agent.start_session()
        with pytest.raises(CliExitError) as caught:
            session.turn(capture.stdin)
        error = caught.value
        assert not isinstance(error, SessionResumeError)
        assert error.kind is expected.kind
        assert expected.error_says in error.detail
        assert error.returncode == capture.exit_code
        assert session.session_id == expected.session_id

    def test_api_errors_exit_0_in_the_recordings(self) -> None:
        assert {
            load_capture("pi", n).exit_code
            for n in ("e1_http500", "e2_http529", "e3_http401", "e4_http400_too_long")
        } == {0}

    @pytest.mark.parametrize(
        "name", ["e1b_http500_fast_retry_settings", "e3_http401", "e4_http400_too_long"]
    )
    def test_a_resumed_turn_that_fails_keeps_the_conversation(self, name: str) -> None:
        recorder = RecordingEventHandler()
        agent, _ = agent_for(load_capture("pi", name).fake_run(), recorder)
        session = agent.start_session(session_id=FULL_ID)
        with pytest.raises(CliExitError) as caught:
            session.turn("hello")
        assert not isinstance(caught.value, SessionResumeError)
        assert caught.value.kind is EXPECTED[name].kind
        assert recorder.of_type(ProviderErrorReported)

    @pytest.mark.parametrize("name", RESUME_LOST)
    def test_missing_resumed_session_is_a_resume_error(self, name: str) -> None:
        capture = load_capture("pi", name)
        agent, _ = agent_for(capture.fake_run())
        session = agent.start_session(session_id=capture.flag_value("--session"))
        with pytest.raises(SessionResumeError) as caught:
            session.turn(capture.stdin)
        assert caught.value.session_id == capture.flag_value("--session")
        assert "No session found matching" in caught.value.detail
        assert caught.value.returncode == 1

    def test_the_same_output_on_a_fresh_turn_is_a_plain_exit_error(self) -> None:
        agent, _ = agent_for(load_capture("pi", "d_resume_missing_uuid").fake_run())
        with pytest.raises(CliExitError) as caught:
            agent.run("hello")
        assert not isinstance(caught.value, SessionResumeError)
        assert caught.value.kind is FailureKind.OTHER


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
