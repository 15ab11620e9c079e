"""Typed reads of values decoded from a CLI's JSON output, which may hold anything.

Each function takes whatever ``json.loads`` produced for one field and returns it as the type
a parser wants, or a stated fallback (None, an empty value or 0) when the field has another
type. None of them raises. A JSON ``true``/``false`` is never a number here, although Python's
``bool`` is a subclass of ``int``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

__all__ = [
    "as_amount",
    "as_count",
    "as_int",
    "as_mapping",
    "as_str",
    "compact_json",
    "json_kind",
    "list_or_empty",
    "mapping_or_empty",
    "str_or_empty",
    "to_text",
]


# bool before the numbers: a JSON true is not a number, although Python's bool is an int.
_JSON_KINDS: tuple[tuple[type | tuple[type, ...], str], ...] = (
    (bool, "a boolean"),
    ((int, float), "a number"),
    (str, "a string"),
    (list, "an array"),
    (Mapping, "an object"),
)


def as_mapping(value: object) -> Mapping[str, Any] | None:
    """Return ``value`` when it is a JSON object, else None."""
    if isinstance(value, dict):
        return value  # pyright: ignore[reportUnknownVariableType]
    return None


def mapping_or_empty(value: object) -> Mapping[str, Any]:
    """Return ``value`` when it is a JSON object, else an empty one."""
    if isinstance(value, dict):
        return value  # pyright: ignore[reportUnknownVariableType]
    return {}


def list_or_empty(value: object) -> list[Any]:
    """Return ``value`` when it is a JSON array (the same list, not a copy), else an empty one."""
    return value if isinstance(value, list) else []  # pyright: ignore[reportUnknownVariableType]


def as_str(value: object) -> str | None:
    """Return ``value`` when it is a string, else None."""
    return value if isinstance(value, str) else None


def str_or_empty(value: object) -> str:
    """Return ``value`` when it is a string, else ``""``."""
    return value if isinstance(value, str) else ""


def to_text(value: object) -> str:
    """Return ``value`` as text: a string as it is, null as ``""``, anything else as JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    try:
        return json.dumps(value, ensure_ascii=False)
    except (TypeError, ValueError):
        return str(value)


def compact_json(value: object) -> str:
    """Return ``value`` as compact JSON (no spaces, non-ASCII kept), or its repr if it has none."""
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        return repr(value)


def as_int(value: object) -> int | None:
    """Return ``value`` when it is a whole number (``3`` or ``3.0``, any sign), else None."""
    if type(value) is int:
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return None


def as_count(value: object, *, whole_floats: bool = True) -> int:
    """Return ``value`` as a count: a positive whole number, else 0 (text, negatives, bools).

    With ``whole_floats=False`` only an integer literal counts, so ``3.0`` is 0 as well.
    """
    if type(value) is int:
        return value if value > 0 else 0
    if whole_floats and isinstance(value, float) and value.is_integer() and value > 0:
        return int(value)
    return 0


def as_amount(value: object) -> float | None:
    """Return ``value`` as a float when it is a finite, non-negative number, else None.

    For costs and durations: NaN, infinities, integers too large for a float and negative
    numbers are None, not a figure.
    """
    if value.__class__ is float:  # the common case, checked without isinstance
        number: float = value  # pyright: ignore[reportAssignmentType]
    elif isinstance(value, bool) or not isinstance(value, int | float):
        return None
    else:
        try:
            number = float(value)
        except OverflowError:
            return None
    if not math.isfinite(number) or number < 0:
        return None
    return number


def json_kind(value: object) -> str:
    """How a message names the JSON type of ``value`` ("a string", "an array", ...).

    ``"null"``, ``"a boolean"``, ``"a number"``, ``"a string"``, ``"an array"`` (a list) or
    ``"an object"`` (a mapping); any other value by its Python type's name.
    """
    if value is None:
        return "null"
    for types, kind in _JSON_KINDS:
        if isinstance(value, types):
            return kind
    return type(value).__name__
