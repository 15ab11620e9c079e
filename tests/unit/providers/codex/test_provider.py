from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import (
    CliExitError,
    FailureKind,
    SchemaDialectError,
    SessionResumeError,
)
from agentshim.core.events import Lifecycle, SessionStarted, ToolCall, ToolResult
from agentshim.core.mcp import StdioMcpServer
from agentshim.core.permissions import NativeMode
from agentshim.core.provider import ContextualStreamParser, Provider
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.core.usage import CostSource
from agentshim.execution.executor import CommandRequest
from agentshim.providers import get_plugin
from agentshim.providers.codex import PROFILE, CodexProvider, CodexStreamParser
from agentshim.providers.codex.model_data import MODEL_TABLE, PRICING_TABLE
from agentshim.testing import FakeExecutor, FakeRun, RecordingEventHandler, installed_mcp_servers
from tests.unit.providers.fixtures import load_capture

THREAD = "01a22758-303e-7462-9a22-376e1126431f"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/home/user"}


def agent_for(
    *runs: FakeRun, provider: str | Provider = "codex", model: str | None = None
) -> tuple[CliAgent, FakeExecutor, RecordingEventHandler]:
    executor = FakeExecutor(list(runs), binaries={"codex": "/usr/bin/codex"})
    events = RecordingEventHandler()
    agent = CliAgent(provider, executor=executor, env=ENV, event_handlers=events, model=model)
    return agent, executor, events


class TestProfile:
    def test_profile_states_codex_facts(self) -> None:
        assert PROFILE.auth_files == PROFILE.credential_files == (".codex/auth.json",)
        assert all(f.startswith(".codex/") for f in PROFILE.auth_files + PROFILE.resume_state_paths)
        assert set(PROFILE.native_permission_modes) == set(NativeMode)

    def test_provider_and_parser_satisfy_the_protocols(self) -> None:
        provider = CodexProvider()
        assert isinstance(provider, Provider)
        parser = provider.new_parser(lambda _: None, expect_structured=False)
        assert isinstance(parser, CodexStreamParser)
        assert isinstance(parser, ContextualStreamParser)

    def test_the_plugin(self) -> None:
        plugin = get_plugin("codex")
        assert isinstance(plugin.create_provider(), CodexProvider)
        assert plugin.model_table() is MODEL_TABLE
        assert plugin.pricing_table() is PRICING_TABLE
        assert PRICING_TABLE.version
        assert PRICING_TABLE.date

    def test_model_facts(self) -> None:
        assert MODEL_TABLE.context_window("gpt-5.1-codex") == 400_000
        assert MODEL_TABLE.context_window("fake-model") is None
        assert PRICING_TABLE.get("fake-model") is None


class TestRecordedTurns:
    @pytest.mark.parametrize(
        ("name", "text", "thread", "input_tokens"),
        [
            ("plain", "Hello from the fake model.", "01a22758-201e-7550-98d5-d57dc8f5d000", 100),
            (
                "ephemeral",
                "Hello from the fake model.",
                "01a2275c-914f-72b2-874c-059806dcfb38",
                100,
            ),
            (
                "known_model_gpt5",
                "Hello from the fake model.",
                "01a22758-8424-7501-a47a-392d92ff8905",
                100,
            ),
            ("tool_shell", "Done.", THREAD, 200),
            ("pypi_bin_0163_tool_shell", "Done.", "01a2275c-e004-7ec1-8e1b-468d8f4aaa51", 200),
            (
                "pypi_bin_0163_tool_shell_sandbox_broken",
                "Done.",
                "01a2275c-ecdf-7a32-a7d7-3bbe7737e7db",
                200,
            ),
        ],
    )
    def test_successful_turns(self, name: str, text: str, thread: str, input_tokens: int) -> None:
        agent, executor, events = agent_for(load_capture("codex", name).fake_run())
        result = agent.run("say hello")
        assert (result.text, result.session_id, result.resumed) == (text, thread, False)
        assert result.usage.tokens.input_tokens == input_tokens
        assert result.exit_code == 0
        assert events.of_type(SessionStarted) == [SessionStarted(thread)]
        assert executor.requests[0].stdin == "say hello"

    def test_a_tool_turn_reports_the_tool(self) -> None:
        agent, _, events = agent_for(load_capture("codex", "tool_shell").fake_run())
        agent.run("run echo")
        assert [c.args for c in events.of_type(ToolCall)] == [
            {"command": "/bin/bash -lc 'echo hello'"}
        ]
        assert [r.stdout for r in events.of_type(ToolResult)] == ["hello\n"]

    def test_a_known_model_is_priced(self) -> None:
        agent, _, _ = agent_for(load_capture("codex", "known_model_gpt5").fake_run())
        result = agent.run("hi")
        assert result.cost_usd == pytest.approx(0.000225)
        assert result.usage.cost_source is CostSource.PRICED

    def test_an_unknown_model_has_no_cost(self) -> None:
        agent, _, _ = agent_for(load_capture("codex", "plain").fake_run())
        result = agent.run("hi")
        assert result.cost_usd is None
        assert result.usage.cost_source is CostSource.UNKNOWN_MODEL

    @pytest.mark.parametrize(
        "name",
        [
            "api_400_context_length",
            "sse_failed_context_length",
            "api_401",
            "api_500",
            "api_500_with_retries",
        ],
    )
    def test_a_failed_turn_says_what_its_turn_failed_frame_says(self, name: str) -> None:
        recording = load_capture("codex", name)
        agent, _, _ = agent_for(recording.fake_run())
        with pytest.raises(CliExitError) as caught:
            agent.run("hi")
        assert caught.value.detail == json.loads(recording.stdout_lines[-1])["error"]["message"]


