from __future__ import annotations

import json
import math
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.jsonvalues import (
    as_amount,
    as_count,
    as_int,
    as_mapping,
    as_str,
    compact_json,
    list_or_empty,
    mapping_or_empty,
    str_or_empty,
    to_text,
)
from tests.unit.providers.adversarial import json_values

NOT_CONTAINERS: list[Any] = [None, True, 0, 1.5, "x", ""]


class TestContainers:
    def test_an_object_is_returned_as_it_is(self) -> None:
        value = {"a": 1}
        assert as_mapping(value) is value
        assert mapping_or_empty(value) is value

    def test_an_array_is_returned_as_it_is(self) -> None:
        value = [1, 2]
        assert list_or_empty(value) is value

    @pytest.mark.parametrize("value", [*NOT_CONTAINERS, [1]])
    def test_anything_but_an_object_is_no_mapping(self, value: Any) -> None:
        assert as_mapping(value) is None
        assert mapping_or_empty(value) == {}

    @pytest.mark.parametrize("value", [*NOT_CONTAINERS, {"a": 1}, (1, 2)])
    def test_anything_but_an_array_is_an_empty_list(self, value: Any) -> None:
        assert list_or_empty(value) == []


class TestStrings:
    def test_a_string_is_returned_as_it_is(self) -> None:
        assert as_str("hé") == str_or_empty("hé") == "hé"
        assert as_str("") == ""

    @pytest.mark.parametrize("value", [None, 1, True, ["x"], {"x": "y"}])
    def test_anything_else_is_none_or_empty(self, value: Any) -> None:
        assert as_str(value) is None
        assert str_or_empty(value) == ""

    def test_to_text_keeps_strings_and_maps_null_to_empty(self) -> None:
        assert to_text("plain") == "plain"
        assert to_text(None) == ""

    def test_to_text_writes_other_values_as_json_keeping_non_ascii(self) -> None:
        assert to_text({"path": "ü.txt", "n": 2}) == '{"path": "ü.txt", "n": 2}'
        assert to_text([1, True]) == "[1, true]"
        assert to_text(3) == "3"

    def test_to_text_falls_back_to_str_for_what_json_cannot_write(self) -> None:
        circular: list[Any] = []
        circular.append(circular)
        assert to_text(circular) == "[[...]]"
        assert to_text({1, 2}) == "{1, 2}"


class TestNumbers:
    @pytest.mark.parametrize(
        ("value", "expected"),
        [(3, 3), (-3, -3), (0, 0), (3.0, 3), (-2.0, -2), (3.5, None), (True, None), ("3", None)],
    )
    def test_as_int_takes_whole_numbers_of_any_sign(self, value: Any, expected: int | None) -> None:
        assert as_int(value) == expected
        if expected is not None:
            assert type(as_int(value)) is int

    @pytest.mark.parametrize(
        ("value", "expected"),
        [(7, 7), (7.0, 7), (0, 0), (-1, 0), (-1.0, 0), (2.5, 0), (True, 0), ("7", 0), (None, 0)],
    )
    def test_as_count_is_a_positive_whole_number_or_zero(self, value: Any, expected: int) -> None:
        assert as_count(value) == expected
        assert type(as_count(value)) is int

    def test_as_count_without_whole_floats_takes_only_integer_literals(self) -> None:
        assert as_count(7, whole_floats=False) == 7
        assert as_count(7.0, whole_floats=False) == 0
        assert as_count(-7, whole_floats=False) == 0

    @pytest.mark.parametrize(("value", "expected"), [(0, 0.0), (2, 2.0), (0.25, 0.25)])
    def test_as_amount_takes_finite_non_negative_numbers(self, value: Any, expected: float) -> None:
        amount = as_amount(value)
        assert amount == expected
        assert type(amount) is float

    @pytest.mark.parametrize(
        "value", [-0.5, -1, math.nan, math.inf, -math.inf, 10**400, True, False, "1", None, [1]]
    )
    def test_as_amount_refuses_what_is_no_figure(self, value: Any) -> None:
        assert as_amount(value) is None


@given(json_values(max_leaves=12))
def test_no_reader_raises_on_any_json_value(value: Any) -> None:
    assert as_mapping(value) is None or isinstance(value, dict)
    assert isinstance(mapping_or_empty(value), dict)
    assert isinstance(list_or_empty(value), list)
    assert as_str(value) is None or isinstance(value, str)
    assert isinstance(str_or_empty(value), str)
    assert isinstance(to_text(value), str)
    assert as_int(value) is None or as_int(value) == value
    assert as_count(value) >= 0
    assert as_count(value, whole_floats=False) in (0, value)
    amount = as_amount(value)
    assert amount is None or (math.isfinite(amount) and amount >= 0 and amount == value)


finite_json_values = st.recursive(
    st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=12,
)


@given(finite_json_values)
def test_to_text_of_a_json_value_reads_back_as_the_same_value(value: Any) -> None:
    assert json.loads(to_text(value)) == value


class TestCompactJson:
    def test_no_spaces_and_non_ascii_kept(self) -> None:
        assert compact_json({"a": [1, "é"]}) == '{"a":[1,"é"]}'

    def test_a_value_json_cannot_hold_reads_as_its_repr(self) -> None:
        assert compact_json({1, 2}) == repr({1, 2})

    @given(st.recursive(st.none() | st.integers() | st.text(), lambda c: st.lists(c)))
    def test_reads_back_as_the_value(self, value: Any) -> None:
        assert json.loads(compact_json(value)) == value
