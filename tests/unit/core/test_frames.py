"""The shared frame-dispatch loop: what each line becomes, whatever the line and the handler."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.events import AgentEvent, AssistantText, Lifecycle, RawOutput
from agentshim.core.frames import (
    UNKNOWN_DETAIL_CHARS,
    Frame,
    FrameDispatcher,
    LineSkip,
    ignore_frame,
)
from agentshim.core.stream import parse_json_object
from tests.unit.providers.adversarial import json_values

SKIP_PREFIX = '{"type":"'
NOISE = frozenset({"noise", "chatter"})


def _say(frame: Frame, out: list[AgentEvent]) -> None:
    out.append(AssistantText(str(frame.get("text"))))


def _boom(frame: Frame, out: list[AgentEvent]) -> None:
    out.append(AssistantText("half done"))
    raise KeyError("text")


HANDLERS = {"say": _say, "boom": _boom, "quiet": ignore_frame}


def _dispatcher(events: list[AgentEvent], **options: Any) -> FrameDispatcher:
    return FrameDispatcher(HANDLERS, events.append, **options)


def _feed_each(dispatcher_events: list[AgentEvent], dispatcher: FrameDispatcher, lines: list[str]):
    per_line: list[list[AgentEvent]] = []
    for line in lines:
        before = len(dispatcher_events)
        dispatcher.feed(line)
        per_line.append(dispatcher_events[before:])
    return per_line


class TestOneLine:
    def test_a_frame_reaches_its_handler(self) -> None:
        events: list[AgentEvent] = []
        _dispatcher(events).feed('{"type":"say","text":"hi"}\n')
        assert events == [AssistantText("hi")]

    @pytest.mark.parametrize("line", ["plain text\n", "[1, 2]\n", "42", "{broken\n", '{"a": NaN}'])
    def test_what_is_not_one_json_object_is_raw_output(self, line: str) -> None:
        events: list[AgentEvent] = []
        _dispatcher(events).feed(line)
        assert events == [RawOutput(line.rstrip("\n"))]

    @pytest.mark.parametrize("line", ["", "\n", "   \r\n"])
    def test_a_blank_line_is_nothing(self, line: str) -> None:
        events: list[AgentEvent] = []
        _dispatcher(events).feed(line)
        assert events == []

    def test_an_unknown_type_is_reported_with_its_line(self) -> None:
        events: list[AgentEvent] = []
        _dispatcher(events).feed('{"type":"mystery","x":1}\n')
        assert events == [Lifecycle("unknown_frame:mystery", '{"type":"mystery","x":1}')]

    @pytest.mark.parametrize(
        ("line", "kind"),
        [
            ('{"no_type": 1}', "unknown_frame:<NoneType>"),
            ('{"type": 7}', "unknown_frame:<int>"),
            ('{"type": ["say"]}', "unknown_frame:<list>"),
        ],
    )
    def test_a_missing_or_non_string_type_is_unknown(self, line: str, kind: str) -> None:
        events: list[AgentEvent] = []
        _dispatcher(events).feed(line)
        assert [e.kind for e in events if isinstance(e, Lifecycle)] == [kind]

    def test_an_unknown_frame_detail_is_capped(self) -> None:
        events: list[AgentEvent] = []
        line = json.dumps({"type": "mystery", "pad": "x" * 5000})
        _dispatcher(events).feed(line)
        (event,) = events
        assert isinstance(event, Lifecycle)
        assert event.detail == line[:UNKNOWN_DETAIL_CHARS]

    def test_a_handler_that_raises_costs_its_frame_and_nothing_it_appended_leaks(self) -> None:
        events: list[AgentEvent] = []
        dispatcher = _dispatcher(events)
        dispatcher.feed('{"type":"boom"}\n')
        dispatcher.feed('{"type":"say","text":"after"}\n')
        assert events == [
            RawOutput('{"type":"boom"}'),
            Lifecycle("malformed_frame", "boom: KeyError('text')"),
            AssistantText("after"),
        ]

    def test_a_failing_emit_propagates(self) -> None:
        class Boom(Exception):
            pass

        def emit(event: AgentEvent) -> None:
            raise Boom

        with pytest.raises(Boom):
            FrameDispatcher(HANDLERS, emit).feed('{"type":"say","text":"hi"}')

    def test_listed_frames_are_dropped_undecoded_unless_cut_off(self) -> None:
        events: list[AgentEvent] = []
        dispatcher = _dispatcher(events, skip=LineSkip(SKIP_PREFIX, NOISE))
        dispatcher.feed('{"type":"noise","x":[1,\n')  # listed but not closed: decoded
        dispatcher.feed('{"type":"noise","x":1}\n')
        dispatcher.feed('{"type":"chatter","x":')  # cut off: decoded, so RawOutput
        dispatcher.feed('{"type": "noise"}')  # another spelling: decoded, so unknown
        dispatcher.feed('{"type":"say","text":"hi"}')
        assert events == [
            RawOutput('{"type":"noise","x":[1,'),
            RawOutput('{"type":"chatter","x":'),
            Lifecycle("unknown_frame:noise", '{"type": "noise"}'),
            AssistantText("hi"),
        ]

    def test_with_listed_false_only_the_listed_frames_are_decoded(self) -> None:
        events: list[AgentEvent] = []
        keep = frozenset({"say"})
        dispatcher = _dispatcher(events, skip=LineSkip(SKIP_PREFIX, keep, listed=False))
        dispatcher.feed('{"type":"noise","x":1}')
        dispatcher.feed('{"type":"say","text":"hi"}')
        assert events == [AssistantText("hi")]

    def test_with_a_marker_the_name_after_it_decides(self) -> None:
        events: list[AgentEvent] = []
        skip = LineSkip('{"type":"wrap",', frozenset({"noise"}), marker='"inner":{"type":"')
        handlers = {**HANDLERS, "wrap": lambda frame, out: out.append(AssistantText("wrap"))}
        dispatcher = FrameDispatcher(handlers, events.append, skip=skip)
        dispatcher.feed('{"type":"wrap","usage":{"n":1},"inner":{"type":"noise","x":1}}')
        dispatcher.feed('{"type":"wrap","inner":{"type":"noise"}}')
        dispatcher.feed('{"type":"wrap","usage":{"n":1},"inner":{"type":"say"}}')
        dispatcher.feed('{"type":"wrap","usage":{"n":1}}')  # no marker: decoded
        assert events == [AssistantText("wrap"), AssistantText("wrap")]

    def test_before_sees_every_frame_and_its_events_come_first(self) -> None:
        def before(frame: Frame, out: list[AgentEvent]) -> None:
            out.append(Lifecycle("seen", str(frame.get("type"))))

        events: list[AgentEvent] = []
        dispatcher = _dispatcher(events, before=before)
        dispatcher.feed('{"type":"say","text":"hi"}')
        dispatcher.feed('{"type":"mystery"}')
        dispatcher.feed("not json")
        assert events == [
            Lifecycle("seen", "say"),
            AssistantText("hi"),
            Lifecycle("seen", "mystery"),
            Lifecycle("unknown_frame:mystery", '{"type":"mystery"}'),
            RawOutput("not json"),
        ]


class TestOneFrame:
    def test_dispatch_takes_a_decoded_frame(self) -> None:
        events: list[AgentEvent] = []
        dispatcher = _dispatcher(events)
        dispatcher.dispatch({"type": "say", "text": "hi"})
        dispatcher.dispatch({"type": "boom"})
        dispatcher.dispatch({"type": "mystery"})
        assert events == [
            AssistantText("hi"),
            Lifecycle("malformed_frame", "boom: KeyError('text')"),
            Lifecycle("unknown_frame:mystery", ""),
        ]


def _reject(name: str) -> Any:
    raise ValueError(name)


def _expected(line: str) -> list[object]:
    """What one line must become, worked out without the dispatcher."""
    text = line.rstrip("\r\n")
    if not text.strip():
        return []
    if line.startswith(SKIP_PREFIX) and line.endswith(("}", "}\n")):
        end = line.find('"', len(SKIP_PREFIX))
        if end > 0 and line[len(SKIP_PREFIX) : end] in NOISE:
            return []
    try:
        frame: object = json.loads(line, parse_constant=_reject)
    except (ValueError, RecursionError):
        frame = None
    if not isinstance(frame, dict):
        return [RawOutput(text)]
    kind: object = frame.get("type")  # pyright: ignore[reportUnknownMemberType]
    if kind == "say":
        return [AssistantText(str(frame.get("text")))]  # pyright: ignore[reportUnknownMemberType]
    if kind == "boom":
        return [RawOutput(text), Lifecycle("malformed_frame", "boom: KeyError('text')")]
    if kind == "quiet":
        return []
    return ["unknown"]


FRAME_TYPES = st.sampled_from(
    ["say", "boom", "quiet", "noise", "chatter", "mystery"]
) | json_values(max_leaves=3)
FRAMES = st.builds(
    # Compact, as CLIs print it, so that listed frames meet the skip prefix.
    lambda kind, fields: json.dumps({"type": kind, **fields}, separators=(",", ":")),
    FRAME_TYPES,
    st.dictionaries(st.sampled_from(["text", "x", "data"]), json_values(max_leaves=4), max_size=3),
)
LINES = st.one_of(
    FRAMES,
    FRAMES.map(lambda line: line + "\n"),
    FRAMES.map(lambda line: line[: len(line) // 2]),
    json_values(max_leaves=6).map(lambda value: json.dumps(value)),
    st.text(max_size=40),
    st.binary(max_size=40).map(lambda raw: raw.decode("utf-8", "replace")),
    st.sampled_from(["", "\n", "  \r\n", SKIP_PREFIX + 'noise"}', SKIP_PREFIX + "noise", "}"]),
)


@given(st.lists(LINES, max_size=30))
def test_any_lines_give_exactly_their_own_outcome_in_order_and_never_raise(
    lines: list[str],
) -> None:
    events: list[AgentEvent] = []
    dispatcher = _dispatcher(events, skip=LineSkip(SKIP_PREFIX, NOISE))
    per_line = _feed_each(events, dispatcher, lines)
    assert len(per_line) == len(lines)
    for line, got in zip(lines, per_line, strict=True):
        expected = _expected(line)
        if expected == ["unknown"]:
            (event,) = got
            assert isinstance(event, Lifecycle)
            assert event.kind.startswith("unknown_frame:")
        else:
            assert got == expected, line


def _seen(frame: Frame, out: list[AgentEvent]) -> None:
    out.append(Lifecycle("seen", str(frame.get("x"))))


@given(st.lists(LINES, max_size=30), st.booleans())
def test_feeding_a_line_is_decoding_it_then_dispatching_the_frame(
    lines: list[str], with_before: bool
) -> None:
    # feed decodes and dispatches inline (it runs for every line); this pins it to the
    # public pieces it stands for: parse_json_object, then dispatch.
    before = _seen if with_before else None
    fed: list[AgentEvent] = []
    by_parts: list[AgentEvent] = []
    feeder = FrameDispatcher(HANDLERS, fed.append, before=before)
    parts = FrameDispatcher(HANDLERS, by_parts.append, before=before)
    for line in lines:
        feeder.feed(line)
        frame = parse_json_object(line)
        if frame is not None:
            parts.dispatch(frame, line)
        elif line.strip():
            by_parts.append(RawOutput(line.rstrip("\r\n")))
    assert fed == by_parts


@given(st.lists(LINES, max_size=30))
def test_frame_or_feed_returns_each_frame_and_feeds_every_other_line(lines: list[str]) -> None:
    # A transport routes some frame types itself and dispatches the rest: that must give what
    # feeding every line does, with each frame handed back exactly once.
    fed: list[AgentEvent] = []
    routed: list[AgentEvent] = []
    feeder = FrameDispatcher(HANDLERS, fed.append)
    router = FrameDispatcher(HANDLERS, routed.append)
    for line in lines:
        feeder.feed(line)
        frame = router.frame_or_feed(line)
        assert frame == parse_json_object(line)
        if frame is not None:
            router.dispatch(frame, line)
    assert routed == fed
