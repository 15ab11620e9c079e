from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.core import events as ev
from agentshim.core.errors import FailureKind
from agentshim.core.pricing import ModelPricing, PricingTable
from agentshim.core.usage import CostSource, TokenUsage
from agentshim.providers.copilot import CopilotStreamParser
from agentshim.providers.copilot.parser import IGNORED_FRAMES
from tests.unit.providers.adversarial import json_values, never_raises
from tests.unit.providers.fixtures import dump_frame, load_capture, load_frames, token_counts

from ._captures import EXPECTED, of_type, parse


def frame(kind: str, data: dict[str, Any] | None = None, **top: Any) -> str:
    return dump_frame({"type": kind, "data": data or {}, "id": "x", "parentId": "y", **top})


def result(session_id: str = "sess-1", exit_code: int = 0) -> str:
    return dump_frame(
        {
            "type": "result",
            "sessionId": session_id,
            "exitCode": exit_code,
            "usage": {"premiumRequests": 0, "totalApiDurationMs": 5},
        }
    )


def tool_run(call_id: str, tool: str, arguments: dict[str, Any], **completion: Any) -> list[str]:
    """A tool call's start frame and its completion frame (``completion`` is its data)."""
    return [
        frame(
            "tool.execution_start",
            {"toolCallId": call_id, "toolName": tool, "arguments": arguments},
        ),
        frame("tool.execution_complete", {"toolCallId": call_id, **completion}),
    ]


class TestRecordedStreams:
    @pytest.mark.parametrize("name", sorted(n for n, e in EXPECTED.items() if e.session_id))
    def test_usage_is_unknown_never_a_measured_zero(self, name: str) -> None:
        parsed, events = parse(load_capture("copilot", name).stdout_lines)
        assert parsed.usage is not None
        assert parsed.usage.increment_known is False
        assert parsed.usage.tokens == TokenUsage()
        assert parsed.usage.cost_source is CostSource.NOT_REPORTED
        assert parsed.usage.raw["premiumRequests"] == 0
        assert parsed.cost_usd is None
        reports = of_type(events, ev.UsageReport)
        assert len(reports) == 1
        assert reports[0].usage.increment_known is False

    @pytest.mark.parametrize("name", sorted(n for n, e in EXPECTED.items() if e.session_id))
    def test_session_started_once(self, name: str) -> None:
        _, events = parse(load_capture("copilot", name).stdout_lines)
        assert of_type(events, ev.SessionStarted) == [
            ev.SessionStarted(EXPECTED[name].session_id or "")
        ]

    def test_streamed_deltas_make_the_text_and_the_message_is_not_repeated(self) -> None:
        _, events = parse(load_capture("copilot", "plain").stdout_lines)
        texts = [e.text for e in of_type(events, ev.AssistantText)]
        assert texts == ["Hello fr", "om the f", "ake mode", "l."]

    def test_shell_tool_call_and_result(self) -> None:
        _, events = parse(load_capture("copilot", "tool_shell").stdout_lines)
        calls = of_type(events, ev.ToolCall)
        results = of_type(events, ev.ToolResult)
        assert calls == [
            ev.ToolCall(
                "call_f487928bb3c84e08",
                "bash",
                {"command": "echo hello", "description": "Run echo hello"},
                ev.ToolKind.COMMAND,
            )
        ]
        assert len(results) == 1
        assert results[0].tool_id == "call_f487928bb3c84e08"
        assert results[0].tool == "bash"
        assert results[0].stdout == "hello\n"
        assert results[0].exit_code == 0
        assert results[0].kind is ev.ToolKind.COMMAND
        assert events.index(calls[0]) < events.index(results[0])

    def test_retries_are_visible_as_lifecycle(self) -> None:
        _, events = parse(load_capture("copilot", "api_500").stdout_lines)
        kinds = [e.kind for e in of_type(events, ev.Lifecycle)]
        assert kinds.count("api_retry") == 5
        assert kinds.count("model_call_failed") == 6
        errors = of_type(events, ev.ProviderErrorReported)
        assert len(errors) == 1
        assert errors[0].fatal

    def test_missing_resume_reads_stderr(self) -> None:
        capture = load_capture("copilot", "resume_missing")
        parsed, events = parse(capture.stdout_lines, capture.stderr_lines)
        assert parsed.error == (
            "Error: No session, task, or name matched '00000000-0000-4000-8000-000000000000'."
        )
        assert parsed.usage is None
        assert next(e.text for e in of_type(events, ev.Stderr)).startswith("Error: No session")

    def test_prompt_echo_and_noise_make_no_events(self) -> None:
        noise = [
            line
            for line in load_capture("copilot", "tool_shell").stdout_lines
            if json.loads(line)["type"] in IGNORED_FRAMES
        ]
        assert len(noise) > 20
        parsed, events = parse(noise)
        assert events == []
        assert parsed.error is not None


