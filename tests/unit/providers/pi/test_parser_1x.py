"""What Pi 1.x prints (recorded from 1.6.0 in tests/fixtures/pi/recorded-1.6.0/) parses to."""

from __future__ import annotations

import json
from typing import Any

import pytest

from agentshim.core.events import (
    AssistantText,
    Lifecycle,
    RawOutput,
    ToolResult,
    UsageReport,
)
from agentshim.core.failures import OUTPUT_TRUNCATED
from tests.unit.providers.fixtures import capture_names, dump_frame, load_capture

from ._captures import of_type, parse

FOLDER = "recorded-1.6.0"
CASES = capture_names("pi", FOLDER)


def _frames(case: str) -> list[dict[str, Any]]:
    lines = load_capture("pi", f"{FOLDER}/{case}").stdout_lines
    return [json.loads(line) for line in lines]


def _lines(case: str) -> tuple[str, ...]:
    return load_capture("pi", f"{FOLDER}/{case}").stdout_lines


def _lifecycle(events: list[Any], name: str) -> list[str]:
    return [e.detail for e in of_type(events, Lifecycle) if e.kind == name]


def test_the_recordings_are_of_pi_1_6() -> None:
    assert len(CASES) >= 12
    meta = load_capture("pi", f"{FOLDER}/rec_plain_answer").meta
    assert meta["cli"] == {
        "package": "@earendil-works/pi-coding-agent",
        "version": "1.6.0",
        "version_output": "1.6.0",
    }


@pytest.mark.parametrize("case", CASES)
def test_every_frame_of_every_recording_is_known(case: str) -> None:
    _, events = parse(_lines(case))
    assert [e for e in of_type(events, Lifecycle) if e.kind.startswith("unknown_frame")] == []
    assert of_type(events, RawOutput) == []


@pytest.mark.parametrize("case", [c for c in CASES if c != "rec_resume_missing"])
def test_every_run_ends_settled(case: str) -> None:
    assert _frames(case)[-1] == {"type": "agent_settled", "aborted": False}
    _, events = parse(_lines(case))
    assert events[-1] == Lifecycle("agent_settled", "")


def test_an_aborted_settle_says_so() -> None:
    _, events = parse([dump_frame({"type": "agent_settled", "aborted": True})])
    assert Lifecycle("agent_settled", "aborted") in events


def test_a_retried_call_appends_a_context_edit_entry() -> None:
    _, events = parse(_lines("rec_http_500"))
    assert _lifecycle(events, "entry_appended") == ["context_edit", "context_edit"]
    assert len(_lifecycle(events, "api_retry")) == 2


def test_a_failed_commands_exit_code_comes_from_its_structured_content() -> None:
    frames = _frames("rec_failed_tool_call")
    end = next(f for f in frames if f["type"] == "tool_execution_end")
    assert end["result"]["structuredContent"]["exit_code"] == 2
    assert end["durationMs"] == 9
    # Without the "Command exited with code N" line, the structured code still counts.
    end["result"]["content"] = [{"type": "text", "text": "ls: cannot access it"}]
    _, events = parse([dump_frame(end)])
    [result] = of_type(events, ToolResult)
    assert (result.exit_code, result.stderr, result.duration_s) == (
        2,
        "ls: cannot access it",
        0.009,
    )


def test_message_updates_with_usage_first_keep_the_text_and_skip_the_rest() -> None:
    parsed, events = parse(_lines("rec_long_answer"))
    streamed = [e.text for e in of_type(events, AssistantText) if e.delta]
    assert len(streamed) == 180
    assert "".join(streamed) == parsed.text
    # A block start is dropped from its first bytes: this one is not even valid JSON.
    update = _lines("rec_long_answer")[8]
    assert '"assistantMessageEvent":{"type":"text_start"' in update
    cut = update.rstrip("\n").removesuffix("}}") + ',"x":NaN-}}'
    _, skipped = parse([cut])
    assert skipped == []


def test_the_one_hour_cache_writes_are_a_part_of_the_cache_writes() -> None:
    final = next(
        f
        for f in _frames("rec_plain_answer")
        if f["type"] == "message_end" and f["message"]["role"] == "assistant"
    )
    assert final["message"]["usage"]["cacheWrite1h"] == 0
    final["message"]["usage"].update(cacheWrite=300, cacheWrite1h=200, reasoning=10)
    parsed, events = parse([dump_frame(final)])
    [report] = of_type(events, UsageReport)
    tokens = report.usage.tokens
    assert tokens.cache_write_input_tokens == 300
    assert tokens.cache_write_1h_input_tokens == 200
    assert tokens.reasoning_output_tokens == 10
    assert tokens.input_tokens == 200 + 1000 + 300
    assert parsed.usage is not None


@pytest.mark.parametrize(
    ("frame", "name", "detail"),
    [
        ({"type": "thinking_level_changed", "level": "max"}, "thinking_level_changed", "max"),
        (
            {
                "type": "summarization_retry_scheduled",
                "attempt": 1,
                "maxAttempts": 3,
                "delayMs": 2000,
                "errorMessage": "terminated",
            },
            "summarization_retry",
            "attempt 1 of 3 in 2000 ms: terminated",
        ),
        (
            {
                "type": "summarization_retry_attempt_start",
                "source": "compaction",
                "reason": "threshold",
            },
            "summarization_retry_started",
            "compaction (threshold)",
        ),
        ({"type": "summarization_retry_finished"}, "summarization_retry_finished", ""),
        (
            {
                "type": "extension_error",
                "extensionPath": "/x/ext.ts",
                "event": "tool_call",
                "error": "boom",
            },
            "extension_error",
            "/x/ext.ts (tool_call): boom",
        ),
    ],
)
def test_documented_frames_the_recordings_do_not_show(
    frame: dict[str, Any], name: str, detail: str
) -> None:
    _, events = parse([dump_frame(frame)])
    assert events == [Lifecycle(name, detail)]


def test_a_direct_bash_commands_output_is_no_event() -> None:
    _, events = parse([dump_frame({"type": "bash_execution_update", "id": "r", "delta": "x"})])
    assert events == []


def _final_with_stop(stop: str, raw: str) -> list[str]:
    frames = _frames("rec_plain_answer")
    for frame in frames:
        if frame["type"] == "message_end" and frame["message"]["role"] == "assistant":
            frame["message"]["stopReason"] = stop
            frame["message"]["rawStopReason"] = raw
    return [dump_frame(frame) for frame in frames]


def test_a_truncated_answer_succeeds_with_its_text_and_says_it_was_cut_off() -> None:
    parsed, events = parse(_final_with_stop("length", "max_tokens"))
    assert parsed.error is None
    assert parsed.text == "Hello from the scripted model. The fruit is PAPAYA."
    [note] = parsed.notes
    assert "output-token limit" in note
    assert "max_tokens" in note
    assert _lifecycle(events, OUTPUT_TRUNCATED) == [note]


def test_a_deferred_call_is_noted_not_failed() -> None:
    parsed, events = parse(_final_with_stop("deferred", "deferred"))
    assert parsed.error is None
    assert len(parsed.notes) == 1
    assert len(_lifecycle(events, "model_call_deferred")) == 1
