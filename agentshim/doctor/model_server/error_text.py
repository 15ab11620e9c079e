"""Error wording shared by the wire formats: each HTTP error status's message and API names."""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple

from .responses import HttpError

__all__ = [
    "CONTEXT_OVERFLOW_CODE",
    "anthropic_error_type",
    "default_message",
    "error_message",
    "gemini_status",
]

#: The OpenAI error code that means "the prompt does not fit the context window".
CONTEXT_OVERFLOW_CODE = "context_length_exceeded"


class _Words(NamedTuple):
    message: str
    anthropic: str = "api_error"
    gemini: str = "UNKNOWN"


# Each status's short message, then the error type Anthropic answers it with and the status
# name Gemini does (``api_error`` and ``UNKNOWN`` where they have none of their own).
_STATUSES: Mapping[int, _Words] = {
    400: _Words("Invalid request", "invalid_request_error", "INVALID_ARGUMENT"),
    401: _Words("Invalid API key", "authentication_error", "UNAUTHENTICATED"),
    403: _Words("Permission denied", "permission_error", "PERMISSION_DENIED"),
    404: _Words("Not found", "not_found_error", "NOT_FOUND"),
    408: _Words("Request timed out"),
    413: _Words("Request too large", "request_too_large"),
    429: _Words("Rate limit exceeded", "rate_limit_error", "RESOURCE_EXHAUSTED"),
    500: _Words("Internal server error", gemini="INTERNAL"),
    502: _Words("Bad gateway"),
    503: _Words("Service unavailable", gemini="UNAVAILABLE"),
    504: _Words("Gateway timeout", gemini="DEADLINE_EXCEEDED"),
    529: _Words("Overloaded", "overloaded_error"),
}
_UNLISTED = _Words("")


def default_message(status: int) -> str:
    """A short human message for an HTTP error status."""
    words = _STATUSES.get(status)
    return f"HTTP error {status}" if words is None else words.message


def anthropic_error_type(status: int) -> str:
    """The ``error.type`` Anthropic answers an HTTP error status with."""
    return _STATUSES.get(status, _UNLISTED).anthropic


def gemini_status(status: int) -> str:
    """The ``error.status`` name Gemini answers an HTTP error status with."""
    return _STATUSES.get(status, _UNLISTED).gemini


def error_message(error: HttpError, *, overflow: str, bad_key: str) -> str:
    """The message an API's error body carries for ``error``.

    The rule's own message; else the API's words for a prompt longer than the context window
    (``overflow``) or for a 401 (``bad_key``); else the status's short message.
    """
    if error.message is not None:
        return error.message
    if error.code == CONTEXT_OVERFLOW_CODE:
        return overflow
    if error.status == 401:
        return bad_key
    return default_message(error.status)
