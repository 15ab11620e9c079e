"""Stored events, byte-chunk line splitting and source-line pairing (the agent-stream seed)."""

from __future__ import annotations

import json
import typing
from collections.abc import Callable
from types import MappingProxyType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.errors import InvalidRequestError
from agentshim.core.events import (
    AgentContent,
    AgentEvent,
    ApprovalAnswered,
    ApprovalRequested,
    AssistantText,
    BackgroundTask,
    BackgroundTasksChanged,
    CommandsAvailable,
    ConfigOption,
    ConfigOptionsChanged,
    FileDiff,
    HistoryReplayed,
    Lifecycle,
    ModeChanged,
    Plan,
    PlanItem,
    ProviderErrorReported,
    RawOutput,
    Reasoning,
    RunFinished,
    RunStarted,
    SessionStarted,
    SessionTitle,
    Stderr,
    ToolCall,
    ToolCallUpdated,
    ToolKind,
    ToolResult,
    TurnInterrupted,
    UsageReport,
    UsageScope,
)
from agentshim.core.turn import ParsedTurn
from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage
from agentshim.providers.catalog import ProviderCatalog
from agentshim.providers.claude import scripted_lines
from agentshim.providers.claude.provider import ClaudeProvider
from agentshim.providers.static_plugin import StaticProviderPlugin
from agentshim.stored import (
    EVENT_FORMAT_VERSION,
    SourcedEvent,
    event_from_json,
    event_to_json,
    parse_lines,
    split_complete_lines,
)
from agentshim.testing import ScriptedTurn
from tests.unit.providers.fixtures import load_capture
from tests.unit.providers.sample_plugin import PROFILE

text = st.text(max_size=30)
optional_text = st.none() | text
finite = st.floats(allow_nan=False, allow_infinity=False, width=64)
json_scalar = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | finite | text
json_value = st.recursive(
    json_scalar,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(text, inner, max_size=3),
    max_leaves=8,
)
counts = st.integers(0, 10**9)


@st.composite
def token_usage(draw: st.DrawFn) -> TokenUsage:
    read, write, uncached = draw(counts), draw(counts), draw(counts)
    reasoning, extra = draw(counts), draw(counts)
    return TokenUsage(
        input_tokens=read + write + uncached,
        cache_read_input_tokens=read,
        cache_write_input_tokens=write,
        cache_write_1h_input_tokens=draw(st.integers(0, write)),
        output_tokens=reasoning + extra,
        reasoning_output_tokens=reasoning,
        turns=draw(st.integers(0, 5)),
    )


provider_usage = st.builds(
    ProviderUsage,
    tokens=token_usage(),
    total_cost_usd=st.none() | finite,
    provider=text,
    raw=st.dictionaries(text, json_value, max_size=3).map(MappingProxyType),
    increment_known=st.booleans(),
    cost_source=st.sampled_from(CostSource),
    model=optional_text,
)

