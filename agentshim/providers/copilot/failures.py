"""Why a Copilot CLI turn failed, read from its ``session.error`` and ``model.call_failure`` frames.

Copilot retries a failed model call itself (a 401 twice, a 5xx five times) and then writes one
``session.error`` with an ``errorType`` category, usually an HTTP ``statusCode`` and a message.
The last ``model.call_failure`` before it carries the provider's own ``errorCode`` and a
``failureKind`` (``api`` for an HTTP answer, ``transport`` when no answer came at all).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentshim.core.errors import FailureKind
from agentshim.core.failures import kind_from_status, kind_from_text

__all__ = ["CallFailure", "SessionErrorFrame", "classify"]

# "The provider rejected the prompt as too long, but automatic recovery could not reduce it."
_TOO_LONG = re.compile(
    r"\b(?:prompt|input|context|conversation|request)\b[^.\n]*\btoo (?:long|large)\b",
    re.IGNORECASE,
)
_CONTEXT_CODES = frozenset({"context_length_exceeded", "context_window_exceeded"})
_BY_ERROR_TYPE = {
    "authentication": FailureKind.AUTH,
    "authorization": FailureKind.AUTH,
    "context_limit": FailureKind.CONTEXT_OVERFLOW,
    "quota": FailureKind.USAGE_LIMIT,
    "rate_limit": FailureKind.TRANSIENT,
}


@dataclass(frozen=True, slots=True)
class SessionErrorFrame:
    """What a ``session.error`` frame said."""

    message: str
    error_type: str | None = None
    status: int | None = None
    error_code: str | None = None


@dataclass(frozen=True, slots=True)
class CallFailure:
    """What the last ``model.call_failure`` frame said about one failed model call."""

    status: int | None = None
    error_code: str | None = None
    failure_kind: str | None = None


def classify(error: SessionErrorFrame, last_call: CallFailure | None) -> FailureKind:
    """Classify a failed turn from what Copilot said about it.

    The order: the error category, then the signs of a context overflow, the HTTP status, the
    message text, and finally a model call that never got an HTTP answer (TRANSIENT). The overflow check comes before the status because Copilot compacts and retries an
    overflowing prompt, so the status of the final attempt need not be the 400 that started it.
    """
    by_type = _BY_ERROR_TYPE.get(error.error_type or "")
    if by_type is not None:
        return by_type
    codes = {error.error_code, last_call.error_code if last_call is not None else None}
    if _TOO_LONG.search(error.message) or codes & _CONTEXT_CODES:
        return FailureKind.CONTEXT_OVERFLOW
    status = error.status if error.status is not None else _status(last_call)
    if status is not None:
        kind = kind_from_status(status)
        if kind is not FailureKind.OTHER:
            return kind
    by_text = kind_from_text(error.message)
    if by_text is not None:
        return by_text
    if last_call is not None and last_call.failure_kind == "transport":
        return FailureKind.TRANSIENT
    return FailureKind.OTHER


def _status(call: CallFailure | None) -> int | None:
    return call.status if call is not None else None
