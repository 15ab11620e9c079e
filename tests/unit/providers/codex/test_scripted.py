from __future__ import annotations

import json
from typing import Any

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import CliExitError, FailureKind, SessionResumeError
from agentshim.core.events import AgentEvent, ToolCall, ToolKind, ToolResult
from agentshim.core.provider import ParserContext
from agentshim.core.turn import OutputSchema, ParsedTurn, TurnRequest
from agentshim.core.usage import TokenUsage
from agentshim.providers.codex import CodexStreamParser, resume_failure_lines, scripted_lines
from agentshim.testing import (
    FakeExecutor,
    FakeRun,
    ScriptedTurn,
    scripted_resume_failure,
    scripted_turn,
)
from agentshim.testing.scripted import ToolFailure
from tests.unit.providers.fixtures import load_capture

THREAD = "01a22758-303e-7462-9a22-376e1126431f"


def parse(
    stdout: tuple[str, ...], *, structured: bool = False
) -> tuple[ParsedTurn, list[AgentEvent]]:
    events: list[AgentEvent] = []
    parser = CodexStreamParser(events.append, expect_structured=structured)
    for line in stdout:
        parser.feed_stdout(line)
    return parser.finish(), events


def shape(events: list[AgentEvent]) -> list[str]:
    """Event kinds in order, ignoring the unknown-model warning the recordings carry."""
    out: list[str] = []
    for event in events:
        kind = getattr(event, "kind", None)
        if isinstance(kind, str) and kind == "warning":
            continue
        out.append(type(event).__name__ + (f":{kind}" if isinstance(kind, str) else ""))
    return out


def frame_types(stdout: tuple[str, ...]) -> list[str]:
    out: list[str] = []
    for line in stdout:
        frame: dict[str, Any] = json.loads(line)
        if frame.get("item", {}).get("type") == "error":
            continue
        item = frame.get("item", {}).get("type")
        out.append(frame["type"] + (f"/{item}" if item else ""))
    return out


