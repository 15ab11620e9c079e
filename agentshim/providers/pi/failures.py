"""Why a Pi turn failed, read from an assistant message's ``errorMessage``.

Pi puts the model API's answer in ``errorMessage`` as ``"<HTTP status> <response body>"``
(``401 {"type":"error",...}``), or the raw error event when a stream broke midway.
"""

from __future__ import annotations

import re

from agentshim.core.errors import FailureKind
from agentshim.core.failures import kind_from_status, kind_from_text

__all__ = ["classify"]

_LEADING_STATUS = re.compile(r"\s*([1-5]\d\d)\b")


def classify(message: str) -> FailureKind:
    """Classify an ``errorMessage``: context overflow, then the HTTP status, then the text.

    Overflow is checked first: its status is a plain 400, which says nothing by itself.
    """
    by_text = kind_from_text(message)
    if by_text is FailureKind.CONTEXT_OVERFLOW:
        return by_text
    match = _LEADING_STATUS.match(message)
    if match is not None:
        by_status = kind_from_status(int(match.group(1)))
        if by_status is not FailureKind.OTHER:
            return by_status
    return by_text or FailureKind.OTHER
