"""Checks on values a caller passes, shared by every layer that accepts them.

Each check raises :class:`~agentshim.core.errors.InvalidRequestError` naming the field as
``owner.field`` and saying what a good value looks like, so every layer refuses a bad value
with the same words.
"""

from __future__ import annotations

import math
import numbers
import os
import re
from collections.abc import Iterable
from typing import TypeVar, cast

from agentshim.core._error_base import InvalidRequestError

__all__ = [
    "instance",
    "is_positive_seconds",
    "matching",
    "model_name",
    "seconds",
    "sequence",
    "working_directory",
]

_T = TypeVar("_T")


def is_positive_seconds(value: object) -> bool:
    """Whether ``value`` is a finite real number above zero (a bool is not a number here)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        return False
    number = float(value)
    return math.isfinite(number) and number > 0


def _field(owner: str, field: str) -> str:
    return f"{owner}.{field}" if owner else field


def seconds(owner: str, field: str, value: object, *, positive: bool = False) -> float:
    """``value`` as a float of seconds: finite, and above zero or not below it.

    A bool is not a number here. ``positive`` asks for a value above zero; otherwise zero is
    allowed.

    Raises:
        InvalidRequestError: ``value`` is not a real number, not finite, or out of range.
    """
    wanted = "a positive finite" if positive else "a finite, non-negative"
    if not isinstance(value, bool) and isinstance(value, numbers.Real):
        number = float(value)
        if math.isfinite(number) and (number > 0 if positive else number >= 0):
            return number
    name = _field(owner, field)
    raise InvalidRequestError(
        name,
        f"{value!r} is not {wanted} number of seconds",
        f"{name} must be {wanted} number of seconds, not {value!r}",
    )


def instance(owner: str, field: str, value: object, cls: type[_T], hint: str) -> _T:
    """``value`` itself when it is an instance of ``cls``.

    ``hint`` says what to pass instead, for example ``"a TurnRequest or a prompt string"``.

    Raises:
        InvalidRequestError: ``value`` is not an instance of ``cls``.
    """
    if isinstance(value, cls):
        return value
    name = _field(owner, field)
    raise InvalidRequestError(
        name,
        f"{type(value).__name__} is not {cls.__name__}",
        f"{name} must be {hint}, not {type(value).__name__} {value!r:.80}",
    )


def matching(
    owner: str, field: str, value: object, pattern: re.Pattern[str], what: str, hint: str
) -> str:
    """``value`` itself when it is a string that ``pattern`` matches whole.

    ``what`` names a good value, for example ``"a valid tool name"``; ``hint`` is the whole
    advice the error gives, saying what a good value looks like.

    Raises:
        InvalidRequestError: ``value`` is not a string, or ``pattern`` does not match all of it.
    """
    if isinstance(value, str) and pattern.fullmatch(value):
        return value
    raise InvalidRequestError(_field(owner, field), f"{value!r} is not {what}", hint)


def sequence(owner: str, field: str, value: object, holds: str) -> tuple[object, ...]:
    """``value``'s items as a tuple, when it is an iterable other than a string.

    A string is refused although it iterates: it is one value, not a sequence of them.
    ``holds`` says what the items are, for example ``"model names such as ('sonnet',)"``;
    the items themselves are left for the caller to check.

    Raises:
        InvalidRequestError: ``value`` is a string or not iterable.
    """
    if isinstance(value, str) or not isinstance(value, Iterable):
        name = _field(owner, field)
        raise InvalidRequestError(
            name,
            f"{value!r} is not a sequence",
            f"{name} must be a sequence of {holds}, not {value!r}; wrap a single one in a list",
        )
    return tuple(cast("Iterable[object]", value))


def model_name(owner: str, field: str, value: object) -> str | None:
    """``value`` as a model name, or None (the CLI's own model).

    Raises:
        InvalidRequestError: ``value`` is not a str, or is empty, only whitespace, or holds a
            control character.
    """
    if value is None:
        return None
    name = _field(owner, field)
    if not isinstance(value, str) or not value.strip() or not value.isprintable():
        raise InvalidRequestError(
            name,
            f"{value!r:.80} is not a model name",
            f"{name} must be a model name (such as the CLI's --model takes) or None for the "
            f"CLI's default, not {value!r:.80}",
        )
    return value


def working_directory(owner: str, field: str, value: str | None) -> str | None:
    """``value`` when it names an existing directory of this machine, or None.

    For paths the host itself runs a CLI in; a path another machine or a container sees is
    checked where it is used.

    Raises:
        InvalidRequestError: ``value`` does not exist or is not a directory.
    """
    if value is None or os.path.isdir(value):
        return value
    name = _field(owner, field)
    what = "is not a directory" if os.path.exists(value) else "does not exist"
    raise InvalidRequestError(
        name,
        f"{value!r} {what}",
        f"the working directory {value!r} ({name}) {what}; create it or pass another cwd",
    )