class TestSameAsRecorded:
    def test_a_plain_turn(self) -> None:
        recorded = load_capture("codex", "plain")
        scripted = scripted_lines(
            ScriptedTurn(
                text="Hello from the fake model.",
                session_id="01a22758-201e-7550-98d5-d57dc8f5d000",
                usage=TokenUsage(input_tokens=100, output_tokens=10),
            )
        )
        assert frame_types(scripted.stdout) == frame_types(recorded.stdout_lines)
        ours, our_events = parse(scripted.stdout)
        theirs, their_events = parse(recorded.stdout_lines)
        assert shape(our_events) == shape(their_events)
        assert (ours.text, ours.session_id, ours.error) == (theirs.text, theirs.session_id, None)
        assert ours.usage is not None
        assert theirs.usage is not None
        assert ours.usage.tokens == theirs.usage.tokens
        assert ours.usage.raw == theirs.usage.raw

    def test_a_shell_tool_turn(self) -> None:
        recorded = load_capture("codex", "tool_shell")
        scripted = scripted_lines(
            ScriptedTurn(
                text="Done.",
                session_id=THREAD,
                usage=TokenUsage(input_tokens=200, output_tokens=20),
                tool_calls=[("shell", {"command": "/bin/bash -lc 'echo hello'"}, "hello\n")],
            )
        )
        assert frame_types(scripted.stdout) == frame_types(recorded.stdout_lines)
        ours, our_events = parse(scripted.stdout)
        theirs, their_events = parse(recorded.stdout_lines)
        assert shape(our_events) == shape(their_events)
        strip = lambda events: [  # noqa: E731
            (e.tool_id, e.tool, e.stdout, e.exit_code) for e in events if isinstance(e, ToolResult)
        ]
        assert strip(our_events) == strip(their_events)
        assert [e for e in our_events if isinstance(e, ToolCall)] == [
            e for e in their_events if isinstance(e, ToolCall)
        ]
        assert ours.text == theirs.text

    def test_a_failed_shell_tool_turn(self) -> None:
        recorded = load_capture("codex", "tool_shell_failed")
        command = "/bin/bash -lc 'ls /agentshim-missing-dir'"
        message = "ls: cannot access '/agentshim-missing-dir': No such file or directory\n"
        scripted = scripted_lines(
            ScriptedTurn(
                text="The command failed.",
                usage=TokenUsage(input_tokens=720, output_tokens=42),
                tool_calls=[("shell", {"command": command}, ToolFailure(message, exit_code=2))],
            )
        )
        # The recording says "Running it." before the call; the scripted turn does not.
        opening = "item.completed/agent_message"
        recorded_types = frame_types(recorded.stdout_lines)
        recorded_types.remove(opening)
        assert frame_types(scripted.stdout) == recorded_types

        def items(stdout: tuple[str, ...]) -> list[dict[str, Any]]:
            found = [json.loads(line).get("item", {}) for line in stdout]
            return [
                {k: v for k, v in item.items() if k != "id"}
                for item in found
                if item.get("type") == "command_execution"
            ]

        assert items(scripted.stdout) == items(recorded.stdout_lines)
        ours, our_events = parse(scripted.stdout)
        theirs, their_events = parse(recorded.stdout_lines)
        strip = lambda events: [  # noqa: E731
            (e.tool, e.stdout, e.stderr, e.exit_code, e.kind)
            for e in events
            if isinstance(e, ToolResult)
        ]
        assert strip(our_events) == strip(their_events)
        assert strip(our_events) == [("command_execution", "", message, 2, ToolKind.COMMAND)]
        assert (ours.text, ours.error) == ("The command failed.", None)
        assert ours.usage is not None
        assert theirs.usage is not None
        assert ours.usage.tokens == theirs.usage.tokens

    def test_a_failed_mcp_call_carries_the_message_as_its_error(self) -> None:
        scripted = scripted_lines(
            ScriptedTurn(
                text="ok", tool_calls=[("docs.search", {"q": "x"}, ToolFailure("index offline"))]
            )
        )
        _, events = parse(scripted.stdout)
        (result,) = [e for e in events if isinstance(e, ToolResult)]
        assert (result.stdout, result.stderr, result.exit_code) == ("", "index offline", 1)

    def test_a_failed_patch_is_a_failed_file_change(self) -> None:
        failure = ToolFailure("does not apply")
        scripted = scripted_lines(
            ScriptedTurn(text="ok", tool_calls=[("apply_patch", {"path": "a.py"}, failure)])
        )
        _, events = parse(scripted.stdout)
        (result,) = [e for e in events if isinstance(e, ToolResult)]
        assert (result.kind, result.stdout, result.failed) == (ToolKind.FILE_CHANGE, "", True)

    def test_a_failed_web_search_is_refused(self) -> None:
        with pytest.raises(ValueError, match="web_search"):
            scripted_lines(
                ScriptedTurn(tool_calls=[("web_search", {"query": "x"}, ToolFailure("no"))])
            )

    def test_a_structured_turn(self) -> None:
        recorded = load_capture("codex", "output_schema")
        scripted = scripted_lines(ScriptedTurn(structured_output={"answer": "hello", "count": 2}))
        ours, _ = parse(scripted.stdout, structured=True)
        theirs, _ = parse(recorded.stdout_lines, structured=True)
        assert ours.structured_output == theirs.structured_output
        assert ours.text == theirs.text

    def test_a_failed_turn(self) -> None:
        recorded = load_capture("codex", "api_500")
        scripted = scripted_lines(
            ScriptedTurn(text="We are currently experiencing high demand", returncode=1)
        )
        assert frame_types(scripted.stdout) == frame_types(recorded.stdout_lines)
        ours, our_events = parse(scripted.stdout)
        theirs, their_events = parse(recorded.stdout_lines)
        assert shape(our_events) == shape(their_events)
        assert (ours.error_kind, theirs.error_kind) == (
            FailureKind.TRANSIENT,
            FailureKind.TRANSIENT,
        )
        assert scripted.returncode == 1

    def test_a_lost_thread(self) -> None:
        recorded = load_capture("codex", "resume_missing")
        scripted = resume_failure_lines(session_id="00000000-0000-7000-8000-000000000000")
        assert scripted.stdout == recorded.stdout_lines == ()
        assert scripted.returncode == recorded.exit_code
        assert scripted.stderr[0] in recorded.stderr_lines


class TestToolCalls:
    @pytest.mark.parametrize(
        ("name", "args", "kind", "stdout"),
        [
            ("bash", {"command": ["ls", "-l"]}, ToolKind.COMMAND, "out"),
            ("apply_patch", {"path": "a.py"}, ToolKind.FILE_CHANGE, "update a.py"),
            (
                "file_change",
                {"changes": [{"path": "b", "kind": "add"}]},
                ToolKind.FILE_CHANGE,
                "add b",
            ),
            ("web_search", {"query": "q"}, ToolKind.WEB, ""),
            ("docs.search", {"q": "x"}, ToolKind.MCP, "out"),
            ("lookup", {}, ToolKind.MCP, "out"),
        ],
    )
    def test_each_tool_shape_parses_to_its_kind(
        self, name: str, args: dict[str, Any], kind: ToolKind, stdout: str
    ) -> None:
        turn, events = parse(
            scripted_lines(ScriptedTurn(text="t", tool_calls=[(name, args, "out")])).stdout
        )
        (call,) = [e for e in events if isinstance(e, ToolCall)]
        (result,) = [e for e in events if isinstance(e, ToolResult)]
        assert (call.kind, result.kind, result.stdout, result.exit_code) == (kind, kind, stdout, 0)
        assert call.tool_id == result.tool_id
        assert turn.text == "t"

    def test_mcp_server_and_tool_come_from_the_name(self) -> None:
        _, events = parse(
            scripted_lines(ScriptedTurn(tool_calls=[("docs.search", {"q": "x"}, "hit")])).stdout
        )
        (call,) = [e for e in events if isinstance(e, ToolCall)]
        assert call.args == {"server": "docs", "tool": "search", "arguments": {"q": "x"}}


