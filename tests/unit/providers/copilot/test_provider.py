from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import CliExitError, FailureKind, SessionResumeError
from agentshim.core.events import (
    ProviderErrorReported,
    SessionStarted,
    ToolCall,
    ToolResult,
    UsageReport,
)
from agentshim.core.mcp import HttpMcpServer, StdioMcpServer
from agentshim.core.profile import McpMechanism, OutputSchemaStyle
from agentshim.core.turn import TurnRequest
from agentshim.core.usage import CostSource
from agentshim.execution.executor import CommandRequest
from agentshim.providers import get_plugin, get_provider
from agentshim.providers.copilot import PROFILE, CopilotProvider
from agentshim.testing import FakeExecutor, FakeRun, RecordingEventHandler, installed_mcp_servers
from tests.unit.providers.fixtures import load_capture

from ._captures import EXPECTED

BINARIES = {"copilot": "/usr/bin/copilot"}
SUCCESSES = sorted(name for name, e in EXPECTED.items() if e.kind is None)
FAILURES = sorted(name for name, e in EXPECTED.items() if e.kind is not None)


def agent_for(
    runs: Any, recorder: RecordingEventHandler | None = None
) -> tuple[CliAgent, FakeExecutor]:
    executor = FakeExecutor(runs, binaries=BINARIES)
    agent = CliAgent(
        "copilot",
        executor=executor,
        env={"PATH": "/usr/bin"},
        event_handlers=[recorder] if recorder is not None else (),
    )
    return agent, executor


class TestProfile:
    def test_declared_facts(self) -> None:
        assert PROFILE.name == "copilot"
        assert PROFILE.binary == "copilot"
        assert PROFILE.supports_resume
        assert not PROFILE.supports_reasoning_effort
        assert PROFILE.mcp is McpMechanism.CLI_FLAGS
        assert PROFILE.mcp_config_file is None
        assert PROFILE.output_schema is OutputSchemaStyle.NONE
        assert PROFILE.state_root_env == "COPILOT_HOME"
        assert "COPILOT_GITHUB_TOKEN" in PROFILE.auth_env_vars
        assert all(
            any(f.startswith(d + "/") for d in PROFILE.state_dirs) for f in PROFILE.auth_files
        )
        assert set(PROFILE.credential_files) <= set(PROFILE.auth_files)

    def test_catalog_plugin(self) -> None:
        plugin = get_plugin("copilot")
        assert plugin.profile is PROFILE
        assert isinstance(get_provider("copilot"), CopilotProvider)
        assert plugin.resume_command("d8d67461-6201-4285-8233-9e4dda0071e1") == (
            "copilot --resume=d8d67461-6201-4285-8233-9e4dda0071e1"
        )
        assert plugin.pricing_table().get("gpt-5.4") is None


