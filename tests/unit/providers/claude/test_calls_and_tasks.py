"""Per-call usage reports, the reported context window and background tasks (Claude Code)."""

from __future__ import annotations

import json
from typing import Any

from agentshim.core.events import (
    AgentEvent,
    BackgroundTask,
    BackgroundTasksChanged,
    UsageReport,
    UsageScope,
)
from agentshim.core.turn import ParsedTurn
from agentshim.providers.claude import ClaudeStreamParser
from tests.unit.providers.fixtures import load_capture

SESSION = "3f1c2a9e-0000-4000-8000-000000000001"


def _parse(*frames: dict[str, Any]) -> tuple[ParsedTurn, list[AgentEvent]]:
    events: list[AgentEvent] = []
    parser = ClaudeStreamParser(events.append)
    for frame in frames:
        parser.feed_stdout(json.dumps(frame) + "\n")
    return parser.finish(), events


def _assistant(message_id: str, block: dict[str, Any], usage: dict[str, int]) -> dict[str, Any]:
    message = {"id": message_id, "model": "claude-opus-5-5", "content": [block], "usage": usage}
    return {"type": "assistant", "session_id": SESSION, "message": message}


def _tasks(*tasks: dict[str, Any]) -> dict[str, Any]:
    return {
        "type": "system",
        "subtype": "background_tasks_changed",
        "tasks": list(tasks),
        "uuid": "u-1",
        "session_id": SESSION,
    }


RESULT = {
    "type": "result",
    "subtype": "success",
    "is_error": False,
    "result": "ok",
    "session_id": SESSION,
    "duration_ms": 4200,
    "num_turns": 2,
    "total_cost_usd": 0.5,
    "usage": {"input_tokens": 30, "output_tokens": 12},
    "modelUsage": {"claude-opus-5-5": {"inputTokens": 30, "contextWindow": 1000000}},
}
USAGE = {"input_tokens": 10, "cache_read_input_tokens": 5, "output_tokens": 4}


class TestCallReports:
    def test_one_call_report_per_message_not_per_content_block(self) -> None:
        _, events = _parse(
            _assistant("msg_1", {"type": "thinking", "thinking": "hm"}, USAGE),
            _assistant("msg_1", {"type": "text", "text": "a"}, USAGE),
            _assistant("msg_2", {"type": "text", "text": "b"}, USAGE),
        )
        calls = [e for e in events if isinstance(e, UsageReport)]
        assert [c.scope for c in calls] == [UsageScope.CALL, UsageScope.CALL]
        tokens = calls[0].usage.tokens
        assert (tokens.input_tokens, tokens.cache_read_input_tokens) == (15, 5)
        assert tokens.output_tokens == 4
        assert calls[0].cost_usd is None

    def test_a_message_without_tokens_reports_no_call(self) -> None:
        _, events = _parse(_assistant("m", {"type": "text", "text": "a"}, {"input_tokens": 0}))
        assert not [e for e in events if isinstance(e, UsageReport)]

    def test_the_result_is_the_turn_report_with_the_cli_s_duration(self) -> None:
        _, events = _parse(_assistant("m", {"type": "text", "text": "ok"}, USAGE), RESULT)
        turn = [e for e in events if isinstance(e, UsageReport)][-1]
        assert turn.scope is UsageScope.TURN
        assert (turn.duration_ms, turn.cost_usd) == (4200, 0.5)

    def test_every_recorded_message_with_usage_reports_one_call(self) -> None:
        capture = load_capture("claude", "b_tool_bash")
        ids = {
            json.loads(line)["message"]["id"]
            for line in capture.stdout_lines
            if line.startswith('{"type":"assistant"')
        }
        events: list[AgentEvent] = []
        parser = ClaudeStreamParser(events.append)
        for line in capture.stdout_lines:
            parser.feed_stdout(line)
        calls = [e for e in events if isinstance(e, UsageReport) and e.scope is UsageScope.CALL]
        assert len(calls) == len(ids) == 2


class TestContextWindow:
    def test_the_window_claude_code_reports_is_the_turn_s(self) -> None:
        turn, _ = _parse(_assistant("m", {"type": "text", "text": "ok"}, USAGE), RESULT)
        assert turn.context_window == 1_000_000

    def test_a_result_without_one_has_none(self) -> None:
        result = {k: v for k, v in RESULT.items() if k != "modelUsage"}
        turn, _ = _parse(result)
        assert turn.context_window is None


class TestBackgroundTasks:
    def test_the_frame_becomes_an_event_with_the_whole_set(self) -> None:
        shell = {"task_id": "b1", "task_type": "local_bash", "description": "npm run dev"}
        turn, events = _parse(_tasks(shell), RESULT)
        changed = [e for e in events if isinstance(e, BackgroundTasksChanged)]
        assert changed == [
            BackgroundTasksChanged((BackgroundTask("b1", "local_bash", "npm run dev"),))
        ]
        assert turn.background_tasks == (BackgroundTask("b1", "local_bash", "npm run dev"),)

    def test_the_last_set_is_what_the_turn_leaves_running(self) -> None:
        shell = {"task_id": "b1", "task_type": "local_bash", "description": "x"}
        turn, events = _parse(_tasks(shell), _tasks(), RESULT)
        assert [len(e.tasks) for e in events if isinstance(e, BackgroundTasksChanged)] == [1, 0]
        assert turn.background_tasks == ()

    def test_an_entry_without_an_id_is_left_out(self) -> None:
        turn, _ = _parse(_tasks({"task_type": "local_bash"}, "junk", {"task_id": "a"}), RESULT)
        assert turn.background_tasks == (BackgroundTask("a"),)