class TestThroughTheAgent:
    def _agent(self, *runs: FakeRun) -> tuple[CliAgent, FakeExecutor]:
        executor = FakeExecutor(list(runs), binaries={"codex": "/usr/bin/codex"})
        return CliAgent("codex", executor=executor, env={"PATH": "/usr/bin"}), executor

    def test_scripted_turn_gives_the_turn_result(self) -> None:
        usage = TokenUsage(input_tokens=30, cache_read_input_tokens=10, output_tokens=5)
        agent, _ = self._agent(
            scripted_turn("codex", text="hi there", session_id=THREAD, usage=usage)
        )
        result = agent.run("hello")
        assert (result.text, result.session_id) == ("hi there", THREAD)
        assert result.usage.tokens == TokenUsage(
            input_tokens=30, cache_read_input_tokens=10, output_tokens=5, turns=1
        )

    def test_scripted_structured_output(self, tmp_path: Any) -> None:
        schema = {
            "type": "object",
            "properties": {"n": {"type": "integer"}},
            "required": ["n"],
            "additionalProperties": False,
        }
        agent, _ = self._agent(scripted_turn("codex", structured_output={"n": 3}))
        result = agent.run(TurnRequest("x", output_schema=OutputSchema(schema, host_dir=tmp_path)))
        assert result.structured_output == {"n": 3}

    def test_scripted_resume_failure_needs_a_resumed_session(self) -> None:
        agent, _ = self._agent(
            scripted_resume_failure("codex", session_id=THREAD),
            scripted_resume_failure("codex", session_id=THREAD),
        )
        with pytest.raises(SessionResumeError) as caught:
            agent.start_session(session_id=THREAD).turn("x")
        assert caught.value.session_id == THREAD
        with pytest.raises(CliExitError) as fresh:
            agent.run("x")
        assert not isinstance(fresh.value, SessionResumeError)

    def test_scripted_failure_is_a_classified_exit_error(self) -> None:
        agent, _ = self._agent(scripted_turn("codex", text="unexpected status 401", returncode=1))
        with pytest.raises(CliExitError) as caught:
            agent.run("x")
        assert caught.value.kind is FailureKind.AUTH

    def test_cumulative_scripted_usage_is_subtracted_on_resume(self) -> None:
        agent, _ = self._agent(
            scripted_turn(
                "codex",
                text="1",
                session_id=THREAD,
                usage=TokenUsage(input_tokens=100, output_tokens=10),
            ),
            scripted_turn(
                "codex",
                text="2",
                session_id=THREAD,
                usage=TokenUsage(input_tokens=250, output_tokens=25),
            ),
        )
        session = agent.start_session()
        session.turn("a")
        second = session.turn("b")
        assert (second.usage.tokens.input_tokens, second.usage.tokens.output_tokens) == (150, 15)


class TestEdges:
    def test_a_fresh_thread_id_is_made_up_when_none_is_given(self) -> None:
        turn, _ = parse(scripted_lines(ScriptedTurn(text="x")).stdout)
        assert turn.session_id

    def test_no_text_means_no_message(self) -> None:
        run = scripted_lines(ScriptedTurn())
        assert not any("agent_message" in line for line in run.stdout)
        turn, _ = parse(run.stdout)
        assert (turn.text, turn.error) == ("", None)

    def test_structured_output_that_is_not_json_is_refused(self) -> None:
        with pytest.raises(ValueError, match="not JSON"):
            scripted_lines(ScriptedTurn(structured_output={"when": object()}))

    def test_a_parser_configured_for_resume_reads_scripted_usage_as_a_total(self) -> None:
        events: list[AgentEvent] = []
        parser = CodexStreamParser(events.append, expect_structured=False)
        parser.configure(ParserContext(resumed=True, requested_session_id=THREAD))
        for line in scripted_lines(
            ScriptedTurn(text="x", session_id=THREAD, usage=TokenUsage(input_tokens=9))
        ).stdout:
            parser.feed_stdout(line)
        turn = parser.finish()
        assert turn.usage is not None
        assert not turn.usage.increment_known