class TestResume:
    def test_a_resumed_session_counts_only_its_own_tokens(self) -> None:
        agent, executor, _ = agent_for(
            load_capture("codex", "tool_shell").fake_run(),
            load_capture("codex", "resume").fake_run(),
            load_capture("codex", "resume_opts_after").fake_run(),
        )
        session = agent.start_session()
        first = session.turn("one")
        second = session.turn("two")
        third = session.turn("three")
        assert [r.usage.tokens.input_tokens for r in (first, second, third)] == [200, 100, 100]
        assert [r.usage.tokens.output_tokens for r in (first, second, third)] == [20, 10, 10]
        assert [r.resumed for r in (first, second, third)] == [False, True, True]
        assert all(r.usage.increment_known for r in (first, second, third))
        assert executor.requests[1].argv[:5] == ("/usr/bin/codex", "exec", "resume", THREAD, "-")

    def test_a_session_adopted_without_usage_marks_the_increment_unknown(self) -> None:
        agent, _, _ = agent_for(
            load_capture("codex", "resume").fake_run(),
            load_capture("codex", "resume_opts_after").fake_run(),
        )
        session = agent.start_session(session_id=THREAD)
        first = session.turn("two")
        assert not first.usage.increment_known
        assert first.usage.raw["input_tokens"] == 300
        second = session.turn("three")
        assert second.usage.increment_known
        assert second.usage.tokens.input_tokens == 100

    def test_a_resume_name_that_matches_nothing_is_not_a_continuation(self) -> None:
        agent, executor, events = agent_for(load_capture("codex", "resume_missing_name").fake_run())
        session = agent.start_session(session_id="no-such-thread-name")
        result = session.turn("hi")
        new_thread = "01a22758-4cb2-7cc3-b250-de1d55f17bfb"
        assert (result.resumed, result.session_id, session.session_id) == (
            False,
            new_thread,
            new_thread,
        )
        assert result.text == "Hello from the fake model."
        assert result.usage.increment_known
        assert result.usage.tokens.input_tokens == 100
        kinds = [e.kind for e in events.of_type(Lifecycle)]
        assert "resume_not_found" in kinds
        assert executor.requests[0].argv[2:5] == ("resume", "no-such-thread-name", "-")


class TestClassifyExit:
    def _error(self, stderr: str, detail: str = "") -> CliExitError:
        argv = ["/usr/bin/codex", "exec", "resume", THREAD, "-", "--json"]
        return CliExitError(argv, 1, "", stderr, kind=FailureKind.AUTH, detail=detail)

    def test_no_rollout_on_a_resumed_turn(self) -> None:
        error = self._error("Error: thread/resume failed: no rollout found for thread id x")
        classified = CodexProvider().classify_exit(error, resumed=True)
        assert isinstance(classified, SessionResumeError)
        assert classified.session_id == THREAD
        assert (classified.kind, classified.returncode, classified.stderr) == (
            FailureKind.AUTH,
            1,
            error.stderr,
        )

    def test_anything_else_is_unchanged(self) -> None:
        error = self._error("Error: unexpected status 401")
        assert CodexProvider().classify_exit(error, resumed=True) is error
        rollout = self._error("no rollout found")
        assert CodexProvider().classify_exit(rollout, resumed=False) is rollout


class TestOutputSchema:
    schema = {
        "type": "object",
        "properties": {"answer": {"type": "string"}, "count": {"type": "integer"}},
        "required": ["answer", "count"],
        "additionalProperties": False,
    }

    def test_the_schema_file_is_passed_and_the_payload_returned(self, tmp_path: Path) -> None:
        agent, executor, _ = agent_for(load_capture("codex", "output_schema").fake_run())
        request = TurnRequest(
            "answer", output_schema=OutputSchema(self.schema, host_dir=tmp_path, cli_dir="/in/box")
        )
        result = agent.run(request)
        assert result.structured_output == {"answer": "hello", "count": 2}
        argv = list(executor.requests[0].argv)
        path = argv[argv.index("--output-schema") + 1]
        assert path.startswith("/in/box/")
        assert path.endswith(".json")
        written = tmp_path / Path(path).name
        assert json.loads(written.read_text(encoding="utf-8")) == self.schema

    def test_a_schema_outside_the_strict_dialect_is_refused_before_running(
        self, tmp_path: Path
    ) -> None:
        agent, executor, _ = agent_for(load_capture("codex", "output_schema").fake_run())
        loose = {"type": "object", "properties": {"a": {"type": "string"}}}
        with pytest.raises(SchemaDialectError):
            agent.run(TurnRequest("x", output_schema=OutputSchema(loose, host_dir=tmp_path)))
        assert executor.requests == []


class TestMcpThroughTheAgent:
    def test_installed_servers_read_back_from_the_argv(self, tmp_path: Path) -> None:
        seen: list[dict[str, dict[str, object]]] = []
        recording = load_capture("codex", "plain")

        def serve(request: CommandRequest) -> FakeRun:
            seen.append(installed_mcp_servers("codex", request, tmp_path))
            return recording.fake_run()

        executor = FakeExecutor(serve, binaries={"codex": "/usr/bin/codex"})
        agent = CliAgent("codex", executor=executor, env=ENV)
        server = StdioMcpServer(
            "my.srv", "/usr/bin/srv", args=("-v",), env={"K": "v"}, tool_timeout=5
        )
        agent.run(TurnRequest("hi", mcp_servers=(server,), mcp_workspace=tmp_path))
        assert seen == [{"my.srv": {"command": "/usr/bin/srv", "args": ["-v"], "env": {"K": "v"}}}]
        assert 'mcp_servers."my.srv".tool_timeout_sec=5.0' in executor.requests[0].argv
        assert list(tmp_path.iterdir()) == []
