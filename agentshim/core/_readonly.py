"""The read-only default of a frozen value's mapping field."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

__all__ = ["empty_mapping"]


def empty_mapping() -> Mapping[str, Any]:
    """A new empty read-only mapping: ``field(default_factory=empty_mapping)``.

    A frozen value must not share a mutable default, and ``dict`` would give a field typed
    ``Mapping[str, X]`` an unknown value type.
    """
    return MappingProxyType({})
