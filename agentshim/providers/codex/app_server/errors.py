"""What kind of failure the app-server reports, from ``codexErrorInfo`` and its message.

``codexErrorInfo`` is a camelCase string (``contextWindowExceeded``, ``usageLimitExceeded``,
``internalServerError``, ``other``...) or an object naming a failed connection
(``{"httpConnectionFailed": {"httpStatusCode": 401}}``). It decides where it says something;
``other`` and unknown values fall back to the message, read like ``codex exec``'s text.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentshim.core.errors import FailureKind
from agentshim.core.jsonvalues import as_mapping
from agentshim.providers.codex.failures import classify_text

__all__ = ["RESUME_REFUSED_CODE", "failure_kind", "is_unknown_thread"]

RESUME_REFUSED_CODE = -32600
"""The error code of ``thread/resume`` for a thread Codex does not have (or a bad id)."""

_BY_INFO: Mapping[str, FailureKind] = {
    "contextWindowExceeded": FailureKind.CONTEXT_OVERFLOW,
    "sessionBudgetExceeded": FailureKind.USAGE_LIMIT,
    "usageLimitExceeded": FailureKind.USAGE_LIMIT,
    "rateLimitExceeded": FailureKind.USAGE_LIMIT,
    "serverOverloaded": FailureKind.TRANSIENT,
    "internalServerError": FailureKind.TRANSIENT,
    "unauthorized": FailureKind.AUTH,
    "modelNotFound": FailureKind.MODEL,
}
_CONNECTION_KEYS = (
    "httpConnectionFailed",
    "responseStreamConnectionFailed",
    "responseStreamDisconnected",
    "responseTooManyFailedAttempts",
)


def _status_kind(status: object) -> FailureKind | None:
    if type(status) is not int:
        return None
    if status in (401, 403):
        return FailureKind.AUTH
    if status == 429:
        return FailureKind.USAGE_LIMIT
    if status >= 500:
        return FailureKind.TRANSIENT
    return None


def failure_kind(info: object, message: str) -> FailureKind:
    """The kind of a failure Codex describes with ``info`` (codexErrorInfo) and ``message``."""
    if isinstance(info, str):
        kind = _BY_INFO.get(info)
        if kind is not None:
            return kind
    else:
        members = as_mapping(info) or {}
        for key in _CONNECTION_KEYS:
            detail = as_mapping(members.get(key))
            if detail is not None:
                kind = _status_kind(detail.get("httpStatusCode"))
                if kind is not None:
                    return kind
            if key in members and key != "httpConnectionFailed":
                # A stream that broke or gave up retrying: a later try may well succeed.
                return classify_text(message) or FailureKind.TRANSIENT
    return classify_text(message) or FailureKind.OTHER


def is_unknown_thread(code: int, message: str) -> bool:
    """Whether a ``thread/resume`` error says Codex has no such thread (or cannot read its id)."""
    text = message.lower()
    return code == RESUME_REFUSED_CODE and (
        "no rollout found" in text or "invalid session id" in text or "not found" in text
    )
