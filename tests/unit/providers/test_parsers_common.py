"""What every provider's stream parser promises on hostile input, checked once for all of them.

A CLI may print anything: a broken or newer build, a line cut short by a killed process, plain
text where JSON was expected. Every parser must still finish the turn with a ParsedTurn whose
error and error kind agree. Each provider's own test_parser.py keeps what only its frames can
exercise (its frame types with odd payloads, Claude's cut line failing the turn).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.core.events import AgentEvent
from agentshim.core.provider import StreamParser
from agentshim.providers import get_provider
from tests.unit.providers.adversarial import json_values, never_raises
from tests.unit.providers.fixtures import capture_names, load_capture

PROVIDERS = ("claude", "codex", "copilot", "gemini", "opencode", "pi")


def recorded_lines(provider: str) -> list[str]:
    """Every stdout line of every run recorded for ``provider``, its ``recorded/`` ones too."""
    names = [
        *capture_names(provider),
        *(f"recorded/{name}" for name in capture_names(provider, "recorded")),
    ]
    return [line for name in names for line in load_capture(provider, name).stdout_lines]


RECORDED = {provider: recorded_lines(provider) for provider in PROVIDERS}
each_provider = pytest.mark.parametrize("provider", PROVIDERS)


def parsers(provider: str) -> list[Callable[[Callable[[AgentEvent], None]], StreamParser]]:
    """The provider's parser as a turn with and a turn without an output schema gets it."""
    plugin = get_provider(provider)
    return [
        lambda emit: plugin.new_parser(emit, expect_structured=False),
        lambda emit: plugin.new_parser(emit, expect_structured=True),
    ]


def survives(provider: str, stdout: list[str], stderr: list[str] | tuple[str, ...] = ()) -> None:
    for make in parsers(provider):
        never_raises(make, stdout, stderr)


def test_every_provider_has_recordings() -> None:
    assert all(len(lines) > 10 for lines in RECORDED.values())


@each_provider
@settings(max_examples=150)
@given(st.lists(st.text(), max_size=10), st.lists(st.text(), max_size=3))
def test_arbitrary_text(provider: str, lines: list[str], stderr: list[str]) -> None:
    survives(provider, lines, stderr)


@each_provider
@settings(max_examples=150)
@given(st.lists(json_values(), max_size=8), st.booleans())
def test_arbitrary_json_values(provider: str, values: list[Any], newline: bool) -> None:
    survives(provider, [json.dumps(v) + ("\n" if newline else "") for v in values])


@each_provider
@settings(max_examples=150)
@given(st.data())
def test_recorded_lines_cut_short(provider: str, data: st.DataObject) -> None:
    """Cut lines, each possibly followed by a whole one (a killed CLI, then a newer turn)."""
    cut = st.tuples(st.sampled_from(RECORDED[provider]), st.integers(0, 4000), st.booleans())
    cuts = data.draw(st.lists(cut, min_size=1, max_size=8))
    stdout = [piece for line, at, whole in cuts for piece in (line[:at], *([line] * whole))]
    survives(provider, stdout, ["stray\n"])
