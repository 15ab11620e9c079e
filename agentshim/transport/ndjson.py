"""The one encoder of what a long-lived transport writes to a CLI's stdin.

A CLI reading JSON lines treats a line it cannot parse as fatal (Claude Code exits on it), so
every frame goes through :func:`encode_frame`, which either returns exactly one valid JSON
line or raises before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentshim.core.errors import InvalidRequestError

__all__ = ["encode_frame"]

_ENCODER = json.JSONEncoder(ensure_ascii=True, allow_nan=False, separators=(",", ":"))


def encode_frame(frame: Mapping[str, Any]) -> str:
    """``frame`` as one JSON line ending in a newline, with no other line break in it.

    ASCII only (every other character escaped), so a lone surrogate or a byte-order mark in
    a prompt can neither break the UTF-8 on the pipe nor split the line; NaN and infinities
    are refused, as JSON has no spelling for them.

    Raises:
        InvalidRequestError: ``frame`` holds something JSON cannot represent (a NaN, a set,
            an object, a key that is not a string); nothing should be written then.
    """
    try:
        text = _ENCODER.encode(frame)
    except (TypeError, ValueError, RecursionError) as error:
        raise InvalidRequestError(
            "frame",
            f"cannot be written as one JSON line: {error}",
            f"a message for the CLI cannot be written as JSON ({error}); pass only strings, "
            "numbers, booleans, None, lists and string-keyed mappings",
        ) from error
    return text + "\n"