EVENTS: dict[type[Any], st.SearchStrategy[Any]] = {
    RunStarted: st.builds(RunStarted, st.lists(text, max_size=4).map(tuple)),
    RunFinished: st.builds(RunFinished, st.none() | st.integers(-255, 255)),
    SessionStarted: st.builds(SessionStarted, text),
    SessionTitle: st.builds(SessionTitle, text, text),
    AssistantText: st.builds(AssistantText, text, st.booleans()),
    Reasoning: st.builds(Reasoning, text),
    ToolCall: st.builds(
        ToolCall,
        optional_text,
        text,
        st.none() | text | st.dictionaries(text, json_value, max_size=3),
        st.sampled_from(ToolKind),
    ),
    ToolResult: st.builds(
        ToolResult,
        optional_text,
        text,
        text,
        text,
        st.none() | st.integers(-255, 255),
        st.none() | finite,
        st.sampled_from(ToolKind),
    ),
    Plan: st.builds(
        Plan, st.lists(st.builds(PlanItem, text, text), max_size=3).map(tuple), optional_text
    ),
    UsageReport: st.builds(
        UsageReport,
        provider_usage,
        st.none() | finite,
        st.sampled_from(UsageScope),
        st.none() | counts,
    ),
    Lifecycle: st.builds(Lifecycle, text, text),
    Stderr: st.builds(Stderr, text),
    RawOutput: st.builds(RawOutput, text),
    ProviderErrorReported: st.builds(ProviderErrorReported, text, st.booleans()),
    TurnInterrupted: st.builds(TurnInterrupted, text),
    ApprovalRequested: st.builds(
        ApprovalRequested,
        text,
        st.dictionaries(text, json_value, max_size=3),
        st.sampled_from(ToolKind),
        optional_text,
        text,
    ),
    ApprovalAnswered: st.builds(
        ApprovalAnswered,
        optional_text,
        st.booleans(),
        text,
        text,
        st.none() | st.dictionaries(text, json_value, max_size=3),
    ),
    BackgroundTasksChanged: st.builds(
        BackgroundTasksChanged,
        st.lists(st.builds(BackgroundTask, text, text, text), max_size=3).map(tuple),
    ),
    ToolCallUpdated: st.builds(
        ToolCallUpdated,
        optional_text,
        text,
        text,
        st.none() | text | st.dictionaries(text, json_value, max_size=3),
        st.sampled_from(ToolKind),
        st.lists(text, max_size=3).map(tuple),
        st.lists(st.builds(FileDiff, text, optional_text, text), max_size=2).map(tuple),
    ),
    AgentContent: st.builds(AgentContent, text, text, text, text, st.booleans()),
    ModeChanged: st.builds(ModeChanged, text),
    ConfigOptionsChanged: st.builds(
        ConfigOptionsChanged,
        st.lists(
            st.builds(ConfigOption, text, text, text, text, st.lists(text, max_size=3).map(tuple)),
            max_size=3,
        ).map(tuple),
    ),
    CommandsAvailable: st.builds(CommandsAvailable, st.lists(text, max_size=3).map(tuple)),
    HistoryReplayed: st.builds(HistoryReplayed, text, text),
}


def test_every_event_type_has_a_strategy() -> None:
    assert set(typing.get_args(AgentEvent)) == set(EVENTS)


@given(st.one_of(*EVENTS.values()))
def test_every_event_round_trips_through_json_text(event: AgentEvent) -> None:
    stored = json.dumps(event_to_json(event), allow_nan=False)
    back = event_from_json(json.loads(stored))
    assert back == event
    assert type(back) is type(event)


@given(st.one_of(*EVENTS.values()))
def test_every_stored_object_names_its_version_and_a_vocabulary_type(event: AgentEvent) -> None:
    stored = event_to_json(event)
    assert stored["v"] == EVENT_FORMAT_VERSION
    assert isinstance(stored["type"], str)
    assert not isinstance(event_from_json(stored), RawOutput) or isinstance(event, RawOutput)


@given(json_value)
def test_anything_decodes_without_raising(value: object) -> None:
    assert event_from_json(value) is not None


class TestUnknownIsKeptRaw:
    @pytest.mark.parametrize(
        "value",
        [
            {"v": 1, "type": "something.new", "x": 1},
            {"v": 99, "type": "message", "text": "from the future"},
            {"type": "message", "text": 3},
            {"type": "tool.call", "tool": "Bash", "args": [1, 2]},
            {"type": "usage", "usage": "lots"},
            {"type": "message", "role": "user", "text": "hi"},
            [1, 2],
            "text",
            None,
        ],
    )
    def test_it_comes_back_as_raw_output_of_its_json(self, value: object) -> None:
        event = event_from_json(value)
        assert isinstance(event, RawOutput)
        assert json.loads(event.text) == value

    def test_a_missing_version_reads_as_the_current_one(self) -> None:
        assert event_from_json({"type": "thinking", "text": "hm"}) == Reasoning("hm")


