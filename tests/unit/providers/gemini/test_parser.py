from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.core import events as ev
from agentshim.core.errors import FailureKind
from agentshim.core.pricing import ModelPricing, PricingTable
from agentshim.core.turn import ParsedTurn
from agentshim.core.usage import CostSource, TokenUsage
from agentshim.providers.gemini import GeminiStreamParser
from tests.unit.providers.adversarial import json_values, never_raises
from tests.unit.providers.fixtures import (
    capture_names,
    feed,
    fixture_dir,
    load_capture,
    token_counts,
)


def parse(
    stdout: list[str] | tuple[str, ...],
    stderr: list[str] | tuple[str, ...] = (),
    **options: Any,
) -> tuple[ParsedTurn, list[ev.AgentEvent]]:
    return feed(lambda emit: GeminiStreamParser(emit, **options), stdout, stderr)


def frame(**fields: Any) -> str:
    return json.dumps({"timestamp": "2026-11-29T12:50:26.853Z", **fields}) + "\n"


def init(session_id: str = "sid-1") -> str:
    return frame(type="init", session_id=session_id, model="auto")


def delta(text: str) -> str:
    return frame(type="message", role="assistant", content=text, delta=True)


def result(status: str = "success", **fields: Any) -> str:
    stats = {"total_tokens": 30, "input_tokens": 20, "output_tokens": 10, "cached": 0, "input": 20}
    return frame(type="result", status=status, stats={**stats, "models": {"m": stats}}, **fields)


