from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.core import events as ev
from agentshim.core.errors import FailureKind
from agentshim.core.usage import CostSource, TokenUsage
from agentshim.providers.pi import PiStreamParser, short_session_id
from tests.unit.providers.adversarial import json_values, never_raises
from tests.unit.providers.fixtures import dump_frame, load_capture, load_frames, token_counts

from ._captures import EXPECTED, RPC_MODE, of_type, parse

FULL_ID = "01a2275a-1c2a-72ae-8ced-4a8fdca01c2e"


def assistant(
    content: list[dict[str, Any]],
    *,
    stop: str = "stop",
    error: str | None = None,
    usage: dict[str, Any] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "model": "m-1",
        "usage": usage
        or {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0},
        "stopReason": stop,
    }
    if error is not None:
        message["errorMessage"] = error
    return message


def turn(*middle: str, end: bool = True) -> list[str]:
    head = [
        dump_frame({"type": "session", "version": 3, "id": "s-1"}),
        dump_frame({"type": "agent_start"}),
    ]
    return [*head, *middle, *([dump_frame({"type": "agent_end", "messages": []})] if end else [])]


def message_end(message: dict[str, Any]) -> str:
    return dump_frame({"type": "message_end", "message": message})


class TestRecordedStreams:
    @pytest.mark.parametrize("name", sorted(n for n, e in EXPECTED.items() if e.session_id))
    def test_usage_and_reported_cost(self, name: str) -> None:
        expected = EXPECTED[name]
        parsed, events = parse(load_capture("pi", name).stdout_lines)
        assert parsed.usage is not None
        assert parsed.usage.tokens == TokenUsage(
            input_tokens=expected.input_tokens, output_tokens=expected.output_tokens, turns=1
        )
        assert parsed.usage.increment_known
        assert parsed.usage.cost_source is CostSource.REPORTED
        assert parsed.cost_usd == 0.0
        assert parsed.usage.model in ("claude-fake-1", "gpt-fake-1")
        assert of_type(events, ev.UsageReport)

    def test_text_comes_from_deltas_only(self) -> None:
        parsed, events = parse(load_capture("pi", "a_plain_text").stdout_lines)
        pieces = [e.text for e in of_type(events, ev.AssistantText)]
        assert "".join(pieces) == parsed.text
        # The first update's "partial" already held a prefix of the text; it is never emitted.
        assert pieces[0] == "Hello fr"

    def test_shell_tool_call_and_result(self) -> None:
        _, events = parse(load_capture("pi", "b_tool_bash").stdout_lines)
        (call,) = of_type(events, ev.ToolCall)
        (result,) = of_type(events, ev.ToolResult)
        assert call == ev.ToolCall(
            "toolu_fake_a81fcbcc07854ef1abcb",
            "bash",
            {"command": "echo hello"},
            ev.ToolKind.COMMAND,
        )
        assert (result.tool_id, result.tool, result.stdout, result.stderr, result.exit_code) == (
            call.tool_id,
            "bash",
            "hello\n",
            "",
            0,
        )
        assert result.kind is ev.ToolKind.COMMAND
        texts = [e.text for e in of_type(events, ev.AssistantText)]
        assert "".join(texts) == "I'll run echo.Done."

    def test_retries_then_giving_up(self) -> None:
        parsed, events = parse(load_capture("pi", "e1_http500").stdout_lines)
        lifecycle = [e.kind for e in of_type(events, ev.Lifecycle)]
        assert lifecycle.count("api_retry") == 3
        assert lifecycle.count("agent_started") == 4
        errors = of_type(events, ev.ProviderErrorReported)
        assert [e.fatal for e in errors] == [False, False, False, False, True]
        assert parsed.error == errors[-1].message

    def test_overflow_starts_a_compaction_the_run_never_finishes(self) -> None:
        parsed, events = parse(load_capture("pi", "e4_http400_too_long").stdout_lines)
        assert ev.Lifecycle("compaction_started", "overflow") in events
        assert parsed.error_kind is FailureKind.CONTEXT_OVERFLOW

    def test_missing_session_reads_stderr(self) -> None:
        capture = load_capture("pi", "d_resume_missing_uuid")
        parsed, events = parse(capture.stdout_lines, capture.stderr_lines)
        assert of_type(events, ev.Stderr) == [
            ev.Stderr("No session found matching '0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000'")
        ]
        assert parsed.usage is None


