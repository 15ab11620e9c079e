"""Why a harness's turn failed, read from the message of its fatal ``error`` event."""

from __future__ import annotations

from agentshim.core.errors import FailureKind
from agentshim.core.failures import kind_from_text

__all__ = ["classify"]


def classify(message: str) -> FailureKind:
    """Classify an error message by its words (rate limits, auth, context overflow, ...)."""
    return kind_from_text(message) or FailureKind.OTHER