class TestCaptureReplayThroughTheAgent:
    @pytest.mark.parametrize("name", SUCCESSES)
    def test_successful_turn(self, name: str) -> None:
        capture, expected = load_capture("copilot", name), EXPECTED[name]
        recorder = RecordingEventHandler()
        agent, executor = agent_for(capture.fake_run(), recorder)
        session = agent.start_session(session_id=capture.flag_value("--resume"))

        result = session.turn("hello")

        assert result.text == expected.text
        assert result.session_id == expected.session_id == session.session_id
        assert result.resumed is (capture.flag_value("--resume") is not None)
        assert result.exit_code == 0
        assert result.usage.increment_known is False
        assert result.usage.cost_source is CostSource.NOT_REPORTED
        assert result.cost_usd is None
        assert recorder.of_type(SessionStarted) == [SessionStarted(expected.session_id or "")]
        assert len(recorder.of_type(UsageReport)) == 1
        (request,) = executor.requests
        if capture.flag_value("--resume") is not None:
            assert f"--resume={capture.flag_value('--resume')}" in request.argv

    def test_tool_events_reach_the_handler(self) -> None:
        recorder = RecordingEventHandler()
        agent, _ = agent_for(load_capture("copilot", "tool_shell").fake_run(), recorder)
        agent.run("run echo hello")
        (call,) = recorder.of_type(ToolCall)
        (result,) = recorder.of_type(ToolResult)
        assert (call.tool, result.stdout, result.exit_code) == ("bash", "hello\n", 0)

    @pytest.mark.parametrize("name", [n for n in FAILURES if n != "resume_missing"])
    def test_failed_turn_raises_with_its_kind(self, name: str) -> None:
        capture, expected = load_capture("copilot", name), EXPECTED[name]
        recorder = RecordingEventHandler()
        agent, _ = agent_for(capture.fake_run(), recorder)
        session = agent.start_session()
        with pytest.raises(CliExitError) as caught:
            session.turn("hello")
        error = caught.value
        assert not isinstance(error, SessionResumeError)
        assert error.kind is expected.kind
        assert expected.error_says in error.detail
        assert error.returncode == 1
        assert session.session_id == expected.session_id
        assert recorder.of_type(ProviderErrorReported)

    @pytest.mark.parametrize("name", ["api_500", "api_401"])
    def test_a_resumed_turn_that_fails_keeps_the_conversation(self, name: str) -> None:
        agent, _ = agent_for(load_capture("copilot", name).fake_run())
        session = agent.start_session(session_id="d8d67461-6201-4285-8233-9e4dda0071e1")
        with pytest.raises(CliExitError) as caught:
            session.turn("hello")
        assert not isinstance(caught.value, SessionResumeError)
        assert caught.value.kind is EXPECTED[name].kind

    def test_missing_resumed_session_is_a_resume_error(self) -> None:
        capture = load_capture("copilot", "resume_missing")
        agent, _ = agent_for(capture.fake_run())
        session = agent.start_session(session_id=capture.flag_value("--resume"))
        with pytest.raises(SessionResumeError) as caught:
            session.turn("hello")
        assert (
            caught.value.session_id
            == capture.flag_value("--resume")
            == "00000000-0000-4000-8000-000000000000"
        )
        assert "No session, task, or name matched" in caught.value.detail

    def test_the_same_output_on_a_fresh_turn_is_a_plain_exit_error(self) -> None:
        agent, _ = agent_for(load_capture("copilot", "resume_missing").fake_run())
        with pytest.raises(CliExitError) as caught:
            agent.run("hello")
        assert not isinstance(caught.value, SessionResumeError)

    def test_a_zero_exit_with_a_session_error_still_fails(self) -> None:
        capture = load_capture("copilot", "api_500")
        agent, _ = agent_for(FakeRun(stdout=capture.stdout_lines, returncode=0))
        with pytest.raises(CliExitError) as caught:
            agent.run("hello")
        assert caught.value.kind is FailureKind.TRANSIENT


class TestMcpThroughTheAgent:
    def test_installed_servers_are_read_back_from_argv(self, tmp_path: Path) -> None:
        seen: list[dict[str, Any]] = []

        def run(request: CommandRequest) -> FakeRun:
            seen.append(installed_mcp_servers("copilot", request, tmp_path))
            return load_capture("copilot", "plain").fake_run()

        agent, executor = agent_for(run)
        servers = (
            StdioMcpServer("files", "/usr/bin/mcp-files", ("--root", "/w"), {"TOKEN": "t"}),
            HttpMcpServer("docs", "https://docs.example.com/mcp"),
        )
        agent.run(TurnRequest("hi", mcp_servers=servers, mcp_workspace=tmp_path))
        assert seen == [
            {
                "files": {
                    "command": "/usr/bin/mcp-files",
                    "args": ["--root", "/w"],
                    "env": {"TOKEN": "t"},
                },
                "docs": {"url": "https://docs.example.com/mcp", "transport": "http"},
            }
        ]
        assert list(tmp_path.iterdir()) == []
        assert "--additional-mcp-config" in executor.requests[0].argv
