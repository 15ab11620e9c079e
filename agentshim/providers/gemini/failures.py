"""Why a Gemini CLI turn failed, read from its exit code and what it said.

The CLI exits with a code of its own for a few failures (41 and 145 for auth, 244 after its
retries ran out); an HTTP 400 (exit 144) says why only in its message. The stream's ``result``
frame, when there was one, has already classified the turn; its kind is kept.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentshim.core.errors import CliExitError, FailureKind
from agentshim.core.failures import kind_from_text

__all__ = [
    "EXIT_AUTH_CONFIG",
    "EXIT_BAD_REQUEST",
    "EXIT_RESUME_FAILED",
    "EXIT_RETRIES_EXHAUSTED",
    "EXIT_UNAUTHORIZED",
    "classify",
]

EXIT_AUTH_CONFIG = 41
"""No usable auth method (e.g. ``Invalid auth method selected.``)."""
EXIT_RESUME_FAILED = 42
"""Input error; with ``--resume``, the session could not be loaded."""
EXIT_BAD_REQUEST = 144
"""The model API answered HTTP 400 (the message says why: context overflow, bad argument)."""
EXIT_UNAUTHORIZED = 145
"""The model API answered HTTP 401."""
EXIT_RETRIES_EXHAUSTED = 244
"""The CLI gave up after retrying a failing request (a persistent 5xx)."""

_EXIT_KINDS: Mapping[int, FailureKind] = {
    EXIT_AUTH_CONFIG: FailureKind.AUTH,
    EXIT_UNAUTHORIZED: FailureKind.AUTH,
    EXIT_RETRIES_EXHAUSTED: FailureKind.TRANSIENT,
}


def classify(error: CliExitError) -> FailureKind:
    """Return the FailureKind of a failed run.

    A kind the stream already gave is kept; then the exit code (41 and 145 AUTH, 244
    TRANSIENT), then the error's detail, and for exit 144 also stderr, by their text.
    """
    if error.kind is not FailureKind.OTHER:
        return error.kind
    kind = _EXIT_KINDS.get(error.returncode)
    if kind is not None:
        return kind
    kind = kind_from_text(error.detail)
    if kind is None and error.returncode == EXIT_BAD_REQUEST:
        kind = kind_from_text(error.stderr)
    return kind or FailureKind.OTHER
