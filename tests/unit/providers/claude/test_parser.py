from __future__ import annotations

import copy
import json
from functools import partial
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.core import events as ev
from agentshim.core.errors import FailureKind
from agentshim.core.provider import ParserContext
from agentshim.core.turn import ParsedTurn
from agentshim.core.usage import CostSource, TokenUsage
from agentshim.providers.claude import ClaudeStreamParser
from tests.unit.providers.adversarial import json_values, never_raises
from tests.unit.providers.fixtures import (
    capture_names,
    dump_frame,
    load_capture,
    load_frames,
    token_counts,
)

from ._captures import parse, replay
from ._expected import EXPECTED


class TestCaptureReplay:
    def test_every_fixture_has_an_expectation(self) -> None:
        assert set(capture_names("claude")) == set(EXPECTED)

    @pytest.mark.parametrize("name", sorted(EXPECTED))
    def test_turn_summary_matches_the_recording(self, name: str) -> None:
        expected = EXPECTED[name]
        turn, events = replay(load_capture("claude", name))

        assert turn.text.startswith(expected.text)
        assert turn.session_id == expected.session_id
        assert turn.cost_usd == expected.cost
        assert turn.structured_output == expected.structured
        assert turn.error_kind is expected.kind
        assert turn.context_tokens == expected.context_tokens
        if expected.kind is None:
            assert turn.error is None
        else:
            assert turn.error is not None
            assert expected.error_has in turn.error
        if expected.tokens is None:
            assert turn.usage is None
        else:
            assert turn.usage is not None
            assert turn.usage.tokens == expected.tokens
            assert turn.usage.cost_source is CostSource.REPORTED
            assert turn.usage.provider == "claude"
        assert not [
            e for e in events if isinstance(e, ev.Lifecycle) and e.kind == "malformed_frame"
        ]
        assert not [e for e in events if isinstance(e, ev.RawOutput)]

    @pytest.mark.parametrize("name", sorted(EXPECTED))
    def test_session_started_once_per_id_and_usage_reported_per_result(self, name: str) -> None:
        capture = load_capture("claude", name)
        turn, events = replay(capture)
        started = [e.session_id for e in events if isinstance(e, ev.SessionStarted)]
        assert len(started) == len(set(started))
        if turn.session_id is not None:
            assert started[-1] == turn.session_id
        results = sum(1 for line in capture.stdout_lines if '"type":"result"' in line)
        reports = [e for e in events if isinstance(e, ev.UsageReport)]
        assert len([r for r in reports if r.scope is ev.UsageScope.TURN]) == results
        if reports:
            assert reports[-1].usage == turn.usage
            assert reports[-1].cost_usd == turn.cost_usd

    def test_tool_call_and_result_are_paired(self) -> None:
        _, events = replay(load_capture("claude", "b_tool_bash"))
        calls = [e for e in events if isinstance(e, ev.ToolCall)]
        results = [e for e in events if isinstance(e, ev.ToolResult)]
        assert calls == [
            ev.ToolCall(
                "toolu_fake_7b600668c1e1467aa86a",
                "Bash",
                {"command": "echo hello", "description": "Print hello"},
                ev.ToolKind.COMMAND,
            )
        ]
        assert len(results) == 1
        result = results[0]
        assert (result.tool_id, result.tool, result.stdout, result.stderr) == (
            "toolu_fake_7b600668c1e1467aa86a",
            "Bash",
            "hello",
            "",
        )
        assert result.exit_code == 0
        assert result.kind is ev.ToolKind.COMMAND
        assert result.duration_s is not None
        assert result.duration_s >= 0

    def test_event_order_of_a_tool_turn(self) -> None:
        _, events = replay(load_capture("claude", "b_tool_bash"))
        assert [type(e) for e in events] == [
            ev.SessionStarted,
            ev.Lifecycle,
            ev.UsageReport,  # the first model call
            ev.AssistantText,
            ev.ToolCall,
            ev.ToolResult,
            ev.UsageReport,  # the second
            ev.AssistantText,
            ev.UsageReport,  # the turn
        ]
        scopes = [e.scope for e in events if isinstance(e, ev.UsageReport)]
        assert scopes == [ev.UsageScope.CALL, ev.UsageScope.CALL, ev.UsageScope.TURN]
        texts = [e.text for e in events if isinstance(e, ev.AssistantText)]
        assert texts == ["I'll run echo.", "Done."]

    def test_api_retries_become_lifecycle_events(self) -> None:
        _, events = replay(load_capture("claude", "e1_http500"))
        retries = [e for e in events if isinstance(e, ev.Lifecycle) and e.kind == "api_retry"]
        assert [r.detail.split(":")[0] for r in retries] == ["attempt 1/2", "attempt 2/2"]
        assert all("500 server_error" in r.detail for r in retries)

    def test_synthetic_error_message_is_not_assistant_text(self) -> None:
        _, events = replay(load_capture("claude", "e3_http401"))
        assert not [e for e in events if isinstance(e, ev.AssistantText)]
        api_errors = [e for e in events if isinstance(e, ev.Lifecycle) and e.kind == "api_error"]
        assert [e.detail for e in api_errors] == [
            "authentication_failed: Invalid API key · Fix external API key"
        ]
        errors = [e for e in events if isinstance(e, ev.ProviderErrorReported)]
        assert errors == [
            ev.ProviderErrorReported("Invalid API key · Fix external API key", fatal=True)
        ]

    def test_stderr_lines_become_stderr_events(self) -> None:
        _, events = replay(load_capture("claude", "d_resume_missing_uuid"))
        assert [e for e in events if isinstance(e, ev.Stderr)] == [
            ev.Stderr("No conversation found with session ID: 1c37e53a-67c2-4843-942e-8dc057b7f6aa")
        ]

    def test_stream_json_input_session_events(self) -> None:
        _, events = replay(load_capture("claude", "g_stream_json_input"))
        kinds = [e.kind for e in events if isinstance(e, ev.Lifecycle)]
        assert kinds.count("init") == 4
        assert kinds.count("status") == 4
        assert kinds.count("control_response") == 2
        assert [e.text for e in events if isinstance(e, ev.AssistantText)] == [
            "Reply to first turn.",
            "Reply to second turn.",
            "This is a very s",
            "Reply after interrupt.",
        ]
        assert len([e for e in events if isinstance(e, ev.ProviderErrorReported)]) == 1


