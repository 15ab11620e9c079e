"""Hostile input for stream parsers: hypothesis strategies and the check every parser must pass.

A parser may be fed anything a broken, newer or truncated CLI prints; it must still finish the
turn with a ParsedTurn whose error and error kind agree.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hypothesis import strategies as st

from agentshim.core.events import AgentEvent
from agentshim.core.provider import StreamParser
from agentshim.core.turn import ParsedTurn
from tests.unit.providers.fixtures import feed


def json_values(*, max_leaves: int = 20) -> st.SearchStrategy[Any]:
    """Any value ``json.loads`` can return, NaN and infinities included."""
    return st.recursive(
        st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
        lambda inner: (
            st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
        ),
        max_leaves=max_leaves,
    )


def never_raises(
    make_parser: Callable[[Callable[[AgentEvent], None]], StreamParser],
    stdout: Iterable[str],
    stderr: Iterable[str] = (),
) -> tuple[ParsedTurn, list[AgentEvent]]:
    """Feed one parser; the turn must come out whole, failed exactly when it has a kind."""
    turn, events = feed(make_parser, stdout, stderr)
    assert isinstance(turn, ParsedTurn)
    assert (turn.error is None) == (turn.error_kind is None), turn
    return turn, events
