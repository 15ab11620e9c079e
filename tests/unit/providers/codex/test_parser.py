from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.core import events as ev
from agentshim.core.errors import FailureKind
from agentshim.core.provider import ParserContext
from agentshim.core.turn import ParsedTurn
from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage
from agentshim.providers.codex import CodexStreamParser
from agentshim.providers.codex.events import EDIT_TOOL, SHELL_TOOL, TOOL_KINDS, tool_kind
from tests.unit.providers.adversarial import never_raises
from tests.unit.providers.fixtures import capture_names, feed, load_capture

THREAD = "01a22758-303e-7462-9a22-376e1126431f"


def line(frame: dict[str, Any]) -> str:
    return json.dumps(frame) + "\n"


def usage_frame(inp: int, out: int, cached: int = 0, reasoning: int = 0) -> str:
    return line(
        {
            "type": "turn.completed",
            "usage": {
                "input_tokens": inp,
                "cached_input_tokens": cached,
                "cache_write_input_tokens": 0,
                "output_tokens": out,
                "reasoning_output_tokens": reasoning,
            },
        }
    )


def item(stage: str, **fields: Any) -> str:
    return line({"type": f"item.{stage}", "item": fields})


def mcp_call_done(**fields: Any) -> str:
    """The item line of MCP tool call ``m`` ending; ``fields`` say how."""
    return item("completed", id="m", type="mcp_tool_call", **fields)


def parse(
    lines: list[str] | tuple[str, ...],
    *,
    stderr: tuple[str, ...] = (),
    context: ParserContext | None = None,
    expect_structured: bool = False,
    model: str | None = None,
) -> tuple[ParsedTurn, list[ev.AgentEvent]]:
    def make(emit: Callable[[ev.AgentEvent], None]) -> CodexStreamParser:
        parser = CodexStreamParser(emit, expect_structured=expect_structured, model=model)
        if context is not None:
            parser.configure(context)
        return parser

    return feed(make, lines, stderr)


