"""Default error wording shared by the wire formats."""

from __future__ import annotations

from collections.abc import Mapping

__all__ = ["CONTEXT_OVERFLOW_CODE", "default_message"]

#: The OpenAI error code that means "the prompt does not fit the context window".
CONTEXT_OVERFLOW_CODE = "context_length_exceeded"

_MESSAGES: Mapping[int, str] = {
    400: "Invalid request",
    401: "Invalid API key",
    403: "Permission denied",
    404: "Not found",
    408: "Request timed out",
    413: "Request too large",
    429: "Rate limit exceeded",
    500: "Internal server error",
    502: "Bad gateway",
    503: "Service unavailable",
    504: "Gateway timeout",
    529: "Overloaded",
}


def default_message(status: int) -> str:
    """A short human message for an HTTP error status."""
    return _MESSAGES.get(status, f"HTTP error {status}")