class TestRpcModeOutput:
    """What ``pi --mode rpc`` prints, fed to the ``--mode json`` parser PiProvider uses.

    docs/providers/pi.md: rpc mode is a long-lived process taking JSON commands on stdin,
    with no session header, and not what this provider runs. The recording holds three
    prompts on one process (the second aborted), then a ``get_state`` command.
    """

    def test_no_session_header_means_no_session(self) -> None:
        parsed, events = parse(load_capture("pi", RPC_MODE).stdout_lines)
        assert parsed.session_id is None
        assert of_type(events, ev.SessionStarted) == []

    def test_command_responses_are_unknown_frames(self) -> None:
        _, events = parse(load_capture("pi", RPC_MODE).stdout_lines)
        unknown = [e for e in of_type(events, ev.Lifecycle) if e.kind.startswith("unknown_frame")]
        assert [e.kind for e in unknown] == ["unknown_frame:response"] * 5
        assert of_type(events, ev.RawOutput) == []

    def test_the_prompts_run_together_as_one_turn(self) -> None:
        parsed, events = parse(load_capture("pi", RPC_MODE).stdout_lines)
        # Every prompt's answer streams as text; the last one is the turn's text.
        assert "".join(e.text for e in of_type(events, ev.AssistantText)) == (
            "Reply to first turn.This is a veReply after abort."
        )
        assert parsed.text == "Reply after abort."
        # The aborted prompt is a non-fatal error; the prompt after it succeeded.
        assert [(e.message, e.fatal) for e in of_type(events, ev.ProviderErrorReported)] == [
            ("This operation was aborted", False)
        ]
        assert (parsed.error, parsed.error_kind) == (None, None)
        assert parsed.usage is not None
        assert parsed.usage.tokens == TokenUsage(input_tokens=300, output_tokens=41, turns=1)


class TestSessionIds:
    def test_a_resume_by_partial_id_keeps_the_callers_id(self) -> None:
        parsed, events = parse(
            load_capture("pi", "c_resume_full_id").stdout_lines, resume="01a2275a"
        )
        assert parsed.session_id == "01a2275a"
        assert of_type(events, ev.SessionStarted) == [ev.SessionStarted("01a2275a")]
        assert ev.Lifecycle("session_resolved", FULL_ID) in events

    def test_a_resume_by_full_id_reports_it_unchanged(self) -> None:
        parsed, events = parse(load_capture("pi", "c_resume_full_id").stdout_lines, resume=FULL_ID)
        assert parsed.session_id == FULL_ID
        assert not [
            e for e in events if isinstance(e, ev.Lifecycle) and e.kind == "session_resolved"
        ]

    def test_a_resume_answered_by_another_session_reports_that_session(self) -> None:
        parsed, _ = parse(load_capture("pi", "c_resume_full_id").stdout_lines, resume="ffffffff")
        assert parsed.session_id == FULL_ID

    def test_short_ids_are_promoted_once_on_fresh_turns(self) -> None:
        lines = load_capture("pi", "a_plain_text").stdout_lines
        second_header = dump_frame(
            {"type": "session", "version": 3, "id": "02b3386b-0000-7000-8000-000000000000"}
        )
        parsed, events = parse([*lines[:1], second_header, *lines[1:]], short_session_ids=True)
        assert parsed.session_id == "01a2275a"
        assert of_type(events, ev.SessionStarted) == [ev.SessionStarted("01a2275a")]

    @pytest.mark.parametrize(
        ("given_id", "short"),
        [(FULL_ID, "01a2275a"), ("not-a-uuid", "not-a-uuid"), ("01a2275a", "01a2275a")],
    )
    def test_short_session_id(self, given_id: str, short: str) -> None:
        assert short_session_id(given_id) == short