# One folder per checked CLI version: recorded/ is the oldest (2.1.197), recorded-<version>/
# every later one (scripts/record_fixtures.py --cli-version V).
RECORDED_VERSIONS = {"2.1.197": "recorded", "2.1.332": "recorded-2.1.332"}
RECORDED = capture_names("claude", "recorded")
RECORDED_CASES = [
    pytest.param(f"{folder}/{name}", id=f"{version}-{name}")
    for version, folder in RECORDED_VERSIONS.items()
    for name in capture_names("claude", folder)
]


class TestRecordedSuite:
    """Recordings made by scripts/record_fixtures.py: checked for invariants, not exact values."""

    def test_every_version_recorded_every_scenario(self) -> None:
        for version, folder in RECORDED_VERSIONS.items():
            assert capture_names("claude", folder) == RECORDED, version
            for name in RECORDED:
                meta = load_capture("claude", f"{folder}/{name}").meta
                assert meta["cli"]["version"] == version

    @pytest.mark.parametrize("case", RECORDED_CASES)
    def test_recording_parses_cleanly(self, case: str) -> None:
        capture = load_capture("claude", case)
        stdout = capture.stdout_lines
        turn, events = replay(capture)

        assert not [e for e in events if isinstance(e, ev.RawOutput)]
        assert not [
            e
            for e in events
            if isinstance(e, ev.Lifecycle) and e.kind.startswith(("malformed", "unknown"))
        ]
        assert (turn.error is None) == (capture.exit_code == 0)
        calls = {e.tool_id for e in events if isinstance(e, ev.ToolCall)}
        assert {e.tool_id for e in events if isinstance(e, ev.ToolResult)} == calls
        if any('"type":"result"' in line for line in stdout):
            assert turn.usage is not None
            assert turn.session_id is not None


