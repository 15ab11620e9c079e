"""ScriptedTurn: one frozen value for a made-up turn, checked where it is built."""

from __future__ import annotations

import dataclasses

import pytest

from agentshim.core.errors import InvalidRequestError
from agentshim.providers import provider_names
from agentshim.testing import ScriptedTurn, ToolFailure, scripted_turn


class TestValue:
    def test_defaults_are_an_empty_successful_turn(self) -> None:
        turn = ScriptedTurn()
        assert (turn.text, turn.session_id, turn.usage, turn.tool_calls) == ("", None, None, ())
        assert (turn.structured_output, turn.returncode) == (None, 0)

    def test_it_is_frozen_and_compares_by_value(self) -> None:
        turn = ScriptedTurn(text="a", tool_calls=[("Read", {"path": "x"}, "y")])
        assert turn == ScriptedTurn(text="a", tool_calls=(("Read", {"path": "x"}, "y"),))
        with pytest.raises(dataclasses.FrozenInstanceError):
            turn.text = "b"  # type: ignore[misc]

    def test_the_tool_calls_given_are_copied(self) -> None:
        calls = [("Read", {"path": "x"}, "y")]
        turn = ScriptedTurn(tool_calls=calls)
        calls.append(("Bash", {"command": "ls"}, "z"))
        assert turn.tool_calls == (("Read", {"path": "x"}, "y"),)

    def test_a_tool_failure_stays_a_tool_failure(self) -> None:
        failure = ToolFailure("no such file", exit_code=2)
        (call,) = ScriptedTurn(tool_calls=[("Bash", {"command": "cat x"}, failure)]).tool_calls
        assert call[2] is failure


class TestRefused:
    @pytest.mark.parametrize(
        ("field", "value"),
        [
            ("text", None),
            ("session_id", 7),
            ("usage", {"input_tokens": 1}),
            ("returncode", True),
            ("returncode", "1"),
            ("tool_calls", "ls"),
            ("tool_calls", [("Bash", {"command": "ls"})]),
            ("tool_calls", [("Bash", "ls", "out")]),
            ("tool_calls", [(None, {}, "out")]),
            ("tool_calls", [("Bash", {}, 3)]),
        ],
    )
    def test_a_wrong_field_is_an_invalid_request_naming_it(self, field: str, value: object) -> None:
        with pytest.raises(InvalidRequestError) as caught:
            ScriptedTurn(**{field: value})  # type: ignore[arg-type]
        assert caught.value.field == f"ScriptedTurn.{field}"
        assert field in str(caught.value)

    @pytest.mark.parametrize("provider", provider_names())
    def test_scripted_turn_refuses_the_same_way_for_every_provider(self, provider: str) -> None:
        with pytest.raises(InvalidRequestError, match=r"ScriptedTurn\.returncode"):
            scripted_turn(provider, text="x", returncode=None)  # type: ignore[arg-type]
