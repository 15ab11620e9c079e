"""Checks on numbers a caller passes, shared by every layer that accepts them."""

from __future__ import annotations

import math
import numbers

__all__ = ["is_positive_seconds"]


def is_positive_seconds(value: object) -> bool:
    """Whether ``value`` is a finite real number above zero (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    seconds = float(value)
    return math.isfinite(seconds) and seconds > 0