def of(events: list[ev.AgentEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def raw_usage(inp: int, out: int) -> dict[str, int]:
    return {
        "input_tokens": inp,
        "cached_input_tokens": 0,
        "cache_write_input_tokens": 0,
        "output_tokens": out,
        "reasoning_output_tokens": 0,
    }


# Recorded runs whose request failed, and the kind of failure each is.
KINDS_BY_RECORDING = {
    "api_400_context_length": FailureKind.CONTEXT_OVERFLOW,
    "sse_failed_context_length": FailureKind.CONTEXT_OVERFLOW,
    "api_401": FailureKind.AUTH,
    "api_500": FailureKind.TRANSIENT,
    "api_500_with_retries": FailureKind.TRANSIENT,
}


class TestRecordings:
    @pytest.mark.parametrize("name", capture_names("codex"))
    def test_every_recording_parses_without_raw_output(self, name: str) -> None:
        recording = load_capture("codex", name)
        turn, events = parse(recording.stdout_lines, stderr=recording.stderr_lines)
        assert of(events, ev.RawOutput) == []
        assert len(of(events, ev.SessionStarted)) == (1 if recording.stdout_lines else 0)
        assert [e.text for e in of(events, ev.Stderr)] == [
            s.rstrip("\n") for s in recording.stderr_lines
        ]
        # A failed run always says so in the stream or ends it early.
        assert (turn.error is not None) == (recording.exit_code != 0)

    @pytest.mark.parametrize(
        ("name", "thread", "tokens"),
        [
            ("plain", "01a22758-201e-7550-98d5-d57dc8f5d000", (100, 10)),
            ("ephemeral", "01a2275c-914f-72b2-874c-059806dcfb38", (100, 10)),
            ("resume_opts_after", THREAD, (400, 40)),
        ],
    )
    def test_plain_answers(self, name: str, thread: str, tokens: tuple[int, int]) -> None:
        turn, events = parse(load_capture("codex", name).stdout_lines)
        assert turn.text == "Hello from the fake model."
        assert turn.session_id == thread
        assert turn.error is None
        assert turn.usage is not None
        assert (turn.usage.tokens.input_tokens, turn.usage.tokens.output_tokens) == tokens
        assert turn.usage.tokens.turns == 1
        assert [e.text for e in of(events, ev.AssistantText)] == ["Hello from the fake model."]
        # Codex reports no cost and the fake model has no price: None, never 0.
        assert turn.cost_usd is None
        assert turn.usage.cost_source is CostSource.UNKNOWN_MODEL
        assert turn.usage.model == "fake-model"
        assert of(events, ev.Lifecycle)[:3] == [
            ev.Lifecycle("thread_started", thread),
            ev.Lifecycle(
                "warning",
                "Model metadata for `fake-model` not found. Defaulting to fallback metadata; "
                "this can degrade performance and cause issues.",
            ),
            ev.Lifecycle("turn_started", ""),
        ]

    def test_a_known_model_is_priced(self) -> None:
        turn, events = parse(load_capture("codex", "known_model_gpt5").stdout_lines)
        assert turn.usage is not None
        assert turn.usage.model == "gpt-5.1-codex"
        assert turn.usage.cost_source is CostSource.PRICED
        assert turn.cost_usd == pytest.approx((100 * 1.25 + 10 * 10.0) / 1e6)
        assert of(events, ev.UsageReport)[0].cost_usd == turn.cost_usd

    @pytest.mark.parametrize("name", ["tool_shell", "pypi_bin_0163_tool_shell"])
    def test_a_shell_tool_call(self, name: str) -> None:
        turn, events = parse(load_capture("codex", name).stdout_lines)
        call, result = of(events, ev.ToolCall), of(events, ev.ToolResult)
        assert call == [
            ev.ToolCall(
                "item_1", SHELL_TOOL, {"command": "/bin/bash -lc 'echo hello'"}, ev.ToolKind.COMMAND
            )
        ]
        assert len(result) == 1
        assert (result[0].tool_id, result[0].stdout, result[0].stderr, result[0].exit_code) == (
            "item_1",
            "hello\n",
            "",
            0,
        )
        assert result[0].kind is ev.ToolKind.COMMAND
        assert result[0].duration_s is not None
        assert result[0].duration_s >= 0
        assert turn.text == "Done."
        assert turn.usage is not None
        assert turn.usage.tokens.input_tokens == 200

    def test_a_sandbox_that_cannot_start_shows_no_tool_call(self) -> None:
        turn, events = parse(
            load_capture("codex", "pypi_bin_0163_tool_shell_sandbox_broken").stdout_lines
        )
        assert of(events, ev.ToolCall) == []
        assert turn.text == "Done."

    def test_output_schema_gives_the_payload(self) -> None:
        turn, _ = parse(load_capture("codex", "output_schema").stdout_lines, expect_structured=True)
        assert turn.structured_output == {"answer": "hello", "count": 2}
        assert turn.text == '{"answer": "hello", "count": 2}'

    def test_without_a_schema_the_json_stays_text(self) -> None:
        turn, _ = parse(load_capture("codex", "output_schema").stdout_lines)
        assert turn.structured_output is None

    @pytest.mark.parametrize(("name", "kind"), KINDS_BY_RECORDING.items())
    def test_failed_requests_are_classified(self, name: str, kind: FailureKind) -> None:
        recording = load_capture("codex", name)
        turn, events = parse(recording.stdout_lines, stderr=recording.stderr_lines)
        failed = json.loads(recording.stdout_lines[-1])["error"]["message"]
        assert turn.error == failed
        assert turn.error_kind is kind
        assert turn.usage is None
        errors = of(events, ev.ProviderErrorReported)
        assert errors[-1] == ev.ProviderErrorReported(failed, fatal=True)
        assert all(not e.fatal for e in errors[:-1])
        assert ev.Lifecycle("turn_failed", failed) in events

    def test_retry_notices_are_not_terminal(self) -> None:
        notices = load_capture("codex", "api_500_with_retries").stdout_lines[:-1]
        turn, events = parse(notices)
        assert [e.fatal for e in of(events, ev.ProviderErrorReported)] == [False, False, False]
        assert turn.error is not None
        assert "stream ended early" in turn.error

    @pytest.mark.parametrize("name", ["resume_missing", "wire_api_chat_attempt"])
    def test_nothing_on_stdout_is_a_stream_that_ended_early(self, name: str) -> None:
        recording = load_capture("codex", name)
        turn, _ = parse(recording.stdout_lines, stderr=recording.stderr_lines)
        assert turn.error is not None
        assert turn.error.startswith("codex's stream ended early")
        # The CLI's own error line is kept, the banner warning is not.
        assert "Error" in turn.error
        assert "WARNING" not in turn.error
        assert turn.error_kind is FailureKind.OTHER
        assert turn.session_id is None

    def test_a_resume_that_lands_in_a_new_thread_says_so(self) -> None:
        recording = load_capture("codex", "resume_missing_name")
        previous = ProviderUsage(raw=raw_usage(900, 90))
        turn, events = parse(
            recording.stdout_lines,
            context=ParserContext(
                previous_usage=previous, resumed=True, requested_session_id="no-such-thread-name"
            ),
        )
        assert turn.session_id == "01a22758-4cb2-7cc3-b250-de1d55f17bfb"
        notice = [e for e in of(events, ev.Lifecycle) if e.kind == "resume_not_found"]
        assert len(notice) == 1
        assert "no-such-thread-name" in notice[0].detail
        assert any(n.startswith("resume_not_found") for n in turn.notes)
        # The old thread's baseline does not apply to the new thread.
        assert turn.usage is not None
        assert turn.usage.increment_known
        assert turn.usage.tokens.input_tokens == 100
        assert turn.error is None


class TestUsage:
    def test_a_resumed_turn_subtracts_the_previous_report(self) -> None:
        first, _ = parse(load_capture("codex", "tool_shell").stdout_lines)
        assert first.usage is not None
        second, events = parse(
            load_capture("codex", "resume").stdout_lines,
            context=ParserContext(
                previous_usage=first.usage, resumed=True, requested_session_id=THREAD
            ),
        )
        assert second.usage is not None
        assert second.usage.increment_known
        assert (second.usage.tokens.input_tokens, second.usage.tokens.output_tokens) == (100, 10)
        assert second.usage.raw["input_tokens"] == 300
        assert of(events, ev.UsageReport)[0].usage == second.usage
        third, _ = parse(
            load_capture("codex", "resume_opts_after").stdout_lines,
            context=ParserContext(
                previous_usage=second.usage, resumed=True, requested_session_id=THREAD
            ),
        )
        assert third.usage is not None
        assert (third.usage.tokens.input_tokens, third.usage.tokens.output_tokens) == (100, 10)

    def test_a_resumed_turn_without_a_baseline_is_unknown_but_keeps_the_total(self) -> None:
        turn, events = parse(
            load_capture("codex", "resume").stdout_lines,
            context=ParserContext(resumed=True, requested_session_id=THREAD),
        )
        assert turn.usage is not None
        assert not turn.usage.increment_known
        assert turn.usage.tokens == TokenUsage()
        assert turn.usage.raw["input_tokens"] == 300
        assert turn.cost_usd is None
        assert any(n.startswith("usage_increment_unknown") for n in turn.notes)
        assert not of(events, ev.UsageReport)[0].usage.increment_known

    def test_a_baseline_that_is_not_a_codex_report_is_no_baseline(self) -> None:
        turn, _ = parse(
            load_capture("codex", "resume").stdout_lines,
            context=ParserContext(
                previous_usage=ProviderUsage(raw={"prompt_tokens": 5}), resumed=True
            ),
        )
        assert turn.usage is not None
        assert not turn.usage.increment_known

    def test_a_fresh_turn_ignores_any_previous_usage(self) -> None:
        turn, _ = parse(
            load_capture("codex", "plain").stdout_lines,
            context=ParserContext(previous_usage=ProviderUsage(raw=raw_usage(50, 5))),
        )
        assert turn.usage is not None
        assert turn.usage.tokens.input_tokens == 100

    def test_a_baseline_larger_than_the_total_is_an_unknown_increment(self) -> None:
        turn, _ = parse(
            [usage_frame(100, 10)],
            context=ParserContext(
                previous_usage=ProviderUsage(raw=raw_usage(500, 50)), resumed=True
            ),
        )
        assert turn.usage is not None
        assert not turn.usage.increment_known

    def test_cached_tokens_are_part_of_input_and_priced_at_the_cached_rate(self) -> None:
        turn, _ = parse(
            [line({"type": "thread.started", "thread_id": "t"}), usage_frame(100, 10, cached=40)],
            model="gpt-5.5",
        )
        assert turn.usage is not None
        assert turn.usage.tokens.cache_read_input_tokens == 40
        assert turn.usage.tokens.uncached_input_tokens == 60
        assert turn.cost_usd == pytest.approx(0.00062)

    def test_inconsistent_counts_are_widened_not_rejected(self) -> None:
        turn, _ = parse([usage_frame(10, 1, cached=50, reasoning=7)])
        assert turn.usage is not None
        tokens = turn.usage.tokens
        assert (tokens.input_tokens, tokens.output_tokens) == (50, 7)

    def test_reports_within_one_stream_add_up_to_the_turn(self) -> None:
        turn, events = parse([usage_frame(100, 10), usage_frame(250, 30)])
        reports = [e.usage.tokens for e in of(events, ev.UsageReport)]
        assert [(r.input_tokens, r.output_tokens) for r in reports] == [(100, 10), (150, 20)]
        assert turn.usage is not None
        assert turn.usage.tokens.input_tokens == 250

    @pytest.mark.parametrize(
        "raw", [{"input_tokens": "many"}, {"input_tokens": -5, "output_tokens": True}]
    )
    def test_garbage_counts_are_zero(self, raw: dict[str, Any]) -> None:
        turn, _ = parse([line({"type": "turn.completed", "usage": raw})])
        assert turn.usage is not None
        assert turn.usage.tokens.input_tokens == 0

    @pytest.mark.parametrize("raw", [{}, {"total_tokens": 1234}])
    def test_a_usage_without_input_or_output_counts_is_no_report(self, raw: dict[str, Any]) -> None:
        turn, events = parse([line({"type": "turn.completed", "usage": raw})])
        assert turn.error is None
        assert turn.usage is None
        assert of(events, ev.UsageReport) == []


class TestFinalAnswer:
    def test_the_last_message_wins(self) -> None:
        turn, _ = parse(
            [
                item("completed", id="a", type="agent_message", text="first"),
                item("completed", id="b", type="agent_message", text="second"),
                usage_frame(1, 1),
            ]
        )
        assert turn.text == "second"

    def test_a_final_answer_phase_beats_later_commentary(self) -> None:
        turn, events = parse(
            [
                item(
                    "completed", id="a", type="agent_message", text="answer", phase="final_answer"
                ),
                item("completed", id="b", type="agent_message", text="aside", phase="commentary"),
                usage_frame(1, 1),
            ]
        )
        assert turn.text == "answer"
        assert [e.text for e in of(events, ev.AssistantText)] == ["answer", "aside"]

    @settings(max_examples=200)
    @given(
        st.lists(
            st.tuples(
                st.sampled_from(["a", "b", "c", ""]),
                st.sampled_from(["final_answer", "commentary", None, 5, "other", "absent"]),
            ),
            max_size=6,
        )
    )
    def test_the_text_is_the_last_answer_of_the_most_final_phase(
        self, messages: list[tuple[str, object]]
    ) -> None:
        frames = [
            item("completed", id=f"m{i}", type="agent_message", text=text)
            if phase == "absent"
            else item("completed", id=f"m{i}", type="agent_message", text=text, phase=phase)
            for i, (text, phase) in enumerate(messages)
        ]
        turn, _ = parse([*frames, usage_frame(1, 1)])
        finals = [text for text, phase in messages if phase == "final_answer"]
        plain = [text for text, phase in messages if phase != "commentary"]
        anything = [text for text, _ in messages]
        expected = (finals or plain or anything or [""])[-1]
        assert turn.text == expected

    def test_commentary_only_is_used_when_nothing_else_exists(self) -> None:
        turn, _ = parse(
            [item("completed", id="a", type="agent_message", text="aside", phase="commentary")]
        )
        assert turn.text == "aside"

    def test_unparseable_payload_leaves_structured_output_empty(self) -> None:
        turn, _ = parse(
            [item("completed", id="a", type="agent_message", text="not json"), usage_frame(1, 1)],
            expect_structured=True,
        )
        assert (turn.text, turn.structured_output) == ("not json", None)


class TestItems:
    def test_a_failed_command_reports_on_stderr_with_its_exit_code(self) -> None:
        started = {"id": "c", "type": SHELL_TOOL, "command": "false", "status": "in_progress"}
        _, events = parse(
            [
                item("started", **started),
                item("updated", **started, aggregated_output="partial"),
                item(
                    "completed",
                    **{**started, "status": "failed"},
                    aggregated_output="boom\n",
                    exit_code=2,
                ),
            ]
        )
        assert len(of(events, ev.ToolCall)) == 1
        (result,) = of(events, ev.ToolResult)
        assert (result.stdout, result.stderr, result.exit_code) == ("", "boom\n", 2)
        assert result.failed

    def test_a_declined_command_without_exit_code_fails_with_1(self) -> None:
        _, events = parse(
            [
                item(
                    "completed",
                    id="c",
                    type=SHELL_TOOL,
                    command="rm -rf /",
                    status="declined",
                    exit_code=None,
                )
            ]
        )
        (result,) = of(events, ev.ToolResult)
        assert (result.stdout, result.exit_code) == ("", 1)
        assert "declined" in result.stderr

    def test_a_patch_reported_only_when_done(self) -> None:
        changes = [{"path": "src/a.py", "kind": "update"}, {"path": "new.py", "kind": "add"}]
        _, events = parse(
            [item("completed", id="p", type=EDIT_TOOL, changes=changes, status="completed")]
        )
        (call,) = of(events, ev.ToolCall)
        assert (call.tool, call.kind, call.args) == (
            EDIT_TOOL,
            ev.ToolKind.FILE_CHANGE,
            {"changes": changes},
        )
        (result,) = of(events, ev.ToolResult)
        assert (result.stdout, result.exit_code) == ("update src/a.py\nadd new.py", 0)

    def test_a_failed_patch(self) -> None:
        changes = [{"path": "x", "kind": "delete"}]
        _, events = parse(
            [item("completed", id="p", type=EDIT_TOOL, changes=changes, status="failed")]
        )
        (result,) = of(events, ev.ToolResult)
        assert result.stdout == ""
        assert "delete x" in result.stderr
        assert result.exit_code == 1

    def test_an_mcp_call(self) -> None:
        base = {
            "id": "m",
            "type": "mcp_tool_call",
            "server": "docs",
            "tool": "search",
            "arguments": {"q": "x"},
        }
        _, events = parse(
            [
                item("started", **base, result=None, error=None, status="in_progress"),
                item(
                    "completed",
                    **base,
                    result={
                        "content": [{"type": "text", "text": "hit"}],
                        "structured_content": None,
                    },
                    error=None,
                    status="completed",
                ),
            ]
        )
        (call,) = of(events, ev.ToolCall)
        assert call.kind is ev.ToolKind.MCP
        assert call.args == {"server": "docs", "tool": "search", "arguments": {"q": "x"}}
        (result,) = of(events, ev.ToolResult)
        assert (result.stdout, result.exit_code) == ("hit", 0)

    def test_a_failed_mcp_call(self) -> None:
        failed = mcp_call_done(
            server="s", tool="t", result=None, error={"message": "server crashed"}, status="failed"
        )
        _, events = parse([failed])
        (result,) = of(events, ev.ToolResult)
        assert (result.stdout, result.stderr, result.exit_code) == ("", "server crashed", 1)

    def test_structured_mcp_content(self) -> None:
        structured = {"content": [], "structured_content": {"n": 1}}
        _, events = parse([mcp_call_done(result=structured, status="completed")])
        assert of(events, ev.ToolResult)[0].stdout == '{"n": 1}'

    def test_a_web_search(self) -> None:
        _, events = parse([item("completed", id="w", type="web_search", query="rust async")])
        (call,) = of(events, ev.ToolCall)
        assert (call.kind, call.args) == (ev.ToolKind.WEB, {"query": "rust async"})
        assert of(events, ev.ToolResult)[0].exit_code == 0

    def test_a_todo_list_is_a_plan_at_every_step(self) -> None:
        todo = {"id": "t", "type": "todo_list"}
        _, events = parse(
            [
                item("started", **todo, items=[{"text": "a", "completed": False}]),
                item(
                    "updated",
                    **todo,
                    items=[{"text": "a", "completed": True}, {"text": "b", "completed": False}],
                ),
                item("completed", **todo, items=[{"text": "a", "completed": True}, "junk"]),
            ]
        )
        assert of(events, ev.Plan) == [
            ev.Plan((ev.PlanItem("a", "pending"),), "t"),
            ev.Plan((ev.PlanItem("a", "completed"), ev.PlanItem("b", "pending")), "t"),
            ev.Plan((ev.PlanItem("a", "completed"),), "t"),
        ]
        assert of(events, ev.ToolCall) == []

    def test_reasoning(self) -> None:
        _, events = parse(
            [
                item("completed", id="r", type="reasoning", text="thinking"),
                item("completed", id="r2", type="reasoning", text=""),
            ]
        )
        assert of(events, ev.Reasoning) == [ev.Reasoning("thinking")]

    def test_error_items_are_warnings(self) -> None:
        turn, events = parse(
            [item("completed", id="e", type="error", message="careful"), usage_frame(1, 1)]
        )
        assert ev.Lifecycle("warning", "careful") in events
        assert turn.error is None

    def test_unknown_items_and_frames(self) -> None:
        _, events = parse(
            [
                item("completed", id="x", type="hologram"),
                line({"type": "session.mood", "mood": "sunny"}),
                line({"no_type": 1}),
                line({"type": "item.completed", "item": "not an object"}),
            ]
        )
        kinds = [e.kind for e in of(events, ev.Lifecycle)]
        assert kinds == [
            "unknown_item:hologram",
            "unknown_frame:session.mood",
            "unknown_frame:<NoneType>",
            "malformed_frame",
        ]

    def test_non_json_lines_are_raw_output(self) -> None:
        _, events = parse(["plain text\n", "[1, 2]\n", "{broken\n", "\n", '{"a": NaN}\n'])
        assert of(events, ev.RawOutput) == [
            ev.RawOutput("plain text"),
            ev.RawOutput("[1, 2]"),
            ev.RawOutput("{broken"),
            ev.RawOutput('{"a": NaN}'),
        ]

    def test_the_tool_table(self) -> None:
        assert tool_kind(SHELL_TOOL) is ev.ToolKind.COMMAND
        assert tool_kind(EDIT_TOOL) is ev.ToolKind.FILE_CHANGE
        assert tool_kind("nope") is ev.ToolKind.OTHER
        assert set(TOOL_KINDS.values()) >= {
            ev.ToolKind.COMMAND,
            ev.ToolKind.FILE_CHANGE,
            ev.ToolKind.MCP,
            ev.ToolKind.WEB,
        }


# The kind of failure each turn.failed message stands for.
KINDS_BY_FAILURE_TEXT = {
    "You've hit your usage limit. Upgrade to Pro": FailureKind.USAGE_LIMIT,
    '{"error":{"code":"insufficient_quota"}}': FailureKind.USAGE_LIMIT,
    '{"error":{"code":"context_length_exceeded"}}': FailureKind.CONTEXT_OVERFLOW,
    "unexpected status 403 Forbidden": FailureKind.AUTH,
    "exceeded retry limit, last status: 429 Too Many Requests": FailureKind.TRANSIENT,
    "stream disconnected before completion": FailureKind.TRANSIENT,
    "unexpected status 502 Bad Gateway": FailureKind.TRANSIENT,
    "the model refused": FailureKind.OTHER,
}


class TestFailureText:
    @pytest.mark.parametrize(("message", "kind"), KINDS_BY_FAILURE_TEXT.items())
    def test_turn_failed_text_is_classified(self, message: str, kind: FailureKind) -> None:
        turn, _ = parse([line({"type": "turn.failed", "error": {"message": message}})])
        assert (turn.error, turn.error_kind) == (message, kind)

    def test_an_earlier_notice_classifies_a_vague_failure(self) -> None:
        turn, _ = parse(
            [
                line({"type": "error", "message": "Reconnecting... 5/5 (stream disconnected)"}),
                line({"type": "turn.failed", "error": {}}),
            ]
        )
        assert turn.error == "Reconnecting... 5/5 (stream disconnected)"
        assert turn.error_kind is FailureKind.TRANSIENT

    def test_stderr_classifies_a_stream_that_ended_early(self) -> None:
        turn, _ = parse([], stderr=("Error: unexpected status 401 Unauthorized\n",))
        assert turn.error_kind is FailureKind.AUTH


# -- adversarial input ----------------------------------------------------------------

frame_types = st.sampled_from(
    [
        "thread.started",
        "turn.started",
        "item.started",
        "item.updated",
        "item.completed",
        "turn.completed",
        "turn.failed",
        "error",
        "other",
    ]
)
item_types = st.sampled_from(
    [
        "agent_message",
        "reasoning",
        "command_execution",
        "file_change",
        "mcp_tool_call",
        "web_search",
        "todo_list",
        "error",
        "collab_tool_call",
        "x",
    ]
)
shallow = st.none() | st.booleans() | st.integers() | st.text(max_size=6)
field_values = (
    shallow
    | st.sampled_from(["completed", "failed", "in_progress", "declined"])
    | st.lists(
        shallow | st.dictionaries(st.sampled_from(["text", "path", "kind", "completed"]), shallow),
        max_size=2,
    )
    | st.dictionaries(
        st.sampled_from(["message", "content", "structured_content"]),
        shallow | st.lists(st.dictionaries(st.just("text"), shallow)),
        max_size=2,
    )
)
item_fields = st.fixed_dictionaries(
    {"type": item_types},
    optional=dict.fromkeys(
        (
            "id",
            "text",
            "phase",
            "command",
            "aggregated_output",
            "exit_code",
            "status",
            "changes",
            "result",
            "error",
            "items",
            "message",
            "query",
        ),
        field_values,
    ),
)
frames = st.fixed_dictionaries(
    {"type": frame_types},
    optional={
        "item": item_fields | shallow,
        "usage": st.dictionaries(
            st.sampled_from(
                [
                    "input_tokens",
                    "cached_input_tokens",
                    "output_tokens",
                    "reasoning_output_tokens",
                    "cache_write_input_tokens",
                ]
            ),
            shallow,
        ),
        "thread_id": shallow,
        "error": field_values,
        "message": shallow,
    },
)
real_lines = [
    text for name in capture_names("codex") for text in load_capture("codex", name).stdout_lines
]


def _never_raises(lines: list[str], context: ParserContext | None = None) -> ParsedTurn:
    def make(emit: Callable[[ev.AgentEvent], None]) -> CodexStreamParser:
        parser = CodexStreamParser(emit, expect_structured=True)
        if context is not None:
            parser.configure(context)
        return parser

    turn, events = never_raises(make, lines, ["stray\n"])
    assert len(of(events, ev.SessionStarted)) <= 1
    return turn


class TestAdversarialInput:
    @settings(max_examples=150)
    @given(
        st.lists(frames.map(json.dumps), max_size=10),
        st.builds(
            ParserContext,
            previous_usage=st.none()
            | st.builds(
                ProviderUsage,
                raw=st.dictionaries(
                    st.sampled_from(["input_tokens", "output_tokens", "x"]), shallow, max_size=3
                ),
            ),
            resumed=st.booleans(),
            requested_session_id=st.none() | st.text(max_size=10),
        ),
    )
    def test_frames_with_arbitrary_fields(self, lines: list[str], context: ParserContext) -> None:
        _never_raises(lines, context)

    @given(
        st.lists(
            st.tuples(st.sampled_from(real_lines), st.integers(min_value=0, max_value=400)),
            max_size=8,
        )
    )
    def test_truncated_real_lines(self, cuts: list[tuple[str, int]]) -> None:
        _never_raises([text[:cut] for text, cut in cuts])


class TestAFrameThatCannotBeRead:
    def test_an_item_that_is_not_an_object_costs_only_its_frame(self) -> None:
        bad = line({"type": "item.completed", "item": ["not", "an", "object"]})
        turn, events = parse(
            [
                line({"type": "thread.started", "thread_id": "t-1"}),
                bad,
                item("completed", id="m", type="agent_message", text="done"),
                usage_frame(10, 2),
            ]
        )
        assert turn.text == "done"
        assert turn.session_id == "t-1"
        assert turn.error is None
        assert ev.RawOutput(bad.rstrip("\n")) in events
        (malformed,) = [e for e in of(events, ev.Lifecycle) if e.kind.startswith("malformed")]
        assert malformed.kind == "malformed_frame"
        assert malformed.detail.startswith("item.completed: TypeError(")
        assert ev.AssistantText("done") in events
