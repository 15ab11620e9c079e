"""The TOML that goes into Codex ``--config key=value`` overrides, and back out of it.

Codex parses the value half of an override as TOML and, when that fails, silently keeps the
raw text as a string: a badly escaped literal changes type instead of failing. So every value
agentshim renders goes through :func:`toml_value`, which escapes control characters and
refuses what TOML cannot hold (lone surrogates, ``None``), and every key segment through
:func:`toml_key`, which quotes a segment unless it is a valid bare key.

:func:`decode_value` and :func:`split_key` read the same subset back (basic and literal
strings, integers, floats, booleans, arrays, inline tables; dotted keys with quoted segments)
without ``tomllib``, which Python 3.10 lacks; the argv parsers (``parse_mcp_servers``,
``parse_sandbox``) are built on them.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from typing import Any, cast

__all__ = [
    "TomlError",
    "decode_value",
    "is_bare_key",
    "join_key",
    "split_key",
    "toml_key",
    "toml_string",
    "toml_value",
]


class TomlError(ValueError):
    """A value cannot be written as TOML, or text is not the TOML subset this module reads."""


_BARE_KEY = re.compile(r"[A-Za-z0-9_-]+")
_SHORT_ESCAPES = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
# Every character a TOML basic string may not hold literally, mapped to its escape.
_ESCAPES: dict[str, str] = {
    **{chr(c): f"\\u{c:04X}" for c in (*range(0x20), 0x7F)},
    **_SHORT_ESCAPES,
}
_NEEDS_ESCAPE = re.compile('["\\\\\x00-\x1f\x7f]')
_SURROGATE = re.compile("[\ud800-\udfff]")


def is_bare_key(key: str) -> bool:
    """Return True when ``key`` may appear unquoted in a TOML key (``[A-Za-z0-9_-]+``)."""
    return _BARE_KEY.fullmatch(key) is not None


def toml_string(text: str) -> str:
    """Return ``text`` as a TOML basic string, control characters escaped.

    Raises:
        TomlError: ``text`` holds a lone surrogate, which no TOML string can carry.
    """
    if _SURROGATE.search(text):
        raise TomlError(f"{text!r} holds a lone surrogate, which TOML cannot represent")
    return '"' + _NEEDS_ESCAPE.sub(lambda m: _ESCAPES[m.group()], text) + '"'


def toml_key(key: str) -> str:
    """Return one key segment: bare when it is a valid bare key, else a quoted basic string."""
    return key if is_bare_key(key) else toml_string(key)


def join_key(*segments: str) -> str:
    """Return a dotted TOML key from its segments, each quoted only where it must be."""
    return ".".join(toml_key(segment) for segment in segments)


def toml_value(value: object) -> str:
    """Return ``value`` as an inline TOML value.

    Strings, booleans, integers, finite or non-finite floats, sequences (arrays) and mappings
    with string keys (inline tables) are supported.

    Raises:
        TomlError: for ``None``, a lone surrogate, a non-string mapping key, or any other type.
    """
    if isinstance(value, str):
        return toml_string(value)
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _toml_float(value)
    if isinstance(value, Mapping):
        parts: list[str] = []
        for key, item in cast("Mapping[object, object]", value).items():
            if not isinstance(key, str):
                raise TomlError(f"TOML table keys are strings, not {key!r}")
            parts.append(f"{toml_key(key)} = {toml_value(item)}")
        return "{" + ", ".join(parts) + "}" if parts else "{}"
    if isinstance(value, Sequence):
        items = cast("Sequence[object]", value)
        return "[" + ", ".join(toml_value(item) for item in items) + "]"
    raise TomlError(f"{type(value).__name__} {value!r} has no TOML form")


def _toml_float(value: float) -> str:
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    # repr always puts a digit on both sides of a point ("3.0", "1e+20"), as TOML requires.
    return repr(value)


# -- reading the subset back ----------------------------------------------------------


class _Reader:
    """A cursor over one piece of TOML text (a value or a dotted key)."""

    __slots__ = ("pos", "text")

    def __init__(self, text: str) -> None:
        self.text = text
        self.pos = 0

    def fail(self, what: str) -> TomlError:
        return TomlError(f"{what} at offset {self.pos} of {self.text!r}")

    def skip_space(self) -> None:
        text = self.text
        while self.pos < len(text) and text[self.pos] in " \t":
            self.pos += 1

    def skip_space_and_newlines(self) -> None:
        text = self.text
        while self.pos < len(text):
            char = text[self.pos]
            if char in " \t\r\n":
                self.pos += 1
            elif char == "#":
                while self.pos < len(text) and text[self.pos] != "\n":
                    self.pos += 1
            else:
                break

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expect(self, char: str) -> None:
        if self.peek() != char:
            raise self.fail(f"expected {char!r}")
        self.pos += 1

    def at_end(self) -> bool:
        return self.pos >= len(self.text)

    # strings

    def basic_string(self) -> str:
        self.expect('"')
        text = self.text
        out: list[str] = []
        while True:
            if self.pos >= len(text):
                raise self.fail("unterminated string")
            char = text[self.pos]
            if char == '"':
                self.pos += 1
                return "".join(out)
            if char == "\\":
                out.append(self._escape())
                continue
            if char in _ESCAPES and char not in ("\t",):
                raise self.fail(f"raw control character {char!r} in a string")
            out.append(char)
            self.pos += 1

    def _escape(self) -> str:
        text = self.text
        self.pos += 1
        if self.pos >= len(text):
            raise self.fail("dangling backslash")
        code = text[self.pos]
        simple = {"b": "\b", "t": "\t", "n": "\n", "f": "\f", "r": "\r", '"': '"', "\\": "\\"}
        if code in simple:
            self.pos += 1
            return simple[code]
        if code in ("u", "U"):
            width = 4 if code == "u" else 8
            digits = text[self.pos + 1 : self.pos + 1 + width]
            if len(digits) != width or not all(c in "0123456789abcdefABCDEF" for c in digits):
                raise self.fail("bad unicode escape")
            value = int(digits, 16)
            if value > 0x10FFFF or 0xD800 <= value <= 0xDFFF:
                raise self.fail("escape is not a unicode scalar value")
            self.pos += 1 + width
            return chr(value)
        raise self.fail(f"unknown escape \\{code}")

    def literal_string(self) -> str:
        self.expect("'")
        end = self.text.find("'", self.pos)
        if end < 0 or "\n" in self.text[self.pos : end]:
            raise self.fail("unterminated literal string")
        value = self.text[self.pos : end]
        self.pos = end + 1
        return value

    def string(self) -> str | None:
        """A basic or literal string if one starts here, else None (nothing read)."""
        char = self.peek()
        if char == '"':
            return self.basic_string()
        if char == "'":
            return self.literal_string()
        return None

    # keys

    def key_segment(self) -> str:
        quoted = self.string()
        if quoted is not None:
            return quoted
        match = _BARE_KEY.match(self.text, self.pos)
        if match is None:
            raise self.fail("expected a key")
        self.pos = match.end()
        return match.group()

    def dotted_key(self) -> list[str]:
        segments = [self._spaced_segment()]
        while self.peek() == ".":
            self.pos += 1
            segments.append(self._spaced_segment())
        return segments

    def _spaced_segment(self) -> str:
        self.skip_space()
        segment = self.key_segment()
        self.skip_space()
        return segment

    # values

    def value(self) -> Any:
        quoted = self.string()
        if quoted is not None:
            return quoted
        char = self.peek()
        if char == "[":
            return self.array()
        if char == "{":
            return self.inline_table()
        return self.scalar()

    def array(self) -> list[Any]:
        self.expect("[")
        items: list[Any] = []
        while True:
            self.skip_space_and_newlines()
            if self.peek() == "]":
                self.pos += 1
                return items
            items.append(self.value())
            self.skip_space_and_newlines()
            if self.peek() == ",":
                self.pos += 1
                continue
            self.expect("]")
            return items

    def inline_table(self) -> dict[str, Any]:
        self.expect("{")
        table: dict[str, Any] = {}
        self.skip_space()
        if self.peek() == "}":
            self.pos += 1
            return table
        while True:
            path = self.dotted_key()
            self.expect("=")
            self.skip_space()
            _assign(table, path, self.value(), self)
            self.skip_space()
            if self.peek() == ",":
                self.pos += 1
                self.skip_space()
                continue
            self.expect("}")
            return table

    def scalar(self) -> Any:
        match = _SCALAR.match(self.text, self.pos)
        if match is None or not match.group():
            raise self.fail("expected a value")
        token = match.group()
        self.pos = match.end()
        if token == "true":
            return True
        if token == "false":
            return False
        cleaned = token.replace("_", "")
        if _INTEGER.fullmatch(token):
            return int(cleaned)
        if _FLOAT.fullmatch(token):
            return float(cleaned)
        raise TomlError(f"{token!r} is not a TOML value")


_SCALAR = re.compile(r"[A-Za-z0-9_+\-.:]*")
_INTEGER = re.compile(r"[+-]?(?:0|[1-9](?:_?[0-9])*)")
_FLOAT = re.compile(
    r"[+-]?(?:(?:0|[1-9](?:_?[0-9])*)(?:\.[0-9](?:_?[0-9])*)?(?:[eE][+-]?[0-9](?:_?[0-9])*)?"
    r"|inf|nan)"
)


def _assign(table: dict[str, Any], path: list[str], value: Any, reader: _Reader) -> None:
    current = table
    for segment in path[:-1]:
        nested: object = current.setdefault(segment, {})
        if not isinstance(nested, dict):
            raise reader.fail(f"key {segment!r} is both a value and a table")
        current = cast("dict[str, Any]", nested)
    if path[-1] in current:
        raise reader.fail(f"key {path[-1]!r} defined twice")
    current[path[-1]] = value


def decode_value(text: str) -> Any:
    """Decode one inline TOML value (surrounding spaces allowed).

    Raises:
        TomlError: ``text`` is not a single value of the supported subset.
    """
    reader = _Reader(text)
    reader.skip_space()
    value = reader.value()
    reader.skip_space()
    if not reader.at_end():
        raise reader.fail("trailing text after the value")
    return value


def split_key(text: str) -> list[str]:
    """Split a dotted TOML key into its segments, unquoting quoted ones.

    Raises:
        TomlError: ``text`` is not a dotted key.
    """
    reader = _Reader(text)
    segments = reader.dotted_key()
    if not reader.at_end():
        raise reader.fail("trailing text after the key")
    return segments
