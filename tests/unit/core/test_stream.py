from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.stream import (
    FinishedTool,
    ToolTracker,
    parse_json_object,
    printed_exit_code,
)

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=10)
json_scalars = json_scalars | st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=6), children, max_size=4)
    ),
    max_leaves=20,
)
json_objects = st.dictionaries(st.text(max_size=6), json_values, max_size=5)


class TestParseJsonObject:
    def test_object(self) -> None:
        assert parse_json_object('{"type": "result", "n": 1}') == {"type": "result", "n": 1}

    def test_surrounding_whitespace_and_newline(self) -> None:
        assert parse_json_object('  \t{"a": [1, 2]}\r\n') == {"a": [1, 2]}

    def test_bytes(self) -> None:
        assert parse_json_object(b'{"a": "\xc3\xa9"}\n') == {"a": "é"}

    @pytest.mark.parametrize(
        "line",
        [
            "",
            "   \n",
            "[1, 2]",
            '"text"',
            "42",
            "null",
            "plain progress text",
            '{"truncated": ',
            '{"a": 1} trailing',
            '{"a": NaN}',
            '{"a": Infinity}',
            '{"a": -Infinity}',
            "{" * 100_000,
            '{"a":' * 50_000 + "1" + "}" * 50_000,
        ],
    )
    def test_anything_else_is_none(self, line: str) -> None:
        assert parse_json_object(line) is None

    def test_invalid_utf8_bytes_are_none(self) -> None:
        assert parse_json_object(b'{"a": "\xff"}') is None

    @pytest.mark.parametrize("value", [12, None, 1.5, ["{}"], {"a": 1}])
    def test_a_value_that_is_not_text_is_none(self, value: object) -> None:
        assert parse_json_object(value) is None  # type: ignore[arg-type]

    def test_a_bytearray_is_decoded_like_bytes(self) -> None:
        assert parse_json_object(bytearray(b'{"a": 1}\n')) == {"a": 1}

    @given(json_objects)
    def test_round_trips_any_object(self, obj: dict[str, Any]) -> None:
        assert parse_json_object(json.dumps(obj)) == obj
        assert parse_json_object(json.dumps(obj, indent=2) + "\n") == obj

    @given(json_values.filter(lambda v: not isinstance(v, dict)))
    def test_other_json_values_are_none(self, value: object) -> None:
        assert parse_json_object(json.dumps(value)) is None

    @given(st.text() | st.binary())
    def test_never_raises(self, line: str | bytes) -> None:
        result = parse_json_object(line)
        assert result is None or isinstance(result, dict)


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class TestToolTracker:
    def test_pairs_result_with_call(self) -> None:
        clock = FakeClock()
        tracker = ToolTracker(clock)
        tracker.start("t1", "Bash", {"command": "ls"})
        clock.now += 2.5
        finished = tracker.finish("t1")
        assert finished == FinishedTool("Bash", {"command": "ls"}, 2.5)
        assert type(finished) is FinishedTool
        assert (finished.name, finished.duration_s) == ("Bash", 2.5)
        name, args, duration = finished
        assert (name, args, duration) == ("Bash", {"command": "ls"}, 2.5)

    def test_unknown_or_repeated_result_is_none(self) -> None:
        tracker = ToolTracker(FakeClock())
        assert tracker.finish("never-started") is None
        tracker.start("t1", "Read")
        assert tracker.finish("t1") is not None
        assert tracker.finish("t1") is None

    def test_interleaved_calls(self) -> None:
        clock = FakeClock()
        tracker = ToolTracker(clock)
        tracker.start("a", "Read", {"path": "x"})
        clock.now += 1
        tracker.start("b", "Grep", "pattern")
        clock.now += 1
        assert tracker.pending() == ("a", "b")
        assert tracker.finish("b") == FinishedTool("Grep", "pattern", 1.0)
        assert tracker.pending() == ("a",)
        assert tracker.finish("a") == FinishedTool("Read", {"path": "x"}, 2.0)
        assert tracker.pending() == ()
        assert len(tracker) == 0

    def test_restart_updates_call_but_keeps_start_time(self) -> None:
        clock = FakeClock()
        tracker = ToolTracker(clock)
        tracker.start("t", "shell", None)
        clock.now += 3
        tracker.start("t", "shell", {"command": "make"})
        clock.now += 1
        assert tracker.finish("t") == FinishedTool("shell", {"command": "make"}, 4.0)

    def test_name_of_and_membership(self) -> None:
        tracker = ToolTracker(FakeClock())
        tracker.start("t", "Edit")
        assert tracker.name_of("t") == "Edit"
        assert "t" in tracker
        assert tracker.name_of("other") is None
        tracker.finish("t")
        assert "t" not in tracker
        assert tracker.name_of("t") is None

    def test_duration_never_negative(self) -> None:
        clock = FakeClock()
        tracker = ToolTracker(clock)
        tracker.start("t", "Bash")
        clock.now -= 10
        finished = tracker.finish("t")
        assert finished is not None
        assert finished.duration_s == 0.0

    def test_default_clock_measures_real_time(self) -> None:
        tracker = ToolTracker()
        tracker.start("t", "Bash")
        finished = tracker.finish("t")
        assert finished is not None
        assert 0.0 <= finished.duration_s < 5.0


class TestPrintedExitCode:
    PATTERN = re.compile(r"exited with code (-?\d{1,9})")

    @pytest.mark.parametrize(
        ("text", "code"),
        [
            ("ls: nope\nexited with code 2", 2),
            ("exited with code -9", -9),
            ("exited with code 0", 1),
            ("no status printed", 1),
            ("", 1),
        ],
    )
    def test_the_printed_status_or_one(self, text: str, code: int) -> None:
        assert printed_exit_code(self.PATTERN, text) == code


def test_tool_kind_in_reads_the_table_then_the_mcp_prefix() -> None:
    from agentshim.core.events import ToolKind
    from agentshim.core.stream import tool_kind_in

    kinds = {"bash": ToolKind.COMMAND, "mcp_own": ToolKind.FILE_READ}
    assert tool_kind_in(kinds, "bash") is ToolKind.COMMAND
    assert tool_kind_in(kinds, "mcp_own", mcp_prefix="mcp_") is ToolKind.FILE_READ
    assert tool_kind_in(kinds, "mcp_srv_tool", mcp_prefix="mcp_") is ToolKind.MCP
    assert tool_kind_in(kinds, "mcp_srv_tool") is ToolKind.OTHER
    assert tool_kind_in(kinds, "unknown", mcp_prefix="mcp_") is ToolKind.OTHER


def test_todo_plan_reads_each_todo_by_the_first_key_with_text() -> None:
    from agentshim.core.events import Plan, PlanItem
    from agentshim.core.stream import todo_plan

    args = {
        "todos": [
            {"content": "", "activeForm": "Writing", "status": "in_progress"},
            {"content": "Test", "status": ""},
            {"status": "completed"},
            "not a todo",
        ]
    }
    assert todo_plan(args, "t1", "content", "activeForm") == Plan(
        (PlanItem("Writing", "in_progress"), PlanItem("Test", "pending")), "t1"
    )
    assert todo_plan({"todos": "x"}, None, "content") is None
    assert todo_plan(["todos"], None, "content") is None