class TestFailureRules:
    def test_a_retry_that_succeeds_is_a_success(self) -> None:
        failed = list(load_capture("pi", "e1b_http500_fast_retry_settings").stdout_lines)
        first_retry = next(
            i for i, line in enumerate(failed) if json.loads(line)["type"] == "auto_retry_start"
        )
        success = [
            line
            for line in load_capture("pi", "a_plain_text").stdout_lines
            if json.loads(line)["type"] != "session"
        ]
        retry_end = dump_frame({"type": "auto_retry_end", "success": True, "attempt": 1})
        parsed, events = parse([*failed[: first_retry + 1], *success, retry_end])
        assert parsed.error is None
        assert parsed.text == EXPECTED["a_plain_text"].text
        assert ev.Lifecycle("api_retry_succeeded", "attempt 1") in events

    def test_stream_without_agent_end_fails(self) -> None:
        lines = [
            line
            for line in load_capture("pi", "a_plain_text").stdout_lines
            if json.loads(line)["type"] != "agent_end"
        ]
        parsed, _ = parse(lines)
        assert parsed.error is not None
        assert "ended before agent_end" in parsed.error
        assert parsed.error_kind is FailureKind.OTHER
        assert parsed.text == EXPECTED["a_plain_text"].text

    def test_aborted_call_fails(self) -> None:
        aborted = assistant(
            [{"type": "text", "text": "This is a ve"}],
            stop="aborted",
            error="This operation was aborted",
        )
        parsed, _ = parse(turn(message_end(aborted)))
        assert parsed.error == "This operation was aborted"
        assert parsed.error_kind is FailureKind.OTHER

    def test_aborted_without_message_fails(self) -> None:
        parsed, events = parse(turn(message_end(assistant([], stop="aborted"))))
        assert parsed.error == "the model call ended with stopReason 'aborted'"
        assert of_type(events, ev.ProviderErrorReported)

    def test_error_message_alone_fails(self) -> None:
        parsed, _ = parse(turn(message_end(assistant([], error="429 rate limited"))))
        assert parsed.error_kind is FailureKind.TRANSIENT

    def test_only_the_last_assistant_message_decides(self) -> None:
        parsed, _ = parse(
            turn(
                message_end(assistant([], stop="error", error="500 boom")),
                message_end(assistant([{"type": "text", "text": "recovered"}])),
            )
        )
        assert parsed.error is None
        assert parsed.text == "recovered"

    @pytest.mark.parametrize(
        ("message", "kind"),
        [
            (
                '400 {"error":{"message":"prompt is too long: 250000 tokens > 200000 maximum"}}',
                FailureKind.CONTEXT_OVERFLOW,
            ),
            ("401 {}", FailureKind.AUTH),
            ("403 {}", FailureKind.AUTH),
            ("429 {}", FailureKind.TRANSIENT),
            ("529 {}", FailureKind.TRANSIENT),
            (
                '{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
                FailureKind.TRANSIENT,
            ),
            ("400 {}", FailureKind.OTHER),
            ("something odd", FailureKind.OTHER),
        ],
    )
    def test_error_message_kinds(self, message: str, kind: FailureKind) -> None:
        parsed, _ = parse(turn(message_end(assistant([], stop="error", error=message))))
        assert parsed.error_kind is kind


class TestFrames:
    def test_a_session_name_is_the_conversations_title(self) -> None:
        named = json.dumps({"type": "session_info_changed", "name": "  Fix the\n tests "})
        _, events = parse(turn(message_end(assistant([{"type": "text", "text": "ok"}])), named))
        assert of_type(events, ev.SessionTitle) == [
            ev.SessionTitle("Fix the tests", "session_info_changed")
        ]

    def test_a_usage_without_input_or_output_counts_is_unknown(self) -> None:
        counted = assistant([{"type": "text", "text": "a"}], usage={"input": 5, "output": 2})
        totals_only = assistant([{"type": "text", "text": "b"}], usage={"totalTokens": 70})
        result, events = parse(turn(message_end(counted), message_end(totals_only)))
        reports = [e.usage for e in of_type(events, ev.UsageReport)]
        assert [r.increment_known for r in reports] == [True, False]
        assert result.usage is not None
        assert not result.usage.increment_known
        assert result.usage.tokens == TokenUsage(input_tokens=5, output_tokens=2, turns=1)

    def test_usage_folds_cache_into_input_and_sums_cost(self) -> None:
        usage = {
            "input": 10,
            "output": 7,
            "cacheRead": 50,
            "cacheWrite": 5,
            "totalTokens": 72,
            "cost": {"total": 0.0125},
        }
        parsed, events = parse(
            turn(
                message_end(assistant([{"type": "text", "text": "a"}], usage=usage)),
                message_end(assistant([{"type": "text", "text": "b"}], usage=usage)),
            )
        )
        assert token_counts(parsed) == {
            "input_tokens": 130,
            "cache_read_input_tokens": 100,
            "cache_write_input_tokens": 10,
            "output_tokens": 14,
            "turns": 1,
        }
        assert parsed.cost_usd == pytest.approx(0.025)
        assert parsed.usage.cost_source is CostSource.REPORTED
        assert [r.cost_usd for r in of_type(events, ev.UsageReport)] == [0.0125, 0.0125]
        # The last call's prompt (input with cache folded in), not input plus output.
        assert parsed.context_tokens == 65

    def test_usage_without_cost_is_not_reported(self) -> None:
        parsed, _ = parse(turn(message_end(assistant([], usage={"input": 3, "output": 1}))))
        assert parsed.usage is not None
        assert parsed.cost_usd is None
        assert parsed.usage.cost_source is CostSource.NOT_REPORTED

    def test_unstreamed_message_is_emitted_whole(self) -> None:
        content = [{"type": "thinking", "thinking": "hmm"}, {"type": "text", "text": "answer"}]
        _, events = parse(turn(message_end(assistant(content))))
        assert of_type(events, ev.Reasoning) == [ev.Reasoning("hmm")]
        assert of_type(events, ev.AssistantText) == [ev.AssistantText("answer")]

    def test_streamed_thinking_is_not_repeated(self) -> None:
        update = {
            "type": "message_update",
            "assistantMessageEvent": {"type": "thinking_delta", "delta": "hm", "partial": {}},
        }
        start = {"type": "message_start", "message": assistant([])}
        content = [{"type": "thinking", "thinking": "hm"}, {"type": "text", "text": "x"}]
        _, events = parse(
            turn(dump_frame(start), dump_frame(update), message_end(assistant(content)))
        )
        assert of_type(events, ev.Reasoning) == [ev.Reasoning("hm")]

    def test_failed_tool_goes_to_stderr(self) -> None:
        start = {
            "type": "tool_execution_start",
            "toolCallId": "t",
            "toolName": "edit",
            "args": {"path": "/x"},
        }
        end = {
            "type": "tool_execution_end",
            "toolCallId": "t",
            "toolName": "edit",
            "result": {"content": [{"type": "text", "text": "Could not find the text"}]},
            "isError": True,
        }
        _, events = parse(turn(dump_frame(start), dump_frame(end)))
        (result,) = of_type(events, ev.ToolResult)
        assert (result.stdout, result.stderr, result.exit_code, result.kind) == (
            "",
            "Could not find the text",
            1,
            ev.ToolKind.FILE_CHANGE,
        )

    def test_failed_compaction_is_reported(self) -> None:
        end = {
            "type": "compaction_end",
            "reason": "overflow",
            "aborted": False,
            "willRetry": False,
            "errorMessage": "529 busy",
        }
        _, events = parse(turn(dump_frame(end)))
        assert ev.ProviderErrorReported("compaction failed: 529 busy") in events

    def test_unknown_frames_are_reported(self) -> None:
        parsed, events = parse(turn(dump_frame({"type": "brand_new"})))
        assert ev.Lifecycle("unknown_frame:brand_new", '{"type":"brand_new"}') in events
        assert parsed.error is None

    def test_updates_without_deltas_make_no_events_unless_cut_off(self) -> None:
        updates = [
            line
            for line in load_capture("pi", "b_tool_bash").stdout_lines
            if json.loads(line)["type"] == "message_update"
            and json.loads(line)["assistantMessageEvent"]["type"].startswith("toolcall")
        ]
        assert len(updates) == 6
        _, events = parse(turn(*updates))
        assert [e for e in events if not isinstance(e, (ev.Lifecycle, ev.SessionStarted))] == []
        _, events = parse(turn(updates[0][:300]))
        assert of_type(events, ev.RawOutput) == [ev.RawOutput(updates[0][:300])]

    def test_text_lines_become_raw_output(self) -> None:
        _, events = parse(turn("Warning: something\n"))
        assert of_type(events, ev.RawOutput) == [ev.RawOutput("Warning: something")]


