"""How a failed Claude Code turn is classified into a FailureKind.

Claude Code reports its failures in the stream (the ``result`` frame's ``api_error_status``,
``terminal_reason``, ``subtype`` and text, and the synthetic assistant message's ``error``) and
usually leaves stderr empty, so the stream is read first and stderr only when it said nothing.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentshim.core.errors import FailureKind
from agentshim.core.failures import kind_from_status, kind_from_text

__all__ = ["CONTEXT_TERMINAL_REASONS", "SCHEMA_RETRIES_SUBTYPE", "StreamFailure", "classify"]

CONTEXT_TERMINAL_REASONS = frozenset({"prompt_too_long", "blocking_limit", "rapid_refill_breaker"})
"""``terminal_reason`` values Claude Code itself groups as a context-window limit."""

SCHEMA_RETRIES_SUBTYPE = "error_max_structured_output_retries"
"""The ``result`` subtype for a model that never produced schema-valid output."""

_AUTH_ERRORS = frozenset(
    {
        "authentication_failed",
        "oauth_org_not_allowed",
        "account_on_hold",
        "verification_required",
        "cloud_credential_error",
    }
)
_USAGE_ERRORS = frozenset({"billing_error"})
_MODEL_ERRORS = frozenset({"model_not_found"})
_TRANSIENT_ERRORS = frozenset({"overloaded", "rate_limit", "server_error"})

_PROMPT_TOO_LONG = re.compile(r"prompt is too long", re.IGNORECASE)
_API_ERROR_STATUS = re.compile(r"API Error: (\d{3})\b")
_USAGE_LIMIT_TEXT = re.compile(
    r"hit your limit|usage limit|credit balance|spend(?:ing)? limit", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class StreamFailure:
    """What the stream said about a failed turn, gathered by the parser."""

    text: str = ""
    subtype: str | None = None
    terminal_reason: str | None = None
    api_error_status: int | None = None
    assistant_error: str | None = None
    rate_limit_rejected: bool = False


def classify(failure: StreamFailure) -> FailureKind:
    """Return the FailureKind of a turn the stream reported as failed.

    Order matters: the schema subtype, then the context window (before any status, so a failed
    compaction's 5xx does not read as transient), then the assistant frame's error kind, then
    the HTTP status, then the text. A quota text turns a transient-looking failure into a
    usage limit, and so does a rate-limit window the stream reported as rejected.
    """
    text = failure.text
    if failure.subtype == SCHEMA_RETRIES_SUBTYPE:
        return FailureKind.SCHEMA
    if failure.terminal_reason in CONTEXT_TERMINAL_REASONS or _PROMPT_TOO_LONG.search(text):
        return FailureKind.CONTEXT_OVERFLOW
    kind = _kind_from_assistant_error(failure.assistant_error)
    if kind is None:
        kind = _kind_from_status(failure.api_error_status, text)
    if kind is None:
        kind = kind_from_text(text)
    if kind is None:
        kind = FailureKind.OTHER
    if kind in (FailureKind.TRANSIENT, FailureKind.OTHER) and (
        _USAGE_LIMIT_TEXT.search(text) or failure.rate_limit_rejected
    ):
        return FailureKind.USAGE_LIMIT
    return kind


def _kind_from_assistant_error(error: str | None) -> FailureKind | None:
    if error in _AUTH_ERRORS:
        return FailureKind.AUTH
    if error in _USAGE_ERRORS:
        return FailureKind.USAGE_LIMIT
    if error in _MODEL_ERRORS:
        return FailureKind.MODEL
    if error in _TRANSIENT_ERRORS:
        return FailureKind.TRANSIENT
    return None


def _kind_from_status(status: int | None, text: str) -> FailureKind | None:
    if status is None:
        match = _API_ERROR_STATUS.search(text)
        if match is None:
            return None
        status = int(match.group(1))
    kind = kind_from_status(status)
    return None if kind is FailureKind.OTHER else kind
