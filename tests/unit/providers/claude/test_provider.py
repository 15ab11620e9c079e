from __future__ import annotations

import json
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agentshim.cli_agent import AgentSession, CliAgent
from agentshim.core.errors import (
    CliExitError,
    FailureKind,
    McpConfigError,
    ProviderCapabilityError,
    SessionResumeError,
)
from agentshim.core.events import SessionStarted, ToolCall, ToolResult, UsageReport
from agentshim.core.mcp import HttpMcpServer, StdioMcpServer
from agentshim.core.provider import NoMcpInstallation
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.core.usage import TokenUsage
from agentshim.execution.executor import CommandRequest
from agentshim.providers import get_plugin
from agentshim.providers.claude import (
    SANDBOX_ENV,
    ClaudeProvider,
    SandboxConfig,
    mcp_entry,
    scripted_lines,
)
from agentshim.testing import (
    FakeExecutor,
    FakeRun,
    RecordingEventHandler,
    ScriptedTurn,
    installed_mcp_servers,
)
from tests.unit.providers.fixtures import Capture, capture_names, fake_agent, load_capture

from ._captures import schema_of
from ._expected import EXPECTED

BINARIES = {"claude": "/usr/bin/claude"}
agent_for = partial(fake_agent, "claude")


def request_for(capture: Capture, tmp_path: Path) -> TurnRequest:
    schema = schema_of(capture)
    output = OutputSchema(schema, tmp_path) if schema is not None else None
    return TurnRequest(capture.stdin or "hi", output_schema=output)


def session_for(agent: CliAgent, capture: Capture) -> AgentSession:
    return agent.start_session(session_id=capture.flag_value("--resume"))


class TestProfile:
    def test_the_plugins_model_and_price_tables(self) -> None:
        plugin = get_plugin("claude")
        assert plugin.model_table().context_window("claude-opus-4-8[1m]") == 200_000
        assert plugin.pricing_table().get("claude-opus-4-8") is not None

    def test_sandbox_env_is_offered_as_a_default_only_with_a_sandbox(self) -> None:
        assert ClaudeProvider().sandbox_env == SANDBOX_ENV
        assert dict(ClaudeProvider().env_defaults) == {}
        sandboxed = ClaudeProvider(sandbox=SandboxConfig())
        assert dict(sandboxed.env_defaults) == {"CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR": "1"}
        agent = CliAgent(sandboxed, executor=FakeExecutor(binaries=BINARIES), env={"PATH": "/x"})
        assert agent.cli.env["CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR"] == "1"

    @pytest.mark.parametrize("folder", ["recorded", "recorded-2.1.332"])
    def test_the_default_model_of_every_checked_version_is_in_the_catalogue(
        self, folder: str
    ) -> None:
        frames = [
            json.loads(line)
            for line in load_capture("claude", f"{folder}/rec_plain_answer").stdout_lines
        ]
        (init,) = [f for f in frames if f.get("subtype") == "init"]
        model = init["model"].removesuffix("[1m]")
        spec = get_plugin("claude").model_table().get(model)
        assert spec is not None, model
        (usage,) = next(f for f in frames if f.get("type") == "result")["modelUsage"].values()
        if not init["model"].endswith("[1m]"):
            assert spec.context_window == usage["contextWindow"]
        assert spec.max_output_tokens == usage["maxOutputTokens"]


SUCCESSES = sorted(name for name, e in EXPECTED.items() if e.kind is None)
FAILURES = sorted(name for name, e in EXPECTED.items() if e.kind is not None)
RESUME_LOST = {"d_resume_missing_nonuuid", "d_resume_missing_uuid"}


