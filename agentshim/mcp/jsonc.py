"""JSON and JSONC config documents: read one into an object, write one back, find a key path.

A provider's config file may be JSON with comments and trailing commas (JSONC, as Gemini CLI
and opencode read). :func:`decode_document` reads either (or strict JSON only) and refuses a
document that could not be written back unchanged (``NaN``, ``1e999``, a lone surrogate);
:func:`encode_document` writes the plain JSON the CLI reads during a turn.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from typing import Any, cast

__all__ = ["UnreadableDocument", "decode_document", "digest", "encode_document", "object_at"]


class UnreadableDocument(Exception):
    """A config file that is not a readable, parseable JSON object; the message says why."""


def _reject_constant(name: str) -> Any:
    # NaN and Infinity are not JSON: no CLI reads them, and the encoder refuses them.
    raise ValueError(f"{name} is not a JSON value")


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_reject_constant)


def decode_document(data: bytes, *, jsonc: bool) -> dict[str, Any]:
    """The JSON object in ``data`` (UTF-8, JSONC too when ``jsonc``); raises UnreadableDocument."""
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise UnreadableDocument(
            f"it is not UTF-8 text ({exc.reason} at byte {exc.start})"
        ) from None
    try:
        value = _loads(text)
    except (ValueError, RecursionError) as exc:
        stripped = _strip_jsonc(text)
        value = None if stripped is None else _loads_or_none(stripped)
        if value is None:
            raise UnreadableDocument(f"it is not valid JSON ({exc})") from None
        if not jsonc:
            raise UnreadableDocument(
                "it contains comments or trailing commas (JSONC), which this CLI does not "
                "read; remove them, or configure the servers yourself"
            ) from None
    if not isinstance(value, dict):
        raise UnreadableDocument(f"its top level is not a JSON object but {type(value).__name__}")
    try:
        # A number too large for a float (1e999 is inf) or a lone surrogate ("\\ud800") parses
        # but cannot be written back: a document holding one is as unusable as NaN.
        encode_document(cast("dict[str, Any]", value))
    except (ValueError, RecursionError) as exc:  # UnicodeEncodeError is a ValueError
        raise UnreadableDocument(f"it holds a value JSON cannot carry ({exc})") from None
    return cast("dict[str, Any]", value)


def _loads_or_none(text: str) -> Any:
    try:
        return _loads(text)
    except (ValueError, RecursionError):
        return None


def _strip_jsonc(text: str) -> str | None:
    """``text`` without // and /* */ comments and trailing commas; None if it had none."""
    out: list[str] = []
    changed = False
    in_string = False
    i = 0
    n = len(text)
    while i < n:
        char = text[i]
        if in_string:
            if char == "\\":
                out.append(text[i : i + 2])
                i += 2
                continue
            in_string = char != '"'
            out.append(char)
            i += 1
            continue
        if char == '"':
            in_string = True
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            changed = True
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                return None
            out.append(" ")
            i = end + 2
            changed = True
            continue
        elif char == ",":
            j = i + 1
            # Look past whitespace and comments for the closing bracket of a trailing comma.
            while j < n:
                if text[j].isspace():
                    j += 1
                elif text.startswith("//", j):
                    end = text.find("\n", j)
                    j = n if end < 0 else end
                elif text.startswith("/*", j):
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                else:
                    break
            if j < n and text[j] in "}]":
                changed = True
                i += 1
                continue
        out.append(char)
        i += 1
    return "".join(out) if changed else None


def encode_document(document: Mapping[str, Any]) -> bytes:
    """``document`` as the pretty-printed UTF-8 JSON agentshim writes (two-space indents)."""
    return (json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode(
        "utf-8"
    )


def digest(data: bytes) -> str:
    """The SHA-256 of ``data`` in hex: how the journal recognises the file it wrote."""
    return hashlib.sha256(data).hexdigest()


def object_at(document: dict[str, Any], key_path: Sequence[str]) -> dict[str, Any] | None:
    """The object at ``key_path`` in ``document``; None when something on the way is not one."""
    node: Any = document
    for key in key_path:
        if not isinstance(node, dict):
            return None
        node = cast("dict[str, Any]", node).get(key)
    return cast("dict[str, Any]", node) if isinstance(node, dict) else None
