from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentshim import CliAgent
from agentshim.core.errors import (
    CliExitError,
    FailureKind,
    McpConfigError,
    ProviderCapabilityError,
)
from agentshim.core.events import SessionStarted, ToolCall, ToolResult
from agentshim.core.mcp import HttpMcpServer, StdioMcpServer
from agentshim.core.turn import TurnRequest
from agentshim.core.usage import CostSource, TokenUsage
from agentshim.execution.executor import CommandRequest
from agentshim.providers.opencode import OpencodeProvider
from agentshim.testing import FakeExecutor, FakeRun, RecordingEventHandler, installed_mcp_servers
from tests.unit.providers.fixtures import load_capture

BIN = "/usr/bin/opencode"
ENV = {"PATH": "/usr/bin"}
RESUMED = "ses_dd8a6cd86ffeX01SZ77MV3sIeY"


def agent_for(runs: Any) -> tuple[CliAgent, FakeExecutor, RecordingEventHandler]:
    recorder = RecordingEventHandler()
    fake = FakeExecutor(runs, binaries={"opencode": BIN})
    return CliAgent("opencode", executor=fake, env=ENV, event_handlers=recorder), fake, recorder


class TestRecordedTurnsThroughTheAgent:
    def test_plain(self) -> None:
        agent, _, recorder = agent_for(load_capture("opencode", "plain").fake_run())
        result = agent.run("Say hello.")
        assert result.text == "Hello from the fake model."
        assert result.session_id == "ses_dd8a6f628ffeEuu5Wp8gqG5nsE"
        assert result.usage.tokens == TokenUsage(input_tokens=100, output_tokens=10, turns=1)
        assert result.cost_usd == 0.0
        assert result.usage.cost_source is CostSource.REPORTED
        assert result.context_tokens == 100
        assert recorder.of_type(SessionStarted) == [SessionStarted(result.session_id)]

    def test_print_logs_stderr_does_not_disturb_the_turn(self) -> None:
        agent, _, _ = agent_for(load_capture("opencode", "plain_printlogs").fake_run())
        assert agent.run("Say hello.").text == "Hello from the fake model."

    def test_tool_shell(self) -> None:
        agent, _, recorder = agent_for(load_capture("opencode", "tool_shell").fake_run())
        result = agent.run("TOOL: run echo hello")
        assert result.text == "Done."
        assert [c.tool for c in recorder.of_type(ToolCall)] == ["bash"]
        assert [r.stdout for r in recorder.of_type(ToolResult)] == ["hello\n"]
        assert result.usage.tokens.input_tokens == 200

    def test_exit_zero_without_a_stop_step_is_a_failed_turn(self) -> None:
        truncated = load_capture("opencode", "tool_shell").stdout_lines[:3]
        agent, _, _ = agent_for(FakeRun(stdout=truncated, returncode=0))
        with pytest.raises(CliExitError) as caught:
            agent.run("x")
        assert "tool-calls" in caught.value.detail


class TestClassifyExit:
    def test_a_kind_from_the_stream_is_kept(self) -> None:
        error = CliExitError(["opencode"], 1, kind=FailureKind.TRANSIENT, detail="fake error 500")
        assert OpencodeProvider().classify_exit(error, resumed=True) is error

    def test_stderr_is_read_when_the_stream_said_nothing(self) -> None:
        error = CliExitError(["opencode"], 1, "", "Error: 429 Too Many Requests\n")
        classified = OpencodeProvider().classify_exit(error, resumed=False)
        assert isinstance(classified, CliExitError)
        assert classified.kind is FailureKind.TRANSIENT


def _config(workspace: Path) -> dict[str, Any]:
    return json.loads((workspace / "opencode.json").read_text())


class TestMcp:
    def test_servers_are_merged_into_the_users_file_and_removed_after(self, tmp_path: Path) -> None:
        original = {
            "model": "fake/fake-model",
            "mcp": {"mine": {"type": "remote", "url": "https://x.test"}},
        }
        (tmp_path / "opencode.json").write_text(json.dumps(original))
        seen: dict[str, Any] = {}
        plain = load_capture("opencode", "plain").fake_run()

        def run(request: CommandRequest) -> FakeRun:
            seen["servers"] = installed_mcp_servers("opencode", request, tmp_path)
            seen["file"] = _config(tmp_path)
            seen["env"] = dict(request.env)
            return plain

        agent, _, _ = agent_for(run)
        stdio = StdioMcpServer(
            "files", "/usr/bin/mcp-files", ("--root", "/w"), {"TOKEN": "t"}, tool_timeout=3
        )
        http = HttpMcpServer("docs", "https://example.test/mcp", headers={"Authorization": "x"})
        agent.run(TurnRequest("hi", cwd=str(tmp_path), mcp_servers=(stdio, http)))
        assert seen["servers"]["files"] == {
            "command": "/usr/bin/mcp-files",
            "args": ["--root", "/w"],
            "env": {"TOKEN": "t"},
        }
        assert seen["servers"]["docs"] == {"url": "https://example.test/mcp", "transport": "http"}
        written = seen["file"]["mcp"]
        token = written["files"].pop("environment")["TOKEN"]
        assert written["files"] == {
            "type": "local",
            "command": ["/usr/bin/mcp-files", "--root", "/w"],
            "enabled": True,
            "timeout": 3000,
        }
        header = written["docs"].pop("headers")["Authorization"]
        assert written["docs"] == {
            "type": "remote",
            "url": "https://example.test/mcp",
            "enabled": True,
        }
        # The file names variables; the secrets are only in the CLI's environment.
        for reference, value in ((token, "t"), (header, "x")):
            assert reference.startswith("{env:AGENTSHIM_MCP_")
            assert seen["env"][reference[5:-1]] == value
        assert written["mine"] == original["mcp"]["mine"]
        assert seen["file"]["model"] == "fake/fake-model"
        assert "$schema" in seen["file"]
        assert _config(tmp_path) == original

    def test_a_new_file_gets_the_schema_and_is_removed_after(self, tmp_path: Path) -> None:
        install = OpencodeProvider().install_mcp(tmp_path, [StdioMcpServer("s", "srv")])
        assert _config(tmp_path)["$schema"] == "https://opencode.ai/config.json"
        install.restore()
        assert not (tmp_path / "opencode.json").exists()

    def test_startup_timeout_cannot_be_expressed(self, tmp_path: Path) -> None:
        with pytest.raises(ProviderCapabilityError, match="startup"):
            OpencodeProvider().install_mcp(
                tmp_path, [HttpMcpServer("h", "https://x.test", startup_timeout=1)]
            )

    def test_jsonc_user_file_is_merged_and_comes_back_with_its_comments(
        self, tmp_path: Path
    ) -> None:
        text = '{\n  // my config\n  "model": "a/b",\n}\n'
        (tmp_path / "opencode.json").write_text(text)
        installation = OpencodeProvider().install_mcp(tmp_path, [StdioMcpServer("s", "srv")])
        assert "s" in json.loads((tmp_path / "opencode.json").read_text())["mcp"]
        assert installation.restore() is None
        assert (tmp_path / "opencode.json").read_text() == text

    def test_servers_need_a_workspace(self) -> None:
        with pytest.raises(McpConfigError):
            OpencodeProvider().install_mcp(None, [StdioMcpServer("s", "srv")])