def of(events: list[ev.AgentEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


class TestRecordedStreams:
    def test_every_recording_is_covered(self) -> None:
        assert capture_names("gemini") == [
            "api_400_context_length",
            "api_401",
            "api_500",
            "no_settings_gateway_auth_rejected",
            "plain",
            "plain_json_format",
            "resume_by_uuid",
            "resume_missing",
            "tool_shell_default_approval",
            "tool_shell_failed",
            "tool_shell_nonzero_exit",
            "tool_shell_yolo",
        ]

    def test_plain(self) -> None:
        rec = load_capture("gemini", "plain")
        turn, events = parse(rec.stdout_lines, rec.stderr_lines)
        assert turn.text == "Hello from the fake model."
        assert turn.session_id == "46294fb8-1bce-4d0d-be6d-0bb81ca98aa8"
        assert turn.error is None
        assert turn.error_kind is None
        assert turn.usage is not None
        assert turn.usage.tokens == TokenUsage(input_tokens=200, output_tokens=20, turns=1)
        assert turn.usage.model == "fake-gemini"
        assert turn.cost_usd is None
        assert turn.usage.cost_source is CostSource.UNKNOWN_MODEL
        assert of(events, ev.SessionStarted) == [ev.SessionStarted(turn.session_id)]
        assert [(e.text, e.delta) for e in of(events, ev.AssistantText)] == [
            ("Hello fr", True),
            ("om the fake model.", True),
        ]
        assert len(of(events, ev.UsageReport)) == 1
        assert [e.text for e in of(events, ev.Stderr)][1] == (
            "Ripgrep is not available. Falling back to GrepTool."
        )

    def test_the_prompt_echo_is_not_assistant_text(self) -> None:
        turn, events = parse(load_capture("gemini", "resume_by_uuid").stdout_lines)
        assert "Say hello again." not in turn.text
        assert all("again" not in e.text for e in of(events, ev.AssistantText))

    def test_tool_shell_yolo(self) -> None:
        turn, events = parse(load_capture("gemini", "tool_shell_yolo").stdout_lines)
        (call,) = of(events, ev.ToolCall)
        (res,) = of(events, ev.ToolResult)
        assert call.tool == "run_shell_command"
        assert call.kind is ev.ToolKind.COMMAND
        assert call.args == {"command": "echo hello", "description": "Run echo hello"}
        assert res.tool_id == call.tool_id == "run_shell_command__run_shell_command_1795956629857_0"
        assert res.tool == "run_shell_command"
        assert (res.stdout, res.stderr, res.exit_code, res.failed) == ("hello", "", 0, False)
        assert res.duration_s is not None
        assert res.duration_s >= 0
        assert turn.text == "Done."
        assert turn.usage is not None
        assert turn.usage.tokens.input_tokens == 300

    def test_a_shell_call_the_cli_refuses_is_a_failed_tool(self) -> None:
        rec = load_capture("gemini", "tool_shell_failed")
        turn, events = parse(rec.stdout_lines, rec.stderr_lines)
        (call,) = of(events, ev.ToolCall)
        (res,) = of(events, ev.ToolResult)
        assert call.args == {"command": "ls", "dir_path": "/agentshim-missing-dir"}
        assert res.tool_id == call.tool_id
        assert (res.stdout, res.exit_code, res.kind) == ("", 1, ev.ToolKind.COMMAND)
        assert res.stderr.startswith(
            'Path not in workspace: Attempted path "/agentshim-missing-dir"'
        )
        assert (turn.error, turn.text) == (None, "Running it.\nThe tool failed.")

    def test_a_command_exiting_nonzero_is_reported_as_a_success(self) -> None:
        # Gemini CLI's stream-json carries no exit code: the command's output is all there is.
        turn, events = parse(load_capture("gemini", "tool_shell_nonzero_exit").stdout_lines)
        (res,) = of(events, ev.ToolResult)
        assert (res.stdout, res.stderr, res.exit_code, res.failed) == (
            "ls: cannot access '/agentshim-missing-dir': No such file or directory",
            "",
            0,
            False,
        )
        assert turn.error is None

    def test_tool_not_registered_is_a_failed_tool_but_not_a_failed_turn(self) -> None:
        turn, events = parse(load_capture("gemini", "tool_shell_default_approval").stdout_lines)
        (res,) = of(events, ev.ToolResult)
        assert res.failed
        assert res.exit_code == 1
        assert res.stdout == ""
        assert res.stderr.startswith('Tool "shell" not found.')
        assert turn.error is None
        assert turn.text == "Done."

    @pytest.mark.parametrize("name", ["api_400_context_length", "api_401", "api_500"])
    def test_an_api_error_reports_the_model_that_answered(self, name: str) -> None:
        rec = load_capture("gemini", name)
        turn, _ = parse(rec.stdout_lines, rec.stderr_lines)
        # The requested model's zero-token entry is not the model that answered.
        assert turn.usage is not None
        assert turn.usage.model == "fake-gemini"

    @pytest.mark.parametrize(
        ("name", "reason"),
        [
            ("resume_missing", 'Error resuming session: Invalid session identifier "0000'),
            ("no_settings_gateway_auth_rejected", "Invalid auth method selected."),
        ],
    )
    def test_empty_stdout_is_a_failure_citing_stderr(self, name: str, reason: str) -> None:
        rec = load_capture("gemini", name)
        turn, _ = parse(rec.stdout_lines, rec.stderr_lines)
        assert turn.error is not None
        assert "ended before its result frame" in turn.error
        assert reason in turn.error
        assert turn.error_kind is FailureKind.OTHER
        assert turn.session_id is None

    def test_json_output_format_is_not_stream_json(self) -> None:
        # `-o json` prints one pretty-printed document: not what this parser reads.
        turn, events = parse(load_capture("gemini", "plain_json_format").stdout_lines)
        assert turn.error is not None
        assert turn.text == ""
        assert of(events, ev.RawOutput)

    @pytest.mark.parametrize(
        ("report", "kind"),
        [
            ("2026-11-29T12-51-07-216Z", FailureKind.CONTEXT_OVERFLOW),
            ("2026-11-29T12-51-03-894Z", FailureKind.AUTH),
        ],
    )
    def test_gemini_shaped_error_bodies(self, report: str, kind: FailureKind) -> None:
        # The recording's client error reports hold the Gemini-API-shaped bodies verbatim.
        path = (
            fixture_dir("gemini")
            / "client_error_reports"
            / (f"gemini-client-error-Turn.run-sendMessageStream-{report}.json")
        )
        body = json.loads(path.read_text())["error"]["message"]
        turn, _ = parse(
            [init(), result("error", error={"type": "unknown", "message": f"[API Error: {body}]"})]
        )
        assert turn.error_kind is kind


class TestFrames:
    def test_deltas_concatenate_and_runs_split_by_tools_join_with_newline(self) -> None:
        turn, _ = parse(
            [
                init(),
                delta("Let me "),
                delta("look."),
                frame(type="tool_use", tool_name="read_file", tool_id="t1", parameters={}),
                frame(type="tool_result", tool_id="t1", status="success", output="x"),
                delta("Found "),
                delta("it."),
                result(),
            ]
        )
        assert turn.text == "Let me look.\nFound it."

    def test_user_messages_and_empty_content_are_ignored(self) -> None:
        turn, events = parse(
            [
                init(),
                frame(type="message", role="user", content="prompt"),
                frame(type="message", role="assistant", content="", delta=True),
                delta("ok"),
                result(),
            ]
        )
        assert turn.text == "ok"
        assert [e.text for e in of(events, ev.AssistantText)] == ["ok"]

    def test_error_frame_severity(self) -> None:
        turn, events = parse(
            [
                init(),
                frame(type="error", severity="warning", message="Loop detected"),
                frame(type="error", severity="error", message="Maximum turns exceeded"),
                result(),
            ]
        )
        assert [(e.message, e.fatal) for e in of(events, ev.ProviderErrorReported)] == [
            ("Loop detected", False),
            ("Maximum turns exceeded", True),
        ]
        assert turn.error is None

    def test_fatal_error_without_result_is_the_failure_reason(self) -> None:
        turn, _ = parse([init(), frame(type="error", severity="error", message="quota exceeded")])
        assert turn.error is not None
        assert "quota exceeded" in turn.error
        assert turn.error_kind is FailureKind.USAGE_LIMIT

    def test_error_without_severity_and_without_result_is_the_failure_reason(self) -> None:
        warning = frame(type="error", severity="warning", message="Loop detected")
        said = frame(type="error", message="API key not valid. Please pass a valid API key.")
        turn, events = parse([init(), said, warning])
        assert turn.error is not None
        assert "API key not valid" in turn.error
        assert "Loop detected" not in turn.error
        assert turn.error_kind is FailureKind.AUTH
        assert [e.fatal for e in of(events, ev.ProviderErrorReported)] == [False, False]

    def test_a_warning_alone_is_not_the_failure_reason(self) -> None:
        turn, _ = parse([init(), frame(type="error", severity="warning", message="quota low")])
        assert turn.error == "gemini's stream ended before its result frame"
        assert turn.error_kind is FailureKind.OTHER

    def test_a_result_without_status_or_error_is_a_success(self) -> None:
        stats = {"input_tokens": 20, "output_tokens": 10, "total_tokens": 30}
        turn, _ = parse([init(), delta("ok"), frame(type="result", stats=stats)])
        assert (turn.error, turn.error_kind, turn.text) == (None, None, "ok")

    def test_stats_with_only_a_total_are_unknown(self) -> None:
        stats = {"total_tokens": 300, "models": {"m": {"total_tokens": 300}}}
        pricing = PricingTable("t", "2026-11-29", {"m": ModelPricing(1.0, 1.0)})
        turn, _ = parse(
            [init(), frame(type="result", status="success", stats=stats)], pricing=pricing
        )
        assert turn.usage is not None
        assert not turn.usage.increment_known
        assert turn.usage.tokens == TokenUsage(turns=1)
        assert (turn.cost_usd, turn.usage.cost_source) == (None, CostSource.NOT_REPORTED)
        assert turn.usage.model == "m"

    def test_per_model_counts_stand_in_for_missing_totals(self) -> None:
        models = {
            "a": {"total_tokens": 35, "input_tokens": 20, "output_tokens": 10},
            "b": {"total_tokens": 4, "input_tokens": 3, "output_tokens": 1},
        }
        turn, _ = parse([init(), frame(type="result", status="success", stats={"models": models})])
        assert turn.usage is not None
        assert turn.usage.increment_known
        assert turn.usage.tokens == TokenUsage(
            input_tokens=23, output_tokens=16, reasoning_output_tokens=5, turns=1
        )

    def test_the_init_model_names_usage_without_per_model_stats(self) -> None:
        stats = {"total_tokens": 30, "input_tokens": 20, "output_tokens": 10}
        named = frame(type="init", session_id="s", model="gemini-2.5-pro")
        turn, _ = parse([named, frame(type="result", status="success", stats=stats)])
        assert turn.usage is not None
        assert turn.usage.model == "gemini-2.5-pro"
        turn, _ = parse([init(), frame(type="result", status="success", stats=stats)])
        assert turn.usage is not None
        assert turn.usage.model is None  # "auto" routes each request: no model name

    def test_tool_error_status(self) -> None:
        _, events = parse(
            [
                init(),
                frame(type="tool_use", tool_name="replace", tool_id="e1", parameters={"a": 1}),
                frame(
                    type="tool_result",
                    tool_id="e1",
                    status="error",
                    output="",
                    error={"type": "edit_no_change", "message": "no match"},
                ),
                result(),
            ]
        )
        (res,) = of(events, ev.ToolResult)
        assert (res.stdout, res.stderr, res.exit_code, res.kind) == (
            "",
            "no match",
            1,
            ev.ToolKind.FILE_CHANGE,
        )

    def test_write_todos_becomes_a_plan(self) -> None:
        todos = [
            {"description": "read", "status": "completed"},
            {"description": "fix", "status": "in_progress"},
        ]
        _, events = parse(
            [
                init(),
                frame(
                    type="tool_use",
                    tool_name="write_todos",
                    tool_id="p1",
                    parameters={"todos": todos},
                ),
            ]
        )
        assert of(events, ev.Plan) == [
            ev.Plan((ev.PlanItem("read", "completed"), ev.PlanItem("fix", "in_progress")), "p1")
        ]
        assert of(events, ev.ToolCall)[0].kind is ev.ToolKind.PLAN

    def test_mcp_tools_have_the_mcp_kind(self) -> None:
        _, events = parse(
            [
                init(),
                frame(type="tool_use", tool_name="mcp_docs_search", tool_id="m", parameters={}),
            ]
        )
        assert of(events, ev.ToolCall)[0].kind is ev.ToolKind.MCP

    def test_thinking_and_cache_fold_into_the_breakdown(self) -> None:
        stats = {"total_tokens": 175, "input_tokens": 120, "output_tokens": 30, "cached": 80}
        turn, _ = parse([init(), frame(type="result", status="success", stats=stats)])
        assert token_counts(turn) == {
            "input_tokens": 120,
            "cache_read_input_tokens": 80,
            "output_tokens": 55,
            "reasoning_output_tokens": 25,
            "turns": 1,
        }

    def test_priced_per_model_from_a_given_table(self) -> None:
        pricing = PricingTable(
            "t",
            "2026-11-29",
            {"gemini-x": ModelPricing(1.0, 10.0), "gemini-y": ModelPricing(2.0, 20.0)},
        )
        models = {
            "gemini-x": {
                "total_tokens": 1_100_000,
                "input_tokens": 1_000_000,
                "output_tokens": 100_000,
            },
            "gemini-y": {"total_tokens": 10, "input_tokens": 10, "output_tokens": 0},
            "gemini-z": {"total_tokens": 0, "input_tokens": 0, "output_tokens": 0},
        }
        stats = {"total_tokens": 1_100_010, "input_tokens": 1_000_010, "output_tokens": 100_000}
        turn, events = parse(
            [init(), frame(type="result", status="success", stats={**stats, "models": models})],
            pricing=pricing,
        )
        assert turn.cost_usd == pytest.approx(1.0 + 1.0 + 20 / 1_000_000)
        assert turn.usage is not None
        assert turn.usage.cost_source is CostSource.PRICED
        assert turn.usage.model == "gemini-x"
        assert of(events, ev.UsageReport)[0].cost_usd == turn.cost_usd

    def test_one_unpriced_model_makes_the_cost_unknown(self) -> None:
        pricing = PricingTable("t", "2026-11-29", {"m": ModelPricing(1.0, 1.0)})
        models = {
            "m": {"total_tokens": 2, "input_tokens": 1, "output_tokens": 1},
            "other": {"total_tokens": 2, "input_tokens": 1, "output_tokens": 1},
        }
        turn, _ = parse(
            [init(), frame(type="result", status="success", stats={"models": models})],
            pricing=pricing,
        )
        assert turn.cost_usd is None
        assert turn.usage is not None
        assert turn.usage.cost_source is CostSource.UNKNOWN_MODEL

    def test_non_json_and_unknown_frames(self) -> None:
        turn, events = parse(["not json\n", "[1, 2]\n", frame(type="mystery"), init(), result()])
        assert [e.text for e in of(events, ev.RawOutput)] == ["not json", "[1, 2]"]
        assert of(events, ev.Lifecycle)[0].kind == "unknown_frame:mystery"
        assert turn.error is None

    def test_session_started_once(self) -> None:
        _, events = parse([init("a"), init("b"), result()])
        assert of(events, ev.SessionStarted) == [ev.SessionStarted("a")]

    def test_non_success_status_without_message(self) -> None:
        turn, _ = parse([init(), frame(type="result", status="cancelled")])
        assert turn.error is not None
        assert "cancelled" in turn.error
        assert turn.error_kind is FailureKind.OTHER


JSON_VALUES = json_values(max_leaves=8)
frame_types = st.sampled_from(["init", "message", "tool_use", "tool_result", "error", "result"])
field_names = st.sampled_from(
    [
        "session_id",
        "role",
        "content",
        "delta",
        "tool_name",
        "tool_id",
        "parameters",
        "status",
        "output",
        "error",
        "severity",
        "message",
        "stats",
        "models",
    ]
)


class TestAdversarial:
    @settings(max_examples=100)
    @given(st.lists(st.tuples(frame_types, st.dictionaries(field_names, JSON_VALUES)), max_size=8))
    def test_frames_with_wrong_field_types(self, frames: list[tuple[str, dict[str, Any]]]) -> None:
        lines = [json.dumps({**fields, "type": kind}) for kind, fields in frames]
        turn, _ = never_raises(GeminiStreamParser, lines)
        if turn.usage is not None:
            tokens = turn.usage.tokens
            assert tokens.cache_read_input_tokens <= tokens.input_tokens


class TestAFrameThatCannotBeRead:
    def test_a_result_too_large_to_price_costs_only_its_frame(self) -> None:
        pricing = PricingTable("t", "2026-11-29", {"m": ModelPricing(1.0, 2.0)})
        stats = {"total_tokens": 10**400, "input_tokens": 10**400, "output_tokens": 1}
        absurd = frame(type="result", status="success", stats={**stats, "models": {"m": stats}})
        turn, events = parse([init(), absurd, delta("still read")], pricing=pricing)
        assert turn.session_id == "sid-1"
        assert turn.text == "still read"
        # The result frame was lost, so the turn ended without one: a typed failure.
        assert turn.error is not None
        assert "ended before its result frame" in turn.error
        assert turn.error_kind is FailureKind.OTHER
        assert ev.RawOutput(absurd.rstrip("\n")) in events
        malformed = [e for e in of(events, ev.Lifecycle) if e.kind == "malformed_frame"]
        assert [e.detail.split(":")[0] for e in malformed] == ["result"]
        assert of(events, ev.AssistantText) == [ev.AssistantText("still read", delta=True)]
