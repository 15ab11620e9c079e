from __future__ import annotations

import math
import re

import pytest

from agentshim import InvalidRequestError
from agentshim.core._checks import instance, is_positive_seconds, matching, seconds, sequence


@pytest.mark.parametrize("value", [0, 0.0, 1, 2.5, 10**6])
def test_seconds_takes_finite_non_negative_numbers(value: float) -> None:
    assert seconds("Owner", "field", value) == float(value)


@pytest.mark.parametrize("value", [-1, math.nan, math.inf, True, "5", None])
def test_seconds_refuses_what_is_not_a_finite_non_negative_number(value: object) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        seconds("Owner", "field", value)
    assert caught.value.field == "Owner.field"
    assert "Owner.field must be a finite, non-negative number of seconds" in str(caught.value)


def test_positive_seconds_refuses_zero() -> None:
    with pytest.raises(InvalidRequestError, match="positive finite"):
        seconds("Owner", "field", 0, positive=True)
    assert seconds("Owner", "field", 0.5, positive=True) == 0.5
    assert is_positive_seconds(0.5)
    assert not is_positive_seconds(0)
    assert not is_positive_seconds(True)


def test_instance_returns_the_value_or_names_what_to_pass() -> None:
    assert instance("Owner", "field", "text", str, "a string") == "text"
    with pytest.raises(InvalidRequestError) as caught:
        instance("Owner", "field", 3, str, "a prompt string")
    assert caught.value.field == "Owner.field"
    assert "must be a prompt string, not int 3" in str(caught.value)


@pytest.mark.parametrize("value", [[1, "a"], (1, "a"), iter([1, "a"])])
def test_sequence_gives_the_items_as_a_tuple(value: object) -> None:
    assert sequence("Owner", "field", value, "things") == (1, "a")


@pytest.mark.parametrize("value", ["ab", 3, None])
def test_sequence_refuses_a_string_and_what_does_not_iterate(value: object) -> None:
    with pytest.raises(InvalidRequestError, match="a sequence of things") as caught:
        sequence("Owner", "field", value, "things")
    assert caught.value.field == "Owner.field"
    assert "wrap a single one in a list" in str(caught.value)


_WORD = re.compile(r"[a-z]+")


def test_matching_returns_a_string_the_pattern_matches_whole() -> None:
    assert matching("Owner", "field", "abc", _WORD, "a word", "use a word") == "abc"


@pytest.mark.parametrize("value", ["abc1", "", "1abc", 3, None])
def test_matching_refuses_a_partial_match_or_a_non_string(value: object) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        matching("Owner", "field", value, _WORD, "a word", "use lower-case letters")
    assert caught.value.field == "Owner.field"
    assert caught.value.problem == f"{value!r} is not a word"
    assert str(caught.value) == "use lower-case letters"
