"""The more specific error a provider's ``classify_exit`` turns a failed run into.

Both keep what the failed run recorded (argv, exit code, output tails) and build the error's
message afresh from it, so the message names the new kind or the lost conversation.
``resume_missing_line`` finds where the CLI said the resumed session is gone.
"""

from __future__ import annotations

from agentshim.core.errors import CliExitError, FailureKind, SessionResumeError

__all__ = ["as_resume_failure", "resume_missing_line", "with_kind"]


def as_resume_failure(
    error: CliExitError, *, session_id: str | None, detail: str | None = None
) -> SessionResumeError:
    """Return ``error`` as the resume of ``session_id`` having failed (the conversation is gone).

    The kind is kept; ``detail`` replaces the error's own when given (the CLI's line saying
    the session could not be loaded).
    """
    return SessionResumeError(
        *_what_ran(error),
        session_id=session_id,
        kind=error.kind,
        detail=error.detail if detail is None else detail,
    )


def with_kind(error: CliExitError, kind: FailureKind) -> CliExitError:
    """Return ``error`` classified as ``kind`` (a plain CliExitError, detail kept)."""
    return CliExitError(*_what_ran(error), kind=kind, detail=error.detail)


def _what_ran(error: CliExitError) -> tuple[tuple[str, ...], int, str, str]:
    return error.argv, error.returncode, error.stdout, error.stderr


def resume_missing_line(marker: str, *texts: str) -> str | None:
    """The first line of ``texts`` (searched in order) that holds ``marker``, stripped; or None.

    The match ignores case. ``marker`` is a provider's ``RESUME_MISSING_TEXT``, the words its
    CLI prints when the session a turn resumes does not exist; ``texts`` are where it prints
    them (usually the failed run's stderr and detail).
    """
    wanted = marker.casefold()
    for text in texts:
        for line in text.splitlines():
            if wanted in line.casefold():
                return line.strip()
    return None
