"""Defensive readers for JSON the server did not write, and one compact encoder.

Request bodies come from real CLIs and may hold anything; these helpers turn "not the shape I
expected" into an empty value instead of an exception, so one odd field never fails a request.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TypeAlias, cast

__all__ = [
    "JsonObject",
    "JsonValue",
    "as_int",
    "as_list",
    "as_object",
    "as_str",
    "dumps",
    "text_of",
]

#: Any value ``json.loads`` can return (and ``dumps`` can write).
JsonValue: TypeAlias = (
    "bool | int | float | str | Sequence[JsonValue] | Mapping[str, JsonValue] | None"
)
#: A JSON object as the renderers build it.
JsonObject: TypeAlias = dict[str, JsonValue]


def as_object(value: object) -> Mapping[str, object]:
    """Return ``value`` when it is a JSON object, else an empty mapping."""
    if isinstance(value, Mapping):
        return cast("Mapping[str, object]", value)
    return {}


def as_list(value: object) -> Sequence[object]:
    """Return ``value`` when it is a JSON array, else an empty sequence."""
    if isinstance(value, list):
        return cast("list[object]", value)
    return ()


def as_str(value: object) -> str:
    """Return ``value`` when it is a string, else the empty string."""
    return value if isinstance(value, str) else ""


def as_int(value: object) -> int | None:
    """Return ``value`` when it is an integer (not a bool), else None."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return None


def text_of(content: object, *, text_types: tuple[str, ...] = ("text",)) -> str:
    """Join the text of a content field that is either a string or a list of typed parts.

    Parts whose ``type`` is not in ``text_types`` (tool results, images) contribute nothing;
    parts without a ``type`` but with a ``text`` (Gemini) do.
    """
    if isinstance(content, str):
        return content
    pieces: list[str] = []
    for part in as_list(content):
        obj = as_object(part)
        kind = obj.get("type")
        if (kind is None or kind in text_types) and isinstance(obj.get("text"), str):
            pieces.append(as_str(obj.get("text")))
    return "\n".join(pieces)


def dumps(value: object) -> str:
    """Encode compactly, keeping non-ASCII text readable (it is sent as UTF-8)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))
