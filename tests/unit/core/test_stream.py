from __future__ import annotations

import itertools
import json
import pickle
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.core.errors import AgentShimError, LineTooLongError
from agentshim.core.stream import (
    FinishedTool,
    LineFramer,
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


def _frame(chunks: list[bytes], max_line_bytes: int = 1 << 20) -> tuple[list[str], int, str | None]:
    """Feed chunks; return every line (including those carried by errors), drops, final line."""
    framer = LineFramer(max_line_bytes)
    lines: list[str] = []
    dropped = 0
    for chunk in chunks:
        try:
            lines.extend(framer.feed(chunk))
        except LineTooLongError as exc:
            lines.extend(exc.lines)
            dropped += exc.dropped
    try:
        final = framer.flush()
    except LineTooLongError as exc:
        dropped += exc.dropped
        final = None
    return lines, dropped, final


def _split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(data) + 1) for c in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds)]


pieces = st.sampled_from(
    [b"\n", b"\r", b"\r\n", b"a", b"bc", b"{}", "é".encode(), "😀".encode(), b"\xff", b"\xe2\x82"]
)
stream_bytes = st.lists(pieces, max_size=40).map(b"".join) | st.binary(max_size=200)


class TestLineFramer:
    def test_whole_lines_keep_their_newline(self) -> None:
        framer = LineFramer()
        assert framer.feed(b"one\ntwo\n") == ["one\n", "two\n"]
        assert framer.flush() is None

    def test_line_straddling_chunks_is_kept(self) -> None:
        framer = LineFramer()
        assert framer.feed(b'{"type": "ass') == []
        assert framer.feed(b'istant"}\n{"ne') == ['{"type": "assistant"}\n']
        assert framer.feed(b'xt": 1}\n') == ['{"next": 1}\n']

    def test_crlf_becomes_lf(self) -> None:
        framer = LineFramer()
        assert framer.feed(b"a\r\nb\r") == ["a\n"]
        assert framer.feed(b"\nc\rd\n") == ["b\n", "c\rd\n"]

    def test_invalid_utf8_becomes_replacement_character(self) -> None:
        assert LineFramer().feed(b"ok \xff\xfe end\n") == ["ok \ufffd\ufffd end\n"]

    def test_character_split_across_chunks_decodes_intact(self) -> None:
        snowman = "☃".encode()
        framer = LineFramer()
        assert framer.feed(b"x" + snowman[:1]) == []
        assert framer.feed(snowman[1:2]) == []
        assert framer.feed(snowman[2:] + b"\n") == ["x☃\n"]

    def test_flush_returns_unterminated_final_line(self) -> None:
        framer = LineFramer()
        assert framer.feed(b"done\npartial") == ["done\n"]
        assert framer.flush() == "partial"
        assert framer.flush() is None

    def test_flush_drops_final_carriage_return(self) -> None:
        framer = LineFramer()
        framer.feed(b"last\r")
        assert framer.flush() == "last"
        framer.feed(b"\r")
        assert framer.flush() is None

    def test_empty_lines_are_lines(self) -> None:
        assert LineFramer().feed(b"\n\r\n\n") == ["\n", "\n", "\n"]

    def test_framer_is_reusable_after_flush(self) -> None:
        framer = LineFramer()
        framer.feed(b"first")
        assert framer.flush() == "first"
        assert framer.feed(b"second\n") == ["second\n"]

    def test_accepts_bytearray_and_memoryview(self) -> None:
        framer = LineFramer()
        assert framer.feed(bytearray(b"a\n")) == ["a\n"]
        assert framer.feed(memoryview(b"b\n")) == ["b\n"]

    def test_rejects_nonpositive_limit(self) -> None:
        with pytest.raises(ValueError, match="max_line_bytes"):
            LineFramer(0)


