from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.providers.codex._toml import (
    TomlError,
    decode_value,
    join_key,
    split_key,
    toml_key,
    toml_string,
    toml_value,
)

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    tomllib = None

needs_tomllib = pytest.mark.skipif(tomllib is None, reason="tomllib needs Python 3.11+")

# Every string TOML can hold: any code point but a lone surrogate.
texts = st.text(st.characters(blacklist_categories=("Cs",)))
scalars = st.one_of(
    texts,
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=False),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(texts, inner, max_size=4),
    ),
    max_leaves=12,
)


def _via_tomllib(rendered: str) -> Any:
    assert tomllib is not None
    return tomllib.loads(f"x = {rendered}")["x"]


# What reads a rendered value back: Python's own TOML reader, and the one Codex's config
# reader here uses.
DECODERS = [
    pytest.param(_via_tomllib, marks=needs_tomllib, id="tomllib"),
    pytest.param(decode_value, id="decoder"),
]


class TestStrings:
    @pytest.mark.parametrize("decode", DECODERS)
    @given(texts)
    def test_every_string_round_trips(self, decode: Callable[[str], Any], text: str) -> None:
        assert decode(toml_string(text)) == text

    @given(texts)
    def test_the_rendered_string_is_one_line_without_control_characters(self, text: str) -> None:
        rendered = toml_string(text)
        assert not any(ord(c) < 0x20 or ord(c) == 0x7F for c in rendered)

    def test_escapes_are_the_short_ones_where_toml_has_them(self) -> None:
        assert toml_string('a"b\\c\n\t\x00\x7f') == '"a\\"b\\\\c\\n\\t\\u0000\\u007F"'

    def test_a_lone_surrogate_is_refused(self) -> None:
        with pytest.raises(TomlError):
            toml_string("bad \ud800")


class TestKeys:
    @pytest.mark.parametrize(
        ("key", "rendered"),
        [("a_b", "a_b"), ("a-b", "a-b"), ("my.srv", '"my.srv"'), ("", '""'), ("x y", '"x y"')],
    )
    def test_a_segment_is_quoted_only_when_it_is_not_a_bare_key(
        self, key: str, rendered: str
    ) -> None:
        assert toml_key(key) == rendered

    @given(st.lists(texts, min_size=1, max_size=4))
    def test_dotted_keys_split_back_into_their_segments(self, segments: list[str]) -> None:
        assert split_key(join_key(*segments)) == segments

    @needs_tomllib
    @given(st.lists(texts, min_size=1, max_size=4))
    def test_dotted_keys_mean_the_same_to_tomllib(self, segments: list[str]) -> None:
        assert tomllib is not None
        document = tomllib.loads(f"{join_key(*segments)} = 1")
        node: Any = document
        for segment in segments:
            node = node[segment]
        assert node == 1

    def test_three_similar_names_are_three_keys(self) -> None:
        keys = {join_key("mcp_servers", name) for name in ("my.srv", "a-b", "a_b")}
        assert len(keys) == 3
        assert {split_key(k)[1] for k in keys} == {"my.srv", "a-b", "a_b"}


class TestValues:
    @pytest.mark.parametrize("decode", DECODERS)
    @given(values)
    def test_values_round_trip(self, decode: Callable[[str], Any], value: Any) -> None:
        assert decode(toml_value(value)) == value

    def test_non_finite_floats(self) -> None:
        assert toml_value(math.inf) == "inf"
        assert toml_value(-math.inf) == "-inf"
        assert math.isnan(decode_value(toml_value(math.nan)))

    @pytest.mark.parametrize("value", [None, object(), {1: "a"}, ["ok", None]])
    def test_what_toml_cannot_hold_is_refused(self, value: object) -> None:
        with pytest.raises(TomlError):
            toml_value(value)

    @pytest.mark.parametrize(
        ("text", "value"),
        [
            ("'literal \\n'", "literal \\n"),
            ("[ 1, 2, ]", [1, 2]),
            ("{ a.b = 1, c = 'x' }", {"a": {"b": 1}, "c": "x"}),
            ("1_000", 1000),
            ("+1.5e3", 1500.0),
            (' "padded" ', "padded"),
        ],
    )
    def test_the_decoder_reads_the_usual_spellings(self, text: str, value: Any) -> None:
        assert decode_value(text) == value

    @pytest.mark.parametrize(
        "text", ["", "bare", '"open', "[1,", "{a = 1", "1 2", '"\\q"', "{a = 1, a = 2}"]
    )
    def test_the_decoder_refuses_what_is_not_a_value(self, text: str) -> None:
        with pytest.raises(TomlError):
            decode_value(text)

    @given(st.text(max_size=40))
    def test_the_decoder_only_ever_raises_toml_error(self, text: str) -> None:
        try:
            decode_value(text)
        except TomlError:
            pass
