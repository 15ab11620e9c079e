from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.events import AgentEvent, AssistantText, Stderr
from agentshim.providers.text import TextStreamParser


def test_stdout_is_the_answer_streamed_line_by_line() -> None:
    events: list[AgentEvent] = []
    parser = TextStreamParser(events.append)
    for line in ("first line\n", "\n", '{"type":"message","text":"not parsed"}\n'):
        parser.feed_stdout(line)
    parser.feed_stderr("a warning\n")
    turn = parser.finish()
    assert turn.text == 'first line\n\n{"type":"message","text":"not parsed"}'
    assert [e for e in events if isinstance(e, AssistantText)] == [
        AssistantText("first line\n", delta=True),
        AssistantText("\n", delta=True),
        AssistantText('{"type":"message","text":"not parsed"}\n', delta=True),
    ]
    assert Stderr("a warning") in events
    assert (turn.session_id, turn.usage, turn.error) == (None, None, None)


def test_a_last_line_without_newline_is_kept_whole() -> None:
    parser = TextStreamParser(lambda e: None)
    parser.feed_stdout("a\n")
    parser.feed_stdout("b")
    assert parser.finish().text == "a\nb"


@given(st.lists(st.text(max_size=20)))
def test_the_streamed_pieces_join_to_the_stdout(lines: list[str]) -> None:
    events: list[AgentEvent] = []
    parser = TextStreamParser(events.append)
    for line in lines:
        parser.feed_stdout(line)
    joined = "".join(e.text for e in events if isinstance(e, AssistantText))
    assert joined == "".join(lines)
    text = parser.finish().text
    assert joined in (text, text + "\n")