class TestLineLimit:
    def test_line_at_the_limit_passes(self) -> None:
        framer = LineFramer(max_line_bytes=4)
        assert framer.feed(b"abcd\nabcd\r\n") == ["abcd\n", "abcd\n"]

    def test_long_line_in_one_chunk_is_dropped_and_others_kept(self) -> None:
        framer = LineFramer(max_line_bytes=4)
        with pytest.raises(LineTooLongError) as caught:
            framer.feed(b"ok\ntoo long\nfine\n")
        assert caught.value.lines == ["ok\n", "fine\n"]
        assert caught.value.dropped == 1
        assert caught.value.limit == 4
        assert framer.feed(b"next\n") == ["next\n"]

    def test_long_line_across_chunks_raises_once_and_is_skipped(self) -> None:
        framer = LineFramer(max_line_bytes=8)
        assert framer.feed(b"start\n0123") == ["start\n"]
        with pytest.raises(LineTooLongError) as caught:
            framer.feed(b"456789")
        assert caught.value.lines == []
        # The rest of the long line is discarded without another error.
        assert framer.feed(b"x" * 10_000) == []
        assert framer.feed(b"yyy\nafter\n") == ["after\n"]

    def test_unterminated_final_line_at_the_limit_is_returned(self) -> None:
        framer = LineFramer(max_line_bytes=3)
        framer.feed(b"abc")
        framer.feed(b"\r")  # may still be the first half of CRLF
        assert framer.flush() == "abc"

    def test_unterminated_long_final_line_is_reported_by_feed(self) -> None:
        framer = LineFramer(max_line_bytes=3)
        with pytest.raises(LineTooLongError):
            framer.feed(b"ok\nabcd")
        assert framer.flush() is None

    def test_carriage_return_before_newline_does_not_count(self) -> None:
        framer = LineFramer(max_line_bytes=3)
        assert framer.feed(b"abc\r") == []
        assert framer.feed(b"\n") == ["abc\n"]

    def test_error_is_typed_and_pickles(self) -> None:
        error = LineTooLongError(10, 2, ["a\n"])
        assert isinstance(error, AgentShimError)
        assert "10 bytes" in str(error)
        copy = pickle.loads(pickle.dumps(error))
        assert (copy.limit, copy.dropped, copy.lines, str(copy)) == (10, 2, ["a\n"], str(error))


class TestFramingProperties:
    @given(stream_bytes, st.lists(st.integers(min_value=0), max_size=12))
    def test_every_chunking_gives_the_same_lines(self, data: bytes, cuts: list[int]) -> None:
        assert _frame(_split(data, cuts)) == _frame([data])

    @given(stream_bytes)
    def test_byte_at_a_time_equals_one_chunk(self, data: bytes) -> None:
        assert _frame([data[i : i + 1] for i in range(len(data))]) == _frame([data])

    @given(stream_bytes, st.lists(st.integers(min_value=0), max_size=12))
    def test_lines_match_decoding_the_whole_stream(self, data: bytes, cuts: list[int]) -> None:
        text = data.decode("utf-8", "replace")
        *complete, tail = text.split("\n")
        expected = [line.removesuffix("\r") + "\n" for line in complete]
        lines, dropped, final = _frame(_split(data, cuts))
        assert lines == expected
        assert dropped == 0
        assert final == (tail.removesuffix("\r") or None)

    @settings(max_examples=200)
    @given(
        stream_bytes,
        st.lists(st.integers(min_value=0), max_size=12),
        st.integers(min_value=1, max_value=6),
    )
    def test_limit_is_independent_of_chunking(
        self, data: bytes, cuts: list[int], limit: int
    ) -> None:
        chunked = _frame(_split(data, cuts), limit)
        assert chunked == _frame([data], limit)
        *complete, tail = [raw.removesuffix(b"\r") for raw in data.split(b"\n")]
        kept = [raw.decode("utf-8", "replace") + "\n" for raw in complete if len(raw) <= limit]
        too_long = [raw for raw in [*complete, tail] if len(raw) > limit]
        assert chunked[0] == kept
        assert chunked[1] == len(too_long)
        lines, _, final = chunked
        for line in [*lines, final or ""]:
            raw = line.removesuffix("\n").encode("utf-8")
            # Each U+FFFD stands for at least one input byte; count it as one.
            assert len(raw.replace("\ufffd".encode(), b"?")) <= limit


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