class TestVersionsAgree:
    """Each scenario, recorded on every checked version, parses to the same turn."""

    @pytest.mark.parametrize("name", RECORDED)
    def test_same_turn_on_every_version(self, name: str) -> None:
        turns = {
            version: replay(load_capture("claude", f"{folder}/{name}"))
            for version, folder in RECORDED_VERSIONS.items()
        }
        (oldest, oldest_events), *later = turns.values()
        for turn, events in later:
            assert turn.error_kind == oldest.error_kind
            assert (turn.error is None) == (oldest.error is None)
            if oldest.error is None:
                assert turn.text == oldest.text
            assert turn.structured_output == oldest.structured_output
            assert (turn.session_id is None) == (oldest.session_id is None)
            assert (turn.usage.tokens if turn.usage else None) == (
                oldest.usage.tokens if oldest.usage else None
            )
            assert [(e.tool, e.kind) for e in events if isinstance(e, ev.ToolCall)] == [
                (e.tool, e.kind) for e in oldest_events if isinstance(e, ev.ToolCall)
            ]
            # Two calls of one step run in parallel: their results may come in either order.
            assert sorted(
                (e.stdout, e.exit_code, e.failed) for e in events if isinstance(e, ev.ToolResult)
            ) == sorted(
                (e.stdout, e.exit_code, e.failed)
                for e in oldest_events
                if isinstance(e, ev.ToolResult)
            )


def _bash_frames() -> tuple[dict[str, Any], dict[str, Any], dict[str, Any], dict[str, Any]]:
    init, _, call, result_frame, _, final = load_frames("claude", "b_tool_bash")
    return init, call, result_frame, final


def _with_content(frame: dict[str, Any], *blocks: dict[str, Any]) -> dict[str, Any]:
    """A copy of an assistant or user ``frame`` whose message holds ``blocks``."""
    changed = copy.deepcopy(frame)
    changed["message"]["content"] = list(blocks)
    return changed


def _tool_use(tool_id: str, name: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}