class TestCaptureReplayThroughTheAgent:
    def test_every_fixture_is_replayed(self) -> None:
        assert set(SUCCESSES) | set(FAILURES) == set(capture_names("claude"))

    @pytest.mark.parametrize("name", SUCCESSES)
    def test_successful_turn(self, name: str, tmp_path: Path) -> None:
        capture, expected = load_capture("claude", name), EXPECTED[name]
        recorder = RecordingEventHandler()
        agent, executor = agent_for(capture.fake_run(), recorder)
        session = session_for(agent, capture)

        result = session.turn(request_for(capture, tmp_path))

        assert result.text == expected.text
        assert result.session_id == expected.session_id == session.session_id
        assert result.resumed is (capture.flag_value("--resume") is not None)
        assert result.usage.tokens == expected.tokens
        assert result.cost_usd == expected.cost
        assert result.structured_output == expected.structured
        assert result.context_tokens == expected.context_tokens
        assert result.exit_code == 0
        assert executor.requests[0].stdin == (capture.stdin or "hi")
        assert recorder.of_type(SessionStarted)[0].session_id == expected.session_id
        assert recorder.of_type(UsageReport)[-1].usage == result.usage

    @pytest.mark.parametrize("name", FAILURES)
    def test_failed_turn(self, name: str, tmp_path: Path) -> None:
        capture, expected = load_capture("claude", name), EXPECTED[name]
        agent, _ = agent_for(capture.fake_run())
        session = session_for(agent, capture)

        with pytest.raises(CliExitError) as info:
            session.turn(request_for(capture, tmp_path))

        error = info.value
        assert error.kind is expected.kind
        assert expected.error_has in error.detail
        assert error.returncode == capture.exit_code
        if name in RESUME_LOST:
            assert isinstance(error, SessionResumeError)
            assert error.session_id == capture.flag_value("--resume")
            assert session.session_id == capture.flag_value(
                "--resume"
            )  # the lost id is not replaced
        else:
            assert not isinstance(error, SessionResumeError)
            assert session.session_id == expected.session_id  # adopted before raising

    def test_tool_events_reach_the_handler(self) -> None:
        recorder = RecordingEventHandler()
        agent, _ = agent_for(load_capture("claude", "b_tool_bash").fake_run(), recorder)
        agent.run("Run echo hello in bash.")
        assert [c.tool for c in recorder.of_type(ToolCall)] == ["Bash"]
        assert [r.stdout for r in recorder.of_type(ToolResult)] == ["hello"]

    def test_schema_turn_without_structured_output_fails_with_exit_zero(
        self, tmp_path: Path
    ) -> None:
        capture = load_capture("claude", "f_json_schema_no_tool_call")
        agent, _ = agent_for(capture.fake_run())
        with pytest.raises(CliExitError) as info:
            agent.run(request_for(capture, tmp_path))
        assert info.value.kind is FailureKind.SCHEMA
        assert info.value.returncode == 0

    def test_resumed_transient_failure_keeps_the_conversation(self) -> None:
        agent, _ = agent_for(load_capture("claude", "e2_http529").fake_run())
        session = agent.start_session(session_id="0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966")
        with pytest.raises(CliExitError) as info:
            session.turn("hello")
        assert not isinstance(info.value, SessionResumeError)
        assert info.value.kind is FailureKind.TRANSIENT

    def test_resumed_unclassified_failure_is_a_resume_error(self) -> None:
        agent, _ = agent_for(load_capture("claude", "h_no_verbose").fake_run())
        session = agent.start_session(session_id="0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966")
        with pytest.raises(SessionResumeError) as info:
            session.turn("hello")
        assert info.value.session_id == "0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966"

    def test_unflagged_no_conversation_found_is_a_resume_error(self) -> None:
        agent, _ = agent_for(load_capture("claude", "d_resume_missing_uuid").fake_run())
        with pytest.raises(SessionResumeError) as info:
            agent.run("hello")
        assert info.value.session_id == "1c37e53a-67c2-4843-942e-8dc057b7f6aa"


def _exit_error(**fields: Any) -> CliExitError:
    defaults: dict[str, Any] = {"argv": ["/usr/bin/claude", "-p"], "returncode": 1}
    defaults.update(fields)
    return CliExitError(**defaults)


