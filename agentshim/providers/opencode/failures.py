"""Why an opencode turn failed, read from the ``error`` frame it prints.

The frame's ``error`` has a ``name`` (``APIError``, ``ContextOverflowError``,
``ProviderAuthError``, ...) and ``data`` with the API's ``message``, its ``statusCode`` and
whether opencode would retry it (``isRetryable``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentshim.core.errors import FailureKind
from agentshim.core.failures import kind_from_status, kind_from_text
from agentshim.core.jsonvalues import mapping_or_empty

__all__ = ["classify", "error_message", "read_error"]


def error_message(error: Mapping[str, Any]) -> str:
    """The error's message (``data.message``), or its ``name`` when it has none."""
    name = error.get("name")
    name = name if isinstance(name, str) else "error"
    message = mapping_or_empty(error.get("data")).get("message")
    return message if isinstance(message, str) and message else name


def classify(error: Mapping[str, Any]) -> FailureKind:
    """Return an ``error`` frame's kind, from ``name``, ``statusCode`` and ``isRetryable``.

    ``ContextOverflowError`` is CONTEXT_OVERFLOW, ``ProviderAuthError`` and a 401/403 AUTH; any
    other error is classified by its text first (a 429 saying "quota" is a usage limit, a 404
    naming the model MODEL), then its status, then ``isRetryable`` (TRANSIENT).
    """
    name = error.get("name")
    if name == "ContextOverflowError":
        return FailureKind.CONTEXT_OVERFLOW
    if name == "ProviderAuthError":
        return FailureKind.AUTH
    data = mapping_or_empty(error.get("data"))
    status = data.get("statusCode")
    by_status = (
        kind_from_status(status)
        if isinstance(status, int) and not isinstance(status, bool)
        else FailureKind.OTHER
    )
    if by_status is FailureKind.AUTH:
        return by_status
    by_text = kind_from_text(error_message(error))
    if by_text is not None:
        return by_text
    if by_status is not FailureKind.OTHER:
        return by_status
    if data.get("isRetryable") is True:
        return FailureKind.TRANSIENT
    return FailureKind.OTHER


def read_error(error: Mapping[str, Any]) -> tuple[str, FailureKind]:
    """The error's message and kind together, as the parser reports them."""
    return error_message(error), classify(error)