class TestToolResults:
    def test_every_tool_result_block_of_a_frame_is_reported(self) -> None:
        init, call, user, final = _bash_frames()
        first = call["message"]["content"][0]
        call = _with_content(call, first, _tool_use("toolu_two", "Read", {"file_path": "/x"}))
        user = _with_content(
            user,
            user["message"]["content"][0],
            {
                "tool_use_id": "toolu_two",
                "type": "tool_result",
                "content": "no such file",
                "is_error": True,
            },
        )
        _, events = parse([dump_frame(init), dump_frame(call), dump_frame(user), dump_frame(final)])

        results = [e for e in events if isinstance(e, ev.ToolResult)]
        assert [(r.tool_id, r.tool, r.kind) for r in results] == [
            ("toolu_fake_7b600668c1e1467aa86a", "Bash", ev.ToolKind.COMMAND),
            ("toolu_two", "Read", ev.ToolKind.FILE_READ),
        ]
        failed = results[1]
        assert (failed.stdout, failed.stderr, failed.exit_code, failed.failed) == (
            "",
            "no such file",
            1,
            True,
        )

    @pytest.mark.parametrize(
        ("name", "tool", "exit_code"),
        [("b2_tool_bash_failed", "Bash", 2), ("b3_tool_read_failed", "Read", 1)],
    )
    def test_a_recorded_failed_tool_keeps_the_shells_exit_code(
        self, name: str, tool: str, exit_code: int
    ) -> None:
        # Bash's result starts "Exit code N"; other tools name no code, so 1 stands in.
        turn, events = replay(load_capture("claude", name))
        (result,) = [e for e in events if isinstance(e, ev.ToolResult)]
        assert (result.tool, result.stdout, result.exit_code, result.failed) == (
            tool,
            "",
            exit_code,
            True,
        )
        assert result.stderr
        assert turn.error is None

    @pytest.mark.parametrize(
        ("tool", "kind"),
        [
            ("ToolSearch", ev.ToolKind.MCP),
            ("Monitor", ev.ToolKind.COMMAND),
            ("ListAgents", ev.ToolKind.SUBAGENT),
            ("mcp__stub__echo", ev.ToolKind.MCP),
        ],
    )
    def test_the_tools_new_in_2_1_332_have_their_kind(self, tool: str, kind: ev.ToolKind) -> None:
        init, call, user, final = _bash_frames()
        call = copy.deepcopy(call)
        call["message"]["content"][0]["name"] = tool
        call["message"]["content"][0]["input"] = {"query": "select:mcp__stub__echo"}
        _, events = parse([dump_frame(init), dump_frame(call), dump_frame(user), dump_frame(final)])
        (called,) = [e for e in events if isinstance(e, ev.ToolCall)]
        (result,) = [e for e in events if isinstance(e, ev.ToolResult)]
        assert (called.tool, called.kind, result.kind) == (tool, kind, kind)

    def test_block_list_content_is_flattened(self) -> None:
        init, call, user, final = _bash_frames()
        user = copy.deepcopy(user)
        user["message"]["content"][0]["content"] = [
            {"type": "text", "text": "line one"},
            {"type": "image", "source": {"type": "base64", "data": "AA=="}},
        ]
        _, events = parse([dump_frame(init), dump_frame(call), dump_frame(user), dump_frame(final)])
        (result,) = [e for e in events if isinstance(e, ev.ToolResult)]
        assert result.stdout.splitlines()[0] == "line one"
        assert json.loads(result.stdout.splitlines()[1])["type"] == "image"

    def test_result_for_an_unknown_call_is_still_reported(self) -> None:
        init, _, user, final = _bash_frames()
        _, events = parse([dump_frame(init), dump_frame(user), dump_frame(final)])
        (result,) = [e for e in events if isinstance(e, ev.ToolResult)]
        assert (result.tool, result.stdout, result.duration_s) == ("unknown", "hello", None)

    def test_todo_write_emits_a_plan(self) -> None:
        init, call, _, final = _bash_frames()
        todos = [
            {"content": "Write tests", "status": "completed", "activeForm": "Writing"},
            {"content": "Ship", "status": "in_progress", "activeForm": "Shipping"},
        ]
        call = _with_content(call, _tool_use("toolu_todo", "TodoWrite", {"todos": todos}))
        _, events = parse([dump_frame(init), dump_frame(call), dump_frame(final)])
        (plan,) = [e for e in events if isinstance(e, ev.Plan)]
        assert plan == ev.Plan(
            (ev.PlanItem("Write tests", "completed"), ev.PlanItem("Ship", "in_progress")),
            "toolu_todo",
        )
        (tool_call,) = [e for e in events if isinstance(e, ev.ToolCall)]
        assert tool_call.kind is ev.ToolKind.PLAN

    def test_thinking_becomes_reasoning(self) -> None:
        init, call, _, final = _bash_frames()
        call = _with_content(
            call,
            {"type": "thinking", "thinking": "Let me think.", "signature": "sig"},
            {"type": "redacted_thinking", "data": "opaque"},
        )
        _, events = parse([dump_frame(init), dump_frame(call), dump_frame(final)])
        assert [e for e in events if isinstance(e, ev.Reasoning)] == [ev.Reasoning("Let me think.")]
        assert not [e for e in events if isinstance(e, ev.Lifecycle) and "unknown_block" in e.kind]


