from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agentshim.core.errors import CliExitError, FailureKind
from agentshim.core.mcp import HttpMcpServer, StdioMcpServer
from agentshim.core.turn import TurnRequest
from agentshim.execution.executor import CommandRequest
from agentshim.providers import get_plugin
from agentshim.testing import FakeRun, installed_mcp_servers
from tests.unit.providers.fixtures import fake_agent, load_capture

agent_for = partial(fake_agent, "copilot")


class TestProfile:
    def test_the_plugin_prices_no_copilot_model(self) -> None:
        plugin = get_plugin("copilot")
        assert plugin.pricing_table().get("gpt-5.4") is None


class TestCaptureReplayThroughTheAgent:
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
