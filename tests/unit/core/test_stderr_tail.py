from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.events import AgentEvent, Stderr
from agentshim.core.stderr_tail import StderrTail


def tail(max_lines: int = 200) -> tuple[StderrTail, list[AgentEvent]]:
    events: list[AgentEvent] = []
    return StderrTail(events.append, max_lines), events


def test_each_line_is_emitted_without_its_newline_and_kept() -> None:
    kept, events = tail()
    kept.feed("Error: no session\n")
    kept.feed("  usage: cli [options]\r\n")
    assert events == [Stderr("Error: no session"), Stderr("  usage: cli [options]")]
    assert list(kept) == ["Error: no session", "  usage: cli [options]"]
    assert (kept.first(), kept.last()) == ("Error: no session", "  usage: cli [options]")
    assert kept.text() == "Error: no session\n  usage: cli [options]"


def test_blank_lines_are_neither_emitted_nor_kept() -> None:
    kept, events = tail()
    for line in ("\n", "   \n", "\t\r\n", ""):
        kept.feed(line)
    assert events == []
    assert (len(kept), kept.first(), kept.last(), kept.text()) == (0, "", "", "")
    assert not kept


def test_first_is_stripped_and_last_is_as_printed() -> None:
    kept, _ = tail()
    kept.feed("   warning: slow  \n")
    assert kept.first() == "warning: slow"
    assert kept.last() == "   warning: slow  "


def test_only_the_newest_lines_are_kept_but_all_are_emitted() -> None:
    kept, events = tail(max_lines=2)
    for n in range(5):
        kept.feed(f"line {n}\n")
    assert list(kept) == ["line 3", "line 4"]
    assert len(events) == 5


@given(st.lists(st.text(), max_size=30), st.integers(min_value=1, max_value=5))
def test_keeps_the_last_non_blank_lines_in_order(lines: list[str], max_lines: int) -> None:
    kept, events = tail(max_lines)
    for line in lines:
        kept.feed(line)
    texts = [line.rstrip("\r\n") for line in lines if line.rstrip("\r\n").strip()]
    assert events == [Stderr(text) for text in texts]
    assert list(kept) == texts[-max_lines:]
