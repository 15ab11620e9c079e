from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.errors import FailureKind
from agentshim.core.events import (
    AgentEvent,
    AssistantText,
    BackgroundTask,
    BackgroundTasksChanged,
    Lifecycle,
    RawOutput,
    SessionStarted,
    SessionTitle,
    ToolCall,
    ToolKind,
    UsageReport,
)
from agentshim.core.turn import ParsedTurn
from agentshim.providers.jsonl import JsonlStreamParser


def _parse(*lines: str) -> tuple[ParsedTurn, list[AgentEvent]]:
    events: list[AgentEvent] = []
    parser = JsonlStreamParser(events.append)
    for line in lines:
        parser.feed_stdout(line + "\n")
    return parser.finish(), events


def test_the_seed_example_passes_through() -> None:
    turn, events = _parse('{"type":"message","role":"assistant","text":"Done."}')
    assert events == [AssistantText("Done.")]
    assert turn.text == "Done."


def test_a_type_outside_the_vocabulary_and_text_are_raw() -> None:
    _, events = _parse('{"type":"progress","pct":5}', "Starting up...", "[1, 2]")
    assert events == [
        RawOutput('{"type":"progress","pct":5}'),
        RawOutput("Starting up..."),
        RawOutput("[1, 2]"),
    ]


def test_a_vocabulary_object_of_the_wrong_shape_is_raw_not_a_failure() -> None:
    turn, events = _parse('{"type":"message","text":3}')
    assert [type(e) for e in events] == [RawOutput]
    assert turn.error is None


def test_a_whole_turn() -> None:
    lines = [
        '{"type":"session.started","session_id":"h-1"}',
        '{"type":"session.title","title":"Fix the build"}',
        '{"type":"tool.call","tool_id":"t1","tool":"shell","args":{"command":"make"}}',
        '{"type":"tool.result","tool_id":"t1","tool":"shell","stdout":"ok","exit_code":0}',
        '{"type":"message","text":"Built ","delta":true}',
        '{"type":"message","text":"it.","delta":true}',
        '{"type":"session.background","tasks":[{"task_id":"w","task_type":"watch"}]}',
        '{"type":"usage","scope":"call","usage":{"tokens":{"input_tokens":50,"output_tokens":5}}}',
        '{"type":"lifecycle","kind":"note","detail":"x"}',
    ]
    turn, events = _parse(*lines)
    assert turn.session_id == "h-1"
    assert turn.text == "Built it."
    assert turn.usage is not None
    assert turn.usage.tokens.input_tokens == 50
    assert turn.context_tokens == 50
    assert turn.background_tasks == (BackgroundTask("w", "watch"),)
    assert SessionStarted("h-1") in events
    assert SessionTitle("Fix the build") in events
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    assert call.kind is ToolKind.COMMAND  # the conventional shell name, no kind given
    assert Lifecycle("note", "x") in events
    assert any(isinstance(e, UsageReport) for e in events)
    assert any(isinstance(e, BackgroundTasksChanged) for e in events)


def test_a_fatal_error_fails_the_turn_with_its_kind() -> None:
    turn, _ = _parse('{"type":"error","message":"401 unauthorized: invalid api key","fatal":true}')
    assert turn.error == "401 unauthorized: invalid api key"
    assert turn.error_kind is FailureKind.AUTH


def test_a_session_named_twice_is_announced_once() -> None:
    line = '{"type":"session.started","session_id":"h-1"}'
    _, events = _parse(line, line)
    assert events == [SessionStarted("h-1")]


@given(
    st.lists(
        st.text(max_size=40)
        | st.builds(
            json.dumps,
            st.dictionaries(
                st.text(max_size=8), st.none() | st.integers() | st.text(max_size=8), max_size=3
            ),
        ),
        max_size=6,
    )
)
def test_any_output_never_raises(lines: list[str]) -> None:
    _parse(*[line.replace("\n", " ") for line in lines])
