"""Cutting text a CLI printed down to what a message or an error may quote.

Private to agentshim: the errors keep bounded tails and quote one line, the health checks
quote a version line, and all of them cut the same way.
"""

from __future__ import annotations

__all__ = [
    "LINE_QUOTE_CHARS",
    "MAX_TITLE_CHARS",
    "bounded_head",
    "bounded_tail",
    "clean_title",
    "first_line",
    "last_line",
]

_CUT = "[...truncated...]"

#: How much of one line a message quotes: enough for any error line a CLI prints.
LINE_QUOTE_CHARS = 500


def bounded_head(text: str, limit: int) -> str:
    """At most the first ``limit`` characters of ``text``, a cut marked by a suffix.

    For a failure's own words, which lead with what matters.
    """
    if len(text) <= limit:
        return text
    return text[:limit] + _CUT


def bounded_tail(text: str, limit: int) -> str:
    """At most the last ``limit`` characters of ``text``, a cut marked by a prefix line.

    For a process's output, whose end says why it stopped.
    """
    if len(text) <= limit:
        return text
    return _CUT + "\n" + text[-limit:]


def first_line(text: str, limit: int = LINE_QUOTE_CHARS) -> str:
    """The first line of ``text`` that is not blank, stripped and cut to ``limit``; or ""."""
    for line in text.splitlines():
        if line.strip():
            return line.strip()[:limit]
    return ""


def last_line(text: str, limit: int = LINE_QUOTE_CHARS) -> str:
    """The last line of ``text`` that is not blank, stripped and cut to ``limit``; or ""."""
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()[:limit]
    return ""


MAX_TITLE_CHARS = 200
"""The longest title :func:`clean_title` gives."""


def clean_title(value: object) -> str | None:
    """``value`` as a title: one line, whitespace runs collapsed, trimmed, at most 200 chars.

    None for a non-string or an empty result.
    """
    if not isinstance(value, str):
        return None
    text = " ".join(value.split())[:MAX_TITLE_CHARS].rstrip()
    return text or None
