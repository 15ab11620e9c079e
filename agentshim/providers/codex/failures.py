"""Why a ``codex exec`` turn failed, read from the text Codex reports (it reports only text).

Codex sends a failed request's text on a ``turn.failed`` frame (and on ``error`` frames before
it). A 5xx body is replaced by a fixed "high demand" sentence; a 4xx keeps the API's message
and URL; a request the API refuses for its size becomes "Codex ran out of room in the model's
context window". Codex never reports SCHEMA: ``--output-schema`` is a strict response format
that constrains decoding.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from agentshim.core.errors import FailureKind
from agentshim.core.failures import kind_from_text

__all__ = ["classify", "classify_text"]

_RULES: tuple[tuple[re.Pattern[str], FailureKind], ...] = (
    (
        re.compile(
            r"context_length_exceeded|ran out of room in the model's context window",
            re.IGNORECASE,
        ),
        FailureKind.CONTEXT_OVERFLOW,
    ),
    (
        re.compile(
            r"hit your usage limit|usage_limit_(?:reached|exceeded)|insufficient_quota",
            re.IGNORECASE,
        ),
        FailureKind.USAGE_LIMIT,
    ),
    (
        re.compile(
            r"\b40[13]\b|unauthori[sz]ed|forbidden|not logged in|incorrect api key",
            re.IGNORECASE,
        ),
        FailureKind.AUTH,
    ),
    (
        re.compile(
            r"exceeded retry limit|stream disconnected|reconnecting|server_overloaded|"
            r"overloaded|internal_server_error|internal server error|service unavailable|"
            r"bad gateway|too many requests|rate limit|at capacity|http_connection_failed|"
            r"experiencing high demand|status:? ?(?:429|5\d\d)\b",
            re.IGNORECASE,
        ),
        FailureKind.TRANSIENT,
    ),
)


def classify_text(text: str) -> FailureKind | None:
    """Classify one error text, or return None when it says nothing recognizable."""
    if not text:
        return None
    for pattern, kind in _RULES:
        if pattern.search(text):
            return kind
    return kind_from_text(text)


def classify(texts: Iterable[str]) -> FailureKind:
    """Return the kind of the first of ``texts`` that classifies, OTHER when none does.

    Give the ``turn.failed`` text first, then the ``error`` frames' texts, newest first.
    """
    for text in texts:
        kind = classify_text(text)
        if kind is not None:
            return kind
    return FailureKind.OTHER