class TestFrames:
    def test_message_output_tokens_stand_in_for_missing_usage_frames(self) -> None:
        message = {"messageId": "m1", "content": "hi", "outputTokens": 7}
        turn, events = parse(
            [
                frame("session.tools_updated", {"model": "gpt-5-mini"}),
                frame("assistant.message", message),
                result(),
            ]
        )
        assert turn.usage is not None
        assert turn.usage.tokens == TokenUsage(output_tokens=7, turns=1)
        assert not turn.usage.increment_known
        assert turn.usage.model == "gpt-5-mini"
        assert [e.usage for e in of_type(events, ev.UsageReport)] == [turn.usage]

    def test_usage_frames_win_over_message_output_tokens(self) -> None:
        usage = {"model": "m", "inputTokens": 10, "outputTokens": 3}
        turn, _ = parse(
            [
                frame("assistant.message", {"messageId": "m1", "content": "hi", "outputTokens": 3}),
                frame("assistant.usage", usage),
                result(),
            ]
        )
        assert turn.usage is not None
        assert turn.usage.increment_known
        assert turn.usage.tokens == TokenUsage(input_tokens=10, output_tokens=3, turns=1)

    def test_a_usage_frame_without_counts_is_unknown(self) -> None:
        turn, events = parse(
            [
                frame("assistant.usage", {"model": "m", "inputTokens": 10, "outputTokens": 3}),
                frame("assistant.usage", {"model": "m", "duration": 812}),
                result(),
            ]
        )
        assert [e.usage.increment_known for e in of_type(events, ev.UsageReport)] == [True, False]
        assert turn.usage is not None
        assert not turn.usage.increment_known
        assert turn.usage.tokens == TokenUsage(input_tokens=10, output_tokens=3, turns=1)

    def test_session_start_names_the_session_before_the_result(self) -> None:
        parsed, events = parse(
            [
                frame("session.start", {"sessionId": "early-1", "selectedModel": "m"}),
                result("early-1"),
            ]
        )
        assert of_type(events, ev.SessionStarted) == [ev.SessionStarted("early-1")]
        assert parsed.session_id == "early-1"

    def test_message_without_deltas_is_emitted_whole(self) -> None:
        parsed, events = parse(
            [frame("assistant.message", {"messageId": "m1", "content": "whole"}), result()]
        )
        assert [e.text for e in of_type(events, ev.AssistantText)] == ["whole"]
        assert parsed.text == "whole"

    def test_final_text_is_the_last_non_empty_message(self) -> None:
        parsed, _ = parse(
            [
                frame("assistant.message", {"messageId": "a", "content": "first"}),
                frame("assistant.message", {"messageId": "b", "content": "", "toolRequests": []}),
                frame("assistant.message", {"messageId": "c", "content": "second"}),
                result(),
            ]
        )
        assert parsed.text == "second"

    def test_subagent_text_is_not_the_answer(self) -> None:
        parsed, events = parse(
            [
                frame(
                    "assistant.message_delta",
                    {"messageId": "s", "deltaContent": "sub", "parentToolCallId": "t"},
                ),
                frame(
                    "assistant.message",
                    {"messageId": "s", "content": "sub says", "parentToolCallId": "t"},
                ),
                frame("assistant.message", {"messageId": "m", "content": "main says"}),
                result(),
            ]
        )
        assert parsed.text == "main says"
        assert [e.text for e in of_type(events, ev.AssistantText)] == ["main says"]
        assert ev.Lifecycle("subagent_text", "sub says") in events

    def test_reasoning_deltas_and_block_are_not_duplicated(self) -> None:
        _, events = parse(
            [
                frame("assistant.reasoning_delta", {"reasoningId": "r", "deltaContent": "think"}),
                frame("assistant.reasoning", {"reasoningId": "r", "content": "think"}),
                frame("assistant.reasoning", {"reasoningId": "q", "content": "other"}),
                result(),
            ]
        )
        assert [e.text for e in of_type(events, ev.Reasoning)] == ["think", "other"]

    def test_failed_tool_goes_to_stderr_with_exit_1(self) -> None:
        ran = tool_run(
            "t1", "view", {"path": "/x"}, success=False, error={"message": "no such file"}
        )
        _, events = parse([*ran, result()])
        (tool_result,) = of_type(events, ev.ToolResult)
        assert tool_result == ev.ToolResult(
            "t1", "view", "", "no such file", 1, tool_result.duration_s, ev.ToolKind.FILE_READ
        )
        assert tool_result.failed

    def test_shell_exit_code_marks_failure(self) -> None:
        ran = tool_run(
            "t2",
            "bash",
            {"command": "false"},
            success=True,
            shellExecution={"exitCode": 2},
            result={"content": "boom\n<shellId: 3 completed with exit code 2>"},
        )
        _, events = parse([*ran, result()])
        (tool_result,) = of_type(events, ev.ToolResult)
        assert (tool_result.stdout, tool_result.stderr, tool_result.exit_code) == ("", "boom\n", 2)

    def test_mcp_tool_kind_comes_from_the_frame(self) -> None:
        _, events = parse(
            [
                frame(
                    "tool.execution_start",
                    {
                        "toolCallId": "t3",
                        "toolName": "docs-search",
                        "mcpServerName": "docs",
                        "arguments": {},
                    },
                ),
                result(),
            ]
        )
        assert of_type(events, ev.ToolCall)[0].kind is ev.ToolKind.MCP

    def test_usage_frames_fold_cache_into_input(self) -> None:
        usage = {
            "model": "claude-sonnet-4",
            "inputTokens": 100,
            "cacheReadTokens": 30,
            "cacheWriteTokens": 20,
            "outputTokens": 40,
            "reasoningTokens": 10,
        }
        parsed, events = parse(
            [
                frame("assistant.usage", usage, ephemeral=True),
                frame("assistant.usage", usage, ephemeral=True),
                result(),
            ]
        )
        assert token_counts(parsed) == {
            "input_tokens": 300,
            "cache_read_input_tokens": 60,
            "cache_write_input_tokens": 40,
            "output_tokens": 80,
            "reasoning_output_tokens": 20,
            "turns": 1,
        }
        assert parsed.usage.increment_known
        assert parsed.usage.cost_source is CostSource.UNKNOWN_MODEL
        assert parsed.cost_usd is None
        assert len(of_type(events, ev.UsageReport)) == 2

    def test_usage_is_priced_from_a_given_table(self) -> None:
        table = PricingTable("t", "2026-11-29", {"claude-sonnet-4": ModelPricing(1.0, 2.0)})
        usage = {"model": "claude-sonnet-4", "inputTokens": 1_000_000, "outputTokens": 1_000_000}
        parsed, _ = parse([frame("assistant.usage", usage), result()], pricing=table)
        assert parsed.cost_usd == pytest.approx(3.0)
        assert parsed.usage is not None
        assert parsed.usage.cost_source is CostSource.PRICED

    @pytest.mark.parametrize(
        ("data", "kind"),
        [
            ({"errorType": "authentication", "message": "no"}, FailureKind.AUTH),
            ({"errorType": "authorization", "message": "no"}, FailureKind.AUTH),
            ({"errorType": "quota", "message": "no"}, FailureKind.USAGE_LIMIT),
            ({"errorType": "rate_limit", "message": "slow down"}, FailureKind.TRANSIENT),
            ({"errorType": "context_limit", "message": "full"}, FailureKind.CONTEXT_OVERFLOW),
            ({"errorType": "query", "message": "failed", "statusCode": 503}, FailureKind.TRANSIENT),
            ({"errorType": "query", "message": "failed", "statusCode": 429}, FailureKind.TRANSIENT),
            (
                {"errorType": "query", "message": "The prompt is too long"},
                FailureKind.CONTEXT_OVERFLOW,
            ),
            ({"errorType": "query", "message": "bad", "statusCode": 400}, FailureKind.OTHER),
            ({"errorType": "policy", "message": "blocked by policy"}, FailureKind.OTHER),
        ],
    )
    def test_session_error_kinds(self, data: dict[str, Any], kind: FailureKind) -> None:
        parsed, events = parse([frame("session.error", data), result(exit_code=1)])
        assert parsed.error_kind is kind
        assert parsed.error == data["message"]
        assert of_type(events, ev.ProviderErrorReported) == [
            ev.ProviderErrorReported(data["message"], fatal=True)
        ]

    def test_a_call_without_an_http_answer_is_transient(self) -> None:
        failure = {
            "failureKind": "transport",
            "errorMessage": "tcp connect error",
            "retryAttempt": 0,
        }
        parsed, _ = parse(
            [
                frame("model.call_failure", failure, ephemeral=True),
                frame("session.error", {"errorType": "query", "message": "Could not connect"}),
                result(exit_code=1),
            ]
        )
        assert parsed.error_kind is FailureKind.TRANSIENT

    def test_nonzero_result_without_session_error_fails(self) -> None:
        parsed, _ = parse([frame("assistant.message", {"content": "hm"}), result(exit_code=3)])
        assert parsed.error == "copilot reported exit code 3"
        assert parsed.error_kind is FailureKind.OTHER

    def test_stream_cut_before_result_fails_and_keeps_streamed_text(self) -> None:
        lines = [
            line
            for line in load_capture("copilot", "plain").stdout_lines
            if json.loads(line)["type"] != "result"
        ]
        cut = [line for line in lines if json.loads(line)["type"] != "assistant.message"]
        parsed, _ = parse(cut)
        assert parsed.error is not None
        assert "ended before its result line" in parsed.error
        assert parsed.error_kind is FailureKind.OTHER
        assert parsed.text == "Hello from the fake model."
        assert parsed.session_id is None

    def test_unknown_frame_is_reported_not_fatal(self) -> None:
        line = frame("session.title_changed", {"title": "x"})
        parsed, events = parse([line, result()])
        assert ev.Lifecycle("unknown_frame:session.title_changed", line.strip()) in events
        assert parsed.error is None

    def test_truncated_noise_line_becomes_raw_output(self) -> None:
        line = load_capture("copilot", "plain").stdout_lines[0]
        parsed, events = parse([line[:50]])
        assert of_type(events, ev.RawOutput) == [ev.RawOutput(line[:50])]
        assert parsed.error is not None

    def test_failed_mcp_server_is_reported(self) -> None:
        data = {"serverName": "docs", "status": "failed", "error": "connection refused"}
        _, events = parse(
            [frame("session.mcp_server_status_changed", data, ephemeral=True), result()]
        )
        assert ev.Lifecycle("mcp_server_failed", "docs: connection refused") in events


