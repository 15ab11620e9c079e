from __future__ import annotations

import pytest

from agentshim.core.errors import InvalidRequestError
from agentshim.providers.text import TextStreamParser, scripted_lines
from agentshim.testing import ScriptedTurn


def test_a_scripted_turn_parses_back_to_its_text() -> None:
    run = scripted_lines(ScriptedTurn(text="two\nlines"))
    parser = TextStreamParser(lambda e: None)
    for line in run.stdout:
        parser.feed_stdout(line)
    assert parser.finish().text == "two\nlines"


def test_a_failed_turn_prints_on_stderr_and_exits_with_its_code() -> None:
    run = scripted_lines(ScriptedTurn(text="x", returncode=5))
    assert (run.returncode, bool(run.stderr)) == (5, True)


def test_structured_output_is_refused() -> None:
    with pytest.raises(InvalidRequestError, match="structured_output"):
        scripted_lines(ScriptedTurn(structured_output={"a": 1}))