JSON_VALUES = json_values()
FRAME_TYPES = st.sampled_from(
    sorted(
        {f["type"] for name in EXPECTED for f in load_frames("pi", name)}
        | {"compaction_end", "auto_retry_end"}
    )
)
KEYS = st.sampled_from(
    ["message", "assistantMessageEvent", "result", "id", "usage", "success", "toolCallId", "args"]
)


class TestAdversarialInput:
    @settings(max_examples=200)
    @given(
        st.lists(st.tuples(FRAME_TYPES, st.dictionaries(KEYS, JSON_VALUES, max_size=4)), max_size=6)
    )
    def test_known_frame_types_with_arbitrary_payloads(
        self, items: list[tuple[str, dict[str, Any]]]
    ) -> None:
        never_raises(PiStreamParser, [json.dumps({**body, "type": t}) for t, body in items])


class TestAFrameThatCannotBeRead:
    def test_a_tool_start_that_cannot_be_timed_costs_only_its_frame(self) -> None:
        ticks = iter([RuntimeError("clock unavailable"), 5.0])

        def clock() -> float:
            tick = next(ticks)
            if isinstance(tick, Exception):
                raise tick
            return tick

        start = dump_frame(
            {
                "type": "tool_execution_start",
                "toolCallId": "t1",
                "toolName": "bash",
                "args": {"command": "ls"},
            }
        )
        end = dump_frame(
            {
                "type": "tool_execution_end",
                "toolCallId": "t1",
                "toolName": "bash",
                "result": {"content": [{"type": "text", "text": "a.py"}]},
                "isError": False,
            }
        )
        text = message_end(assistant([{"type": "text", "text": "done"}]))
        parsed, events = parse(turn(start, end, text), monotonic=clock)
        assert parsed.text == "done"
        assert parsed.error is None
        assert ev.RawOutput(start.rstrip("\n")) in events
        malformed = [e for e in of_type(events, ev.Lifecycle) if e.kind == "malformed_frame"]
        assert [e.detail.split(":")[0] for e in malformed] == ["tool_execution_start"]
        assert of_type(events, ev.ToolCall) == []
        (result,) = of_type(events, ev.ToolResult)
        assert (result.tool_id, result.stdout) == ("t1", "a.py")