class TestClassifyExit:
    provider = ClaudeProvider()

    def test_fresh_unclassified_failure_is_returned_unchanged(self) -> None:
        error = _exit_error(stderr="boom")
        assert self.provider.classify_exit(error, resumed=False) is error

    @pytest.mark.parametrize("kind", [k for k in FailureKind if k is not FailureKind.OTHER])
    def test_resumed_classified_failure_keeps_its_kind(self, kind: FailureKind) -> None:
        error = _exit_error(argv=["claude", "-p", "--resume", "abc"], kind=kind)
        assert self.provider.classify_exit(error, resumed=True) is error

    def test_resumed_unclassified_failure_names_the_resumed_id(self) -> None:
        error = _exit_error(
            argv=["claude", "-p", "--resume", "abc"], detail="d", stdout="o", stderr="e"
        )
        classified = self.provider.classify_exit(error, resumed=True)
        assert isinstance(classified, SessionResumeError)
        assert (classified.session_id, classified.detail, classified.returncode) == ("abc", "d", 1)
        assert (classified.stdout, classified.stderr, classified.kind) == (
            "o",
            "e",
            FailureKind.OTHER,
        )
        assert "forget this session id" in str(classified)

    def test_tool_output_quoting_the_phrase_is_not_a_resume_error(self) -> None:
        line = json.dumps(
            {
                "type": "user",
                "message": {
                    "content": [{"type": "tool_result", "content": "No conversation found"}]
                },
            }
        )
        error = _exit_error(stdout=line + "\n")
        assert self.provider.classify_exit(error, resumed=False) is error

    def test_result_frame_errors_name_a_lost_conversation(self) -> None:
        stdout = "".join(load_capture("claude", "d_resume_missing_uuid").stdout_lines)
        classified = self.provider.classify_exit(_exit_error(stdout=stdout), resumed=False)
        assert isinstance(classified, SessionResumeError)
        assert classified.session_id == "1c37e53a-67c2-4843-942e-8dc057b7f6aa"

    def test_resume_error_passes_through(self) -> None:
        error = SessionResumeError(["claude"], 1, session_id="x")
        assert self.provider.classify_exit(error, resumed=True) is error