JSON_VALUES = json_values()
FRAME_TYPES = st.sampled_from(
    sorted(
        {f["type"] for name in EXPECTED for f in load_frames("copilot", name)}
        | {"assistant.usage", "session.start"}
    )
)


class TestAdversarialInput:
    @settings(max_examples=200)
    @given(st.lists(st.tuples(FRAME_TYPES, JSON_VALUES, JSON_VALUES), max_size=6))
    def test_known_frame_types_with_arbitrary_payloads(
        self, items: list[tuple[str, Any, Any]]
    ) -> None:
        lines = [
            json.dumps({"type": t, "data": d, "sessionId": s, "exitCode": d}) for t, d, s in items
        ]
        never_raises(CopilotStreamParser, lines)


class TestAFrameThatCannotBeRead:
    def test_a_usage_too_large_to_price_costs_only_its_frame(self) -> None:
        table = PricingTable("t", "2026-11-29", {"claude-sonnet-4": ModelPricing(1.0, 2.0)})
        # A count no float can hold: pricing it overflows inside the handler.
        absurd = frame("assistant.usage", {"model": "claude-sonnet-4", "inputTokens": 10**400})
        good = frame("assistant.usage", {"model": "claude-sonnet-4", "inputTokens": 1_000_000})
        message = frame("assistant.message", {"messageId": "m", "content": "done"})
        parsed, events = parse([absurd, good, message, result()], pricing=table)
        assert parsed.text == "done"
        assert parsed.error is None
        assert parsed.cost_usd == pytest.approx(1.0)
        assert ev.RawOutput(absurd.rstrip("\n")) in events
        malformed = [e for e in of_type(events, ev.Lifecycle) if e.kind == "malformed_frame"]
        assert [e.detail.split(":")[0] for e in malformed] == ["assistant.usage"]
        assert len(of_type(events, ev.UsageReport)) == 1