class TestFinalText:
    def test_subagent_text_never_reaches_the_final_text(self) -> None:
        init, text_frame, _, _, _, final = load_frames("claude", "b_tool_bash")
        sub = copy.deepcopy(text_frame)
        sub["parent_tool_use_id"] = "toolu_task"
        sub["message"]["content"] = [{"type": "text", "text": "subagent says hi"}]
        sub["message"]["usage"]["input_tokens"] = 999_999
        stdout = [dump_frame(init), dump_frame(text_frame), dump_frame(sub)]

        turn, events = parse(stdout)  # no result frame: the joined fallback
        assert turn.text == "I'll run echo."
        assert turn.context_tokens == 100
        assert [e.text for e in events if isinstance(e, ev.AssistantText)] == ["I'll run echo."]
        assert [
            e.detail for e in events if isinstance(e, ev.Lifecycle) and e.kind == "subagent_text"
        ] == ["subagent says hi"]

        turn, _ = parse([*stdout, dump_frame(final)])
        assert turn.text == "Done."

    def test_result_frame_text_wins_over_the_stream(self) -> None:
        init, text_frame, _, _, _, final = load_frames("claude", "b_tool_bash")
        final = {**final, "result": "summary"}
        turn, _ = parse([dump_frame(init), dump_frame(text_frame), dump_frame(final)])
        assert turn.text == "summary"

    def test_without_result_text_the_blocks_are_joined_with_newlines(self) -> None:
        init, text_frame, _, _, done_frame, final = load_frames("claude", "b_tool_bash")
        final = {k: v for k, v in final.items() if k != "result"}
        turn, _ = parse(
            [dump_frame(init), dump_frame(text_frame), dump_frame(done_frame), dump_frame(final)]
        )
        assert turn.text == "I'll run echo.\nDone."
        assert turn.error is None

    def test_stream_without_result_frame_fails_with_other(self) -> None:
        init, text_frame, *_ = load_frames("claude", "b_tool_bash")
        turn, events = parse([dump_frame(init), dump_frame(text_frame)])
        assert turn.error is not None
        assert "stream ended before the result frame" in turn.error
        assert turn.error_kind is FailureKind.OTHER
        assert turn.text == "I'll run echo."
        assert turn.session_id == "080a6a65-480a-4d27-853f-064fd2b09ac8"
        assert turn.usage is None
        assert turn.cost_usd is None
        # The model call was reported; the turn never was.
        reports = [e for e in events if isinstance(e, ev.UsageReport)]
        assert [r.scope for r in reports] == [ev.UsageScope.CALL]

    def test_truncated_last_line_fails_as_an_early_end(self) -> None:
        lines = list(load_capture("claude", "a_plain_text").stdout_lines)
        lines[-1] = lines[-1][: len(lines[-1]) // 2]
        turn, events = parse(lines)
        assert turn.error_kind is FailureKind.OTHER
        assert turn.error is not None
        assert "ended before the result frame" in turn.error
        assert isinstance(events[-1], ev.RawOutput)

    def test_stderr_classifies_an_early_end(self) -> None:
        turn, _ = parse([], ["Error: Invalid API key · Please run /login\n"])
        assert turn.error_kind is FailureKind.AUTH
        assert turn.error is not None
        assert "Invalid API key" in turn.error


def _result(**changes: Any) -> str:
    final = load_frames("claude", "a_plain_text")[-1]
    final.update(changes)
    return dump_frame({k: v for k, v in final.items() if v is not _DROP})


_DROP = object()


class TestUsageAndCost:
    def test_a_usage_without_input_or_output_counts_is_unknown(self) -> None:
        turn, _ = parse([_result(usage={"server_tool_use": {"web_search_requests": 0}})])
        assert turn.usage is not None
        assert not turn.usage.increment_known
        assert turn.usage.tokens.total_tokens == 0

    def test_a_result_without_num_turns_counts_one(self) -> None:
        turn, _ = parse([_result(num_turns=_DROP)])
        assert turn.usage is not None
        assert turn.usage.tokens.turns == 1

    def test_cache_tokens_are_folded_into_input(self) -> None:
        usage = {
            "input_tokens": 10,
            "cache_creation_input_tokens": 300,
            "cache_read_input_tokens": 5000,
            "output_tokens": 70,
            "cache_creation": {"ephemeral_1h_input_tokens": 120, "ephemeral_5m_input_tokens": 180},
        }
        turn, _ = parse([_result(usage=usage, num_turns=3)])
        assert token_counts(turn) == {
            "input_tokens": 5310,
            "cache_read_input_tokens": 5000,
            "cache_write_input_tokens": 300,
            "cache_write_1h_input_tokens": 120,
            "output_tokens": 70,
            "turns": 3,
        }
        assert turn.usage.raw == usage

    def test_context_tokens_come_from_the_last_main_message(self) -> None:
        init, first, call, user, done, final = load_frames("claude", "b_tool_bash")
        done = copy.deepcopy(done)
        done["message"]["usage"] = {
            "input_tokens": 7,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 20,
            "output_tokens": 1,
        }
        turn, _ = parse([dump_frame(f) for f in (init, first, call, user, done, final)])
        assert turn.context_tokens == 1027

    def test_missing_cost_is_priced_from_the_table(self) -> None:
        model_usage = {
            "claude-opus-4-8[1m]": {
                "inputTokens": 1_000_000,
                "outputTokens": 1_000_000,
                "cacheReadInputTokens": 0,
                "cacheCreationInputTokens": 0,
            }
        }
        turn, events = parse([_result(total_cost_usd=_DROP, modelUsage=model_usage)])
        assert turn.cost_usd == pytest.approx(30.0)
        assert turn.usage is not None
        assert turn.usage.cost_source is CostSource.PRICED
        (report,) = [e for e in events if isinstance(e, ev.UsageReport)]
        assert report.cost_usd == pytest.approx(30.0)

    def test_missing_cost_without_model_usage_uses_the_init_model(self) -> None:
        init = load_frames("claude", "a_plain_text")[0]
        turn, _ = parse([dump_frame(init), _result(total_cost_usd=_DROP, modelUsage={})])
        # 100 input at 5 USD/Mtok + 20 output at 25 USD/Mtok.
        assert turn.cost_usd == pytest.approx(0.001)
        assert turn.usage is not None
        assert turn.usage.model == "claude-opus-4-8[1m]"

    def test_requested_model_prices_a_stream_that_names_none(self) -> None:
        parser_events: list[object] = []
        parser = ClaudeStreamParser(parser_events.append)
        parser.configure(ParserContext(model="claude-haiku-4-5"))
        parser.feed_stdout(_result(total_cost_usd=_DROP, modelUsage={}))
        turn = parser.finish()
        # 100 input at 1 USD/Mtok + 20 output at 5 USD/Mtok.
        assert turn.cost_usd == pytest.approx(0.0002)
        assert turn.usage is not None
        assert turn.usage.model == "claude-haiku-4-5"

    def test_unknown_model_has_no_cost(self) -> None:
        model_usage = {"claude-unreleased-9": {"inputTokens": 10, "outputTokens": 10}}
        turn, _ = parse([_result(total_cost_usd=_DROP, modelUsage=model_usage)])
        assert turn.cost_usd is None
        assert turn.usage is not None
        assert turn.usage.cost_source is CostSource.UNKNOWN_MODEL

    def test_nothing_to_price_is_not_reported(self) -> None:
        zero = {"input_tokens": 0, "output_tokens": 0}
        turn, _ = parse([_result(total_cost_usd=_DROP, modelUsage={}, usage=zero)])
        assert turn.cost_usd is None
        assert turn.usage is not None
        assert turn.usage.cost_source is CostSource.NOT_REPORTED

    def test_nonsense_counts_read_as_zero(self) -> None:
        usage = {"input_tokens": -5, "output_tokens": "many", "cache_read_input_tokens": True}
        turn, _ = parse([_result(usage=usage, num_turns=None)])
        assert turn.usage is not None
        assert turn.usage.tokens == TokenUsage()


class TestStructuredOutput:
    def test_field_is_ignored_when_no_schema_was_requested(self) -> None:
        turn, _ = parse(load_capture("claude", "f_json_schema").stdout_lines)
        assert turn.structured_output is None
        assert turn.error is None

    def test_falls_back_to_json_in_the_result_text(self) -> None:
        line = _result(result='{"name": "Bob", "age": 4}')
        turn, _ = parse([line], expect_structured=True)
        assert turn.structured_output == {"name": "Bob", "age": 4}
        assert turn.error is None

    def test_prose_is_never_forced_into_a_payload(self) -> None:
        turn, events = parse([_result(result="42")], expect_structured=True)
        assert turn.structured_output is None
        assert turn.error_kind is FailureKind.SCHEMA
        assert [e.fatal for e in events if isinstance(e, ev.ProviderErrorReported)] == [True]

    def test_retries_exhausted_reports_the_last_validation_error(self) -> None:
        init, call, user, _ = _bash_frames()
        call = _with_content(call, _tool_use("toolu_so", "StructuredOutput", {"age": "x"}))
        user = _with_content(
            user,
            {
                "tool_use_id": "toolu_so",
                "type": "tool_result",
                "content": "Output does not match required schema: /age: must be integer",
                "is_error": True,
            },
        )
        final = _result(
            subtype="error_max_structured_output_retries",
            is_error=True,
            result=_DROP,
            errors=["Failed to provide valid structured output after 5 attempts"],
        )
        turn, _ = parse(
            [dump_frame(init), dump_frame(call), dump_frame(user), final], expect_structured=True
        )
        assert turn.error_kind is FailureKind.SCHEMA
        assert turn.error == "Output does not match required schema: /age: must be integer"
        assert turn.structured_output is None


# The kind of failure each error an assistant message names stands for.
ASSISTANT_ERROR_KINDS = {
    "billing_error": FailureKind.USAGE_LIMIT,
    "oauth_org_not_allowed": FailureKind.AUTH,
    "rate_limit": FailureKind.TRANSIENT,
    "invalid_request": FailureKind.OTHER,
}


class TestFailureKinds:
    @pytest.mark.parametrize(
        ("changes", "kind"),
        [
            (
                {"terminal_reason": "blocking_limit", "api_error_status": 503},
                FailureKind.CONTEXT_OVERFLOW,
            ),
            ({"terminal_reason": "rapid_refill_breaker"}, FailureKind.CONTEXT_OVERFLOW),
            (
                {"api_error_status": 503, "result": "Prompt is too long"},
                FailureKind.CONTEXT_OVERFLOW,
            ),
            ({"api_error_status": 403, "result": "Forbidden"}, FailureKind.AUTH),
            ({"api_error_status": 429, "result": "Rate limited"}, FailureKind.TRANSIENT),
            (
                {"api_error_status": 429, "result": "You've hit your limit · resets 3pm"},
                FailureKind.USAGE_LIMIT,
            ),
            (
                {"api_error_status": None, "result": "API Error: 502 Bad gateway"},
                FailureKind.TRANSIENT,
            ),
            (
                {"api_error_status": None, "result": "Credit balance is too low"},
                FailureKind.USAGE_LIMIT,
            ),
            ({"api_error_status": None, "result": "something odd"}, FailureKind.OTHER),
        ],
    )
    def test_result_frame_fields(self, changes: dict[str, Any], kind: FailureKind) -> None:
        turn, _ = parse([_result(is_error=True, **changes)])
        assert turn.error_kind is kind

    @pytest.mark.parametrize(("error", "kind"), ASSISTANT_ERROR_KINDS.items())
    def test_assistant_error_kind(self, error: str, kind: FailureKind) -> None:
        synthetic = load_frames("claude", "e1_http500")[3]
        synthetic["error"] = error
        final = _result(is_error=True, api_error_status=None, result="request failed")
        turn, _ = parse([dump_frame(synthetic), final])
        assert turn.error_kind is kind

    def test_subagent_error_does_not_classify_the_turn(self) -> None:
        synthetic = load_frames("claude", "e1_http500")[3]
        synthetic["error"] = "authentication_failed"
        synthetic["parent_tool_use_id"] = "toolu_task"
        turn, _ = parse([dump_frame(synthetic), _result(is_error=True, result="it broke")])
        assert turn.error_kind is FailureKind.OTHER

    def test_rejected_rate_limit_window_means_usage_limit(self) -> None:
        event = {
            "type": "rate_limit_event",
            "rate_limit_info": {"status": "rejected", "rateLimitType": "five_hour"},
            "session_id": "s1",
        }
        turn, events = parse(
            [dump_frame(event), _result(is_error=True, api_error_status=429, result="x")]
        )
        assert turn.error_kind is FailureKind.USAGE_LIMIT
        assert ev.Lifecycle("rate_limit", "rejected five_hour") in events

    def test_stderr_is_read_only_when_the_stream_said_nothing(self) -> None:
        silent = _result(is_error=True, subtype="error_during_execution", result=_DROP)
        turn, _ = parse([silent], ["Error: 529 overloaded\n"])
        assert turn.error_kind is FailureKind.TRANSIENT

        spoken = _result(is_error=True, result="Invalid API key", api_error_status=401)
        turn, _ = parse([spoken], ["Error: 529 overloaded\n"])
        assert turn.error_kind is FailureKind.AUTH

    def test_a_later_success_on_the_same_stream_clears_the_failure(self) -> None:
        turn, _ = parse([_result(is_error=True, result="boom"), _result()])
        assert turn.error is None
        assert turn.error_kind is None


class TestOddInput:
    def test_noise_lines_become_raw_output(self) -> None:
        lines = [
            "[SandboxDebug] starting\n",
            *load_capture("claude", "a_plain_text").stdout_lines,
            "\n",
            "[1, 2]\n",
        ]
        turn, events = parse(lines)
        raw = [e.text for e in events if isinstance(e, ev.RawOutput)]
        assert raw == ["[SandboxDebug] starting", "[1, 2]"]
        assert turn.text.startswith("Hello from the fake API")

    def test_unknown_frame_type_is_lifecycle(self) -> None:
        turn, events = parse(['{"type":"telemetry","x":1}\n', _result()])
        assert [e.kind for e in events if isinstance(e, ev.Lifecycle)] == [
            "unknown_frame:telemetry"
        ]
        assert turn.error is None

    def test_frame_of_unexpected_shape_costs_only_that_frame(self) -> None:
        lines = [
            '{"type":"assistant","message":[1,2]}\n',
            '{"type":"user","message":{"content":7}}\n',
        ]
        turn, events = parse([*lines, _result()])
        assert turn.text.startswith("Hello from the fake API")
        assert turn.error is None
        malformed = [
            e for e in events if isinstance(e, ev.Lifecycle) and e.kind == "malformed_frame"
        ]
        assert [e.detail.split(":")[0] for e in malformed] == ["assistant"]
        assert ev.RawOutput(lines[0].rstrip("\n")) in events

    def test_a_failing_event_handler_propagates(self) -> None:
        class Boom(Exception):
            pass

        def emit(event: object) -> None:
            raise Boom

        parser = ClaudeStreamParser(emit)
        with pytest.raises(Boom):
            parser.feed_stdout(load_capture("claude", "a_plain_text").stdout_lines[0])


JSON = json_values(max_leaves=10)
FRAME_KEYS = st.sampled_from(
    [
        "type",
        "subtype",
        "message",
        "content",
        "usage",
        "result",
        "is_error",
        "session_id",
        "parent_tool_use_id",
        "error",
        "errors",
        "structured_output",
        "total_cost_usd",
        "modelUsage",
        "num_turns",
        "api_error_status",
        "terminal_reason",
        "rate_limit_info",
        "permission_denials",
        "tool_use_id",
        "input",
        "text",
    ]
)
FRAME_TYPES = st.sampled_from(
    [
        "system",
        "assistant",
        "user",
        "result",
        "stream_event",
        "rate_limit_event",
        "control_response",
        "x",
    ]
)
FRAMES = st.builds(
    lambda kind, body: {**body, "type": kind},
    FRAME_TYPES,
    st.dictionaries(FRAME_KEYS, JSON, max_size=8),
)
REAL_LINES = [
    line for name in capture_names("claude") for line in load_capture("claude", name).stdout_lines
]


def _survives(lines: list[str], stderr: tuple[str, ...] | list[str] = ()) -> ParsedTurn:
    for expect in (False, True):
        turn, _ = never_raises(partial(ClaudeStreamParser, expect_structured=expect), lines, stderr)
    return turn


class TestNeverRaises:
    @settings(max_examples=120)
    @given(st.lists(FRAMES, max_size=4))
    def test_frames_of_every_type_with_arbitrary_fields(self, values: list[dict[str, Any]]) -> None:
        _survives([json.dumps(v) for v in values])

    @settings(max_examples=150)
    @given(st.sampled_from(REAL_LINES), st.data())
    def test_real_frames_with_one_value_replaced(self, line: str, data: st.DataObject) -> None:
        frame = json.loads(line)
        node: Any = frame
        while True:
            keys = list(node) if isinstance(node, dict) else list(range(len(node)))
            if not keys:
                break
            key = data.draw(st.sampled_from(keys))
            child = node[key]
            if isinstance(child, (dict, list)) and child and data.draw(st.booleans()):
                node = child
                continue
            node[key] = data.draw(JSON)
            break
        _survives([json.dumps(frame)])

    @settings(max_examples=150)
    @given(st.sampled_from(REAL_LINES), st.integers(min_value=0, max_value=4000))
    def test_truncated_real_lines(self, line: str, cut: int) -> None:
        turn = _survives([line[:cut]])
        if cut < len(line.rstrip("\n")):
            assert turn.error is not None