class TestSplitCompleteLines:
    def test_only_whole_lines_are_consumed(self) -> None:
        lines, consumed = split_complete_lines(b'{"a":1}\n{"b":2}\r\n{"c":')
        assert lines == ['{"a":1}', '{"b":2}']
        assert consumed == len(b'{"a":1}\n{"b":2}\r\n')

    def test_a_chunk_without_a_newline_consumes_nothing(self) -> None:
        assert split_complete_lines(b'{"partial":') == ([], 0)
        assert split_complete_lines(b"") == ([], 0)

    def test_a_3kb_line_straddling_two_reads_comes_out_whole(self) -> None:
        line = json.dumps({"type": "thinking", "text": "x" * 3000}).encode() + b"\n"
        log = b"first\n" + line + b"last\n"
        offset = 0
        seen: list[str] = []
        for read_end in (len(b"first\n") + 1500, len(log)):
            lines, consumed = split_complete_lines(log[offset:read_end])
            seen += lines
            offset += consumed
        assert seen == ["first", line.decode().rstrip("\n"), "last"]
        assert offset == len(log)

    def test_bytes_that_are_not_utf8_do_not_lose_the_line(self) -> None:
        lines, consumed = split_complete_lines(b"caf\xe9\nok\n")
        assert lines == ["caf\ufffd", "ok"]
        assert consumed == 8

    @given(
        st.lists(
            st.text(
                alphabet=st.characters(blacklist_characters="\n\r", blacklist_categories=("Cs",))
            ),
            max_size=6,
        )
    )
    def test_any_split_of_a_log_gives_the_same_lines(self, parts: list[str]) -> None:
        log = "".join(p + "\n" for p in parts).encode()
        for cut in range(len(log) + 1):
            first, used = split_complete_lines(log[:cut])
            second, _ = split_complete_lines(log[used:])
            assert first + second == parts


class TestParseLines:
    def test_the_seed_example_with_the_jsonl_provider(self) -> None:
        (sourced,) = parse_lines(
            "jsonl", ['{"type":"message","role":"assistant","text":"Done."}'], budget=500
        )
        assert sourced.event == AssistantText("Done.")
        assert sourced.source == '{"type":"message","role":"assistant","text":"Done."}'

    def test_each_event_keeps_its_trimmed_line(self) -> None:
        capture = load_capture("claude", "b_tool_bash")
        sourced = parse_lines("claude", capture.stdout_lines, budget=500)
        assert sourced
        stripped = {line.strip() for line in capture.stdout_lines}
        assert all(s.source in stripped for s in sourced)
        tool_call = next(s for s in sourced if isinstance(s.event, ToolCall))
        assert '"tool_use"' in tool_call.source

    def test_a_banner_line_is_raw_and_blank_lines_give_nothing(self) -> None:
        sourced = parse_lines("claude", ["  Welcome to the agent  \n", "", "   "], budget=10)
        assert sourced == [
            SourcedEvent(RawOutput("  Welcome to the agent  "), "Welcome to the agent")
        ]

    def test_the_budget_caps_the_events_of_one_call(self) -> None:
        lines = scripted_lines(ScriptedTurn(text="hello", session_id="s-1")).stdout
        everything = parse_lines("claude", lines, budget=10_000)
        assert len(everything) > 2
        assert parse_lines("claude", lines, budget=2) == everything[:2]

    @pytest.mark.parametrize("budget", [0, -1, 1.5, True, None])
    def test_a_budget_that_is_not_a_positive_int_is_refused(self, budget: object) -> None:
        with pytest.raises(InvalidRequestError, match="budget"):
            parse_lines("claude", [], budget=budget)  # type: ignore[arg-type]

    def test_a_parser_that_raises_costs_its_line(self) -> None:
        plugin = StaticProviderPlugin(
            profile=PROFILE, factory=_FragileProvider, resume_template="sample --resume {id}"
        )
        catalog = ProviderCatalog({plugin.name: plugin})
        logged: list[str] = []
        sourced = parse_lines(
            plugin.name, ["boom", " fine "], budget=10, catalog=catalog, log=logged.append
        )
        assert sourced == [SourcedEvent(RawOutput("fine"), "fine")]
        assert len(logged) == 1
        assert "boom" in logged[0]


class _Fragile:
    """A parser that raises on any line holding "boom"."""

    def __init__(self, emit: Callable[[AgentEvent], None]) -> None:
        self._emit = emit

    def feed_stdout(self, line: str) -> None:
        if "boom" in line:
            raise RuntimeError("boom")
        self._emit(RawOutput(line.strip()))

    def feed_stderr(self, line: str) -> None:
        del line

    def finish(self) -> ParsedTurn:
        return ParsedTurn()


class _FragileProvider(ClaudeProvider):
    def new_parser(  # type: ignore[override]
        self, emit: Callable[[AgentEvent], None], *, expect_structured: bool
    ) -> _Fragile:
        del expect_structured
        return _Fragile(emit)