class TestMcp:
    def test_entries(self) -> None:
        stdio = StdioMcpServer("fs", "/usr/bin/fs-server", ("--root", "/w"), {"TOKEN": "t"})
        assert mcp_entry(stdio) == {
            "command": "/usr/bin/fs-server",
            "args": ["--root", "/w"],
            "env": {"TOKEN": "t"},
        }
        assert mcp_entry(StdioMcpServer("bare", "srv")) == {"command": "srv", "args": []}
        http = HttpMcpServer(
            "docs", "https://mcp.example.com/x", "sse", {"Authorization": "Bearer k"}
        )
        assert mcp_entry(http) == {
            "type": "sse",
            "url": "https://mcp.example.com/x",
            "headers": {"Authorization": "Bearer k"},
        }

    def test_timeouts_are_refused(self, tmp_path: Path) -> None:
        server = StdioMcpServer("fs", "srv", tool_timeout=5)
        with pytest.raises(ProviderCapabilityError, match="timeout"):
            ClaudeProvider().install_mcp(tmp_path, [server])
        assert not (tmp_path / ".mcp.json").exists()

    def test_no_servers_installs_nothing(self, tmp_path: Path) -> None:
        installation = ClaudeProvider().install_mcp(None, [])
        assert isinstance(installation, NoMcpInstallation)
        assert list(tmp_path.iterdir()) == []

    def test_servers_without_a_workspace_are_refused(self) -> None:
        with pytest.raises(McpConfigError, match="no workspace"):
            ClaudeProvider().install_mcp(None, [StdioMcpServer("fs", "srv")])

    def test_install_merges_and_restore_puts_the_file_back(self, tmp_path: Path) -> None:
        config = tmp_path / ".mcp.json"
        original = '{"mcpServers": {"mine": {"command": "mine"}}, "other": 1}\n'
        config.write_text(original)
        installation = ClaudeProvider().install_mcp(tmp_path, [StdioMcpServer("fs", "srv", ("a",))])
        document = json.loads(config.read_text())
        assert document["mcpServers"] == {
            "mine": {"command": "mine"},
            "fs": {"command": "srv", "args": ["a"]},
        }
        assert document["other"] == 1
        assert installation.argv == ()
        assert installation.restore() is None
        assert config.read_text() == original

    def test_unreadable_config_is_an_mcp_config_error(self, tmp_path: Path) -> None:
        (tmp_path / ".mcp.json").write_text("[1, 2]")
        with pytest.raises(McpConfigError):
            ClaudeProvider().install_mcp(tmp_path, [StdioMcpServer("fs", "srv")])

    def test_a_commented_mcp_json_is_refused_untouched(self, tmp_path: Path) -> None:
        # Claude Code reads .mcp.json as strict JSON: a file with comments would not load in
        # the CLI either, so it is refused before the turn instead of half-working.
        original = '{\n  // mine\n  "mcpServers": {}\n}\n'
        (tmp_path / ".mcp.json").write_text(original)
        with pytest.raises(McpConfigError):
            ClaudeProvider().install_mcp(tmp_path, [StdioMcpServer("fs", "srv")])
        assert (tmp_path / ".mcp.json").read_text() == original

    def test_installed_servers_read_back_during_the_turn(self, tmp_path: Path) -> None:
        servers = [
            StdioMcpServer("fs", "/usr/bin/fs", ("--x",), {"K": "v"}),
            HttpMcpServer("web", "https://mcp.example.com", "http", {"Authorization": "b"}),
        ]
        seen: list[dict[str, dict[str, Any]]] = []

        def run(request: CommandRequest) -> FakeRun:
            seen.append(installed_mcp_servers("claude", request, tmp_path))
            lines = scripted_lines(ScriptedTurn(text="ok"))
            return FakeRun(stdout=lines.stdout)

        agent, _ = agent_for(run)
        agent.run(TurnRequest("use the tools", cwd=str(tmp_path), mcp_servers=servers))
        assert seen == [
            {
                "fs": {"command": "/usr/bin/fs", "args": ["--x"], "env": {"K": "v"}},
                "web": {"url": "https://mcp.example.com", "transport": "http"},
            }
        ]
        assert not (tmp_path / ".mcp.json").exists()

    def run_seeing_env(
        self, tmp_path: Path, servers: list[StdioMcpServer], env: dict[str, str] | None = None
    ) -> dict[str, str]:
        seen: list[dict[str, str]] = []

        def run(request: CommandRequest) -> FakeRun:
            seen.append(dict(request.env))
            return FakeRun(stdout=scripted_lines(ScriptedTurn(text="ok")).stdout)

        executor = FakeExecutor(run, binaries=BINARIES)
        agent = CliAgent("claude", executor=executor, env={"PATH": "/usr/bin", **(env or {})})
        agent.run(TurnRequest("use the tools", cwd=str(tmp_path), mcp_servers=servers))
        (turn_env,) = seen
        return turn_env

    def test_a_turn_with_its_own_servers_gets_its_tools_up_front(self, tmp_path: Path) -> None:
        # 2.1.332 would otherwise defer them behind ToolSearch (docs/providers/claude.md).
        env = self.run_seeing_env(tmp_path, [StdioMcpServer("fs", "/usr/bin/fs")])
        assert env["ENABLE_TOOL_SEARCH"] == "false"

    def test_a_turn_without_servers_leaves_the_deferral_alone(self, tmp_path: Path) -> None:
        assert "ENABLE_TOOL_SEARCH" not in self.run_seeing_env(tmp_path, [])

    def test_the_callers_own_setting_wins(self, tmp_path: Path) -> None:
        env = self.run_seeing_env(
            tmp_path, [StdioMcpServer("fs", "/usr/bin/fs")], {"ENABLE_TOOL_SEARCH": "true"}
        )
        assert env["ENABLE_TOOL_SEARCH"] == "true"


class TestUsageAcrossTurns:
    def test_session_resumes_the_id_the_first_turn_named(self) -> None:
        first, second = load_capture("claude", "a_plain_text"), load_capture("claude", "c_resume")
        agent, executor = agent_for([first.fake_run(), second.fake_run()])
        session = agent.start_session()
        one = session.turn("Say hello and tell me a secret word.")
        two = session.turn("What did I ask you before?")
        assert one.session_id == two.session_id == "0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966"
        assert "--resume" not in executor.requests[0].argv
        assert executor.requests[1].argv[5:7] == ("--resume", one.session_id)
        assert two.resumed
        assert one.usage.tokens + two.usage.tokens == TokenUsage(
            input_tokens=200, output_tokens=40, turns=2
        )
