"""Why a turn failed (:class:`FailureKind`), and provider-neutral rules to tell it from text.

Providers read their CLI's structured frames first and fall back to these rules (an HTTP
status, or the error's words). :class:`FailureKind` is named in :mod:`agentshim.core.errors`
too, beside the errors that carry it.
"""

from __future__ import annotations

import enum
import re

from agentshim.core.lifecycle_kinds import OUTPUT_TRUNCATED

__all__ = [
    "OUTPUT_TRUNCATED",
    "FailureKind",
    "kind_from_status",
    "kind_from_text",
    "truncation_notice",
]


class FailureKind(enum.Enum):
    """Why a turn failed, as far as the CLI's own output tells."""

    TRANSIENT = "transient"
    """A retry later may succeed: 5xx, overloaded, 429 rate limit, connection lost."""
    USAGE_LIMIT = "usage_limit"
    """The account's usage or spending limit is reached; retrying soon will not help."""
    AUTH = "auth"
    """Credentials are missing, invalid or expired."""
    SCHEMA = "schema"
    """The model could not produce output matching the requested schema."""
    CONTEXT_OVERFLOW = "context_overflow"
    """The prompt does not fit the model's context window; start a fresh conversation."""
    MODEL = "model"
    """The model API does not know the model (or the account cannot use it); pick another."""
    OTHER = "other"
    """Anything the CLI did not say enough about to classify."""


# OUTPUT_TRUNCATED (re-exported here): the Lifecycle kind of an answer cut off at the model's
# output-token limit, reported with :func:`truncation_notice` in ``TurnResult.notices``.


def truncation_notice(reason: str) -> str:
    """The notice of an answer cut off at the output-token limit (``reason``: the CLI's word)."""
    return (
        f"the answer was cut off at the model's output-token limit (stop reason {reason!r}); "
        "ask for a shorter answer or raise the model's output limit"
    )


_CONTEXT = re.compile(
    r"prompt is too long|context[ _]length[ _]exceeded|context window|ran out of room|"
    r"maximum context length|input token count.*exceeds|too many tokens|prompt too long|"
    r"context_window_exceeded|contextwindowexceeded|request too large for model",
    re.IGNORECASE,
)
# Each API's own words for a model it does not serve. Codex's "Model metadata for `m` not
# found" is a warning about its local catalogue, not this, and must not match.
_MODEL = re.compile(
    r"issue with the selected model|model_not_found|modelnotfounderror|"
    r"\bthe model [`'\"]?[^\s`'\"]+[`'\"]? does not exist|"
    r"\bmodel [`'\"][^`'\"\n]+[`'\"] (?:is )?not found|"
    r"\bmodels/\S+ is not found|\bmodel not found\b|\bunknown model\b|"
    r"\bmodel\b[^.\n]{0,80}\bis not supported\b",
    re.IGNORECASE,
)
_USAGE_LIMIT = re.compile(
    r"usage limit|quota exceeded|insufficient[_ ]quota|billing|credit balance|"
    r"spending limit|out of credits|resource_exhausted.*quota|hit your limit|"
    r"exhausted your [^.\n]{0,40}quota|payment required",
    re.IGNORECASE,
)
_AUTH = re.compile(
    r"\b401\b|\b403\b|unauthori[sz]ed|authentication|(?:invalid|incorrect) api key|"
    r"invalid x-api-key|api key (?:is )?(?:invalid|expired|not valid)|no api key found|"
    r"api key not valid|not logged in|please run /login|permission denied.*api|forbidden|"
    r"invalid_api_key|oauth token|token (?:has )?expired|invalid auth method|"
    r"set an auth method|(?:log|sign) ?in again",
    re.IGNORECASE,
)
_TRANSIENT = re.compile(
    r"\b429\b|\b5\d\d\b|overloaded|rate[ _-]?limit|too many requests|timed? ?out|"
    r"temporarily unavailable|service unavailable|internal server error|bad gateway|"
    r"connection (?:reset|refused|error|closed)|econnreset|econnrefused|reconnect|"
    r"retries exhausted|stream disconnected|network error|socket hang up",
    re.IGNORECASE,
)
_STATUS = re.compile(r"\b([45]\d\d)\b")


def kind_from_status(status: int) -> FailureKind:
    """Classify an HTTP status: 401/403 AUTH, 402 USAGE_LIMIT, 408/409/429/5xx TRANSIENT, 413."""
    if status in (401, 403):
        return FailureKind.AUTH
    if status == 402:
        return FailureKind.USAGE_LIMIT
    if status == 413:  # a request too large for the model: CONTEXT_OVERFLOW
        return FailureKind.CONTEXT_OVERFLOW
    if status in (408, 409, 429) or 500 <= status <= 599:
        return FailureKind.TRANSIENT
    return FailureKind.OTHER


def kind_from_text(text: str) -> FailureKind | None:
    """Classify free error text, or return None when it says nothing recognizable.

    Context overflow is checked first: a failed compaction can carry a 5xx status while the
    real cause is the context window. A model the API does not know comes next (MODEL): its
    404 text can mention access, which must not read as AUTH.
    """
    if not text:
        return None
    if _CONTEXT.search(text):
        return FailureKind.CONTEXT_OVERFLOW
    if _MODEL.search(text):
        return FailureKind.MODEL
    if _USAGE_LIMIT.search(text):
        return FailureKind.USAGE_LIMIT
    if _AUTH.search(text):
        return FailureKind.AUTH
    if _TRANSIENT.search(text):
        return FailureKind.TRANSIENT
    match = _STATUS.search(text)
    if match:
        kind = kind_from_status(int(match.group(1)))
        return kind if kind is not FailureKind.OTHER else None
    return None
