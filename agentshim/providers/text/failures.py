"""Why a text harness failed, read from what it printed on stderr."""

from __future__ import annotations

from agentshim.core.errors import FailureKind
from agentshim.core.failures import kind_from_text

__all__ = ["classify"]


def classify(stderr: str) -> FailureKind:
    """Classify the harness's stderr by its words (rate limits, auth, ...); else OTHER."""
    return kind_from_text(stderr) or FailureKind.OTHER
