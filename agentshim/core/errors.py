"""The exception tree: every failure a caller of agentshim can see.

::

    AgentShimError
      CliNotFoundError            the CLI binary is not on PATH
      CliCheckError               the binary was found but its health check failed
      TurnFailedError             a turn failed: kind (FailureKind), detail
        CliExitError              the CLI exited nonzero (or its stream reported failure)
          SessionResumeError      a resumed turn failed because the conversation is gone
      TurnTimeoutError            a turn overran its budget: timeout
        CliTimeoutError           argv, partial: ParsedTurn | None
      ContinuityError             a turn required a conversation the session does not hold
      SessionStateError           closed session, second concurrent turn, stale or reused ticket
        NoRunningTurnError        steer() with no turn running
      TurnCancelledError          the turn was cancelled (before it started, or while it ran)
      ProviderCapabilityError     the provider cannot do what the request asked
        SchemaDialectError        problems: list of every dialect problem found
      McpConfigError              an MCP config file is unreadable, unwritable, or not an object
      ProcessClosedError          a long-lived process's stdin is closed or the process is gone
      InvalidSessionIdError       a session id that may not reach argv or a path
      InvalidRequestError         a request that cannot be carried out as given (also ValueError)
      LineTooLongError            (core.stream) a line of output over the size limit
      UnknownProviderError        (providers) no provider by that name (also KeyError)

Every error's message says what happened and what the caller can do about it. Structured
fields are attributes. Every error survives pickling: ``__reduce__`` rebuilds it from its
keyword arguments.
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from agentshim.core.provider import ParsedTurn

__all__ = [
    "AgentShimError",
    "CliCheckError",
    "CliExitError",
    "CliNotFoundError",
    "CliTimeoutError",
    "ContinuityError",
    "FailureKind",
    "InvalidRequestError",
    "InvalidSessionIdError",
    "McpConfigError",
    "NoRunningTurnError",
    "ProcessClosedError",
    "ProviderCapabilityError",
    "SchemaDialectError",
    "SessionResumeError",
    "SessionStateError",
    "TurnCancelledError",
    "TurnFailedError",
    "TurnTimeoutError",
    "bounded_tail",
]

#: How much of a failed CLI's stdout and stderr a CliExitError keeps (characters, each).
EXIT_OUTPUT_TAIL_CHARS = 64 * 1024


#: How much of a failure's own words (``detail``) an error keeps, and how much its message quotes.
DETAIL_CHARS = 64 * 1024
MESSAGE_QUOTE_CHARS = 2000


def _bounded_head(text: str, limit: int) -> str:
    # An error's own words lead with what matters, so the start is kept.
    if len(text) <= limit:
        return text
    return text[:limit] + "[...truncated...]"


def bounded_tail(text: str, limit: int = EXIT_OUTPUT_TAIL_CHARS) -> str:
    """Return at most the last ``limit`` characters of ``text``, marking a cut with a prefix."""
    if len(text) <= limit:
        return text
    return "[...truncated...]\n" + text[-limit:]


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


class AgentShimError(Exception):
    """Base of every error agentshim raises; catch this to catch them all."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message

    def _state(self) -> dict[str, Any]:
        return {"message": self.message}

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (type(self), self._state()))

    def __str__(self) -> str:
        return self.message


def _rebuild(cls: type[AgentShimError], state: dict[str, Any]) -> AgentShimError:
    return cls(**state)


class CliNotFoundError(AgentShimError):
    """The CLI binary could not be found on the environment's PATH."""

    def __init__(self, binary: str, message: str | None = None) -> None:
        super().__init__(
            message
            or f"{binary!r} was not found on PATH; install it or pass a PATH that contains it"
        )
        self.binary = binary

    def _state(self) -> dict[str, Any]:
        return {"binary": self.binary, "message": self.message}


class CliCheckError(AgentShimError):
    """The CLI binary exists but its health check (``--version``) failed."""

    def __init__(self, path: str, detail: str, message: str | None = None) -> None:
        super().__init__(
            message
            or f"health check of {path!r} failed: {detail}; "
            "run it by hand to see why (a broken install or a missing runtime)"
        )
        self.path = path
        self.detail = detail

    def _state(self) -> dict[str, Any]:
        return {"path": self.path, "detail": self.detail, "message": self.message}


class TurnFailedError(AgentShimError):
    """A turn failed; ``kind`` says why as far as the CLI told, ``detail`` is its own words.

    ``retry_after_s`` is the provider's hint of when a retry may succeed (a rate limit's reset
    time), when it gave one.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: FailureKind = FailureKind.OTHER,
        detail: str = "",
        retry_after_s: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.detail = _bounded_head(detail, DETAIL_CHARS)
        self.retry_after_s = retry_after_s

    def _state(self) -> dict[str, Any]:
        return {
            "message": self.message,
            "kind": self.kind,
            "detail": self.detail,
            "retry_after_s": self.retry_after_s,
        }


class CliExitError(TurnFailedError):
    """The CLI process exited nonzero, or its stream reported the turn failed.

    ``stdout`` and ``stderr`` hold a bounded tail (the last 64 KiB each) of what it printed.
    """

    def __init__(
        self,
        argv: Sequence[str],
        returncode: int,
        stdout: str = "",
        stderr: str = "",
        *,
        kind: FailureKind = FailureKind.OTHER,
        detail: str = "",
        message: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        self.argv = tuple(argv)
        self.returncode = returncode
        self.stdout = bounded_tail(stdout)
        self.stderr = bounded_tail(stderr)
        if message is None:
            program = self.argv[0] if self.argv else "the CLI"
            said = _bounded_head(detail, MESSAGE_QUOTE_CHARS) or _last_line(self.stderr)
            said = said or "no error text"
            message = f"{program} failed (exit {returncode}, {kind.value}): {said}; {_advice(kind)}"
        super().__init__(message, kind=kind, detail=detail, retry_after_s=retry_after_s)

    def _state(self) -> dict[str, Any]:
        return {
            "argv": self.argv,
            "returncode": self.returncode,
            "stdout": self.stdout,
            "stderr": self.stderr,
            "kind": self.kind,
            "detail": self.detail,
            "message": self.message,
            "retry_after_s": self.retry_after_s,
        }


class SessionResumeError(CliExitError):
    """A resumed turn failed because the provider no longer has the conversation.

    Start a fresh conversation (forget the session id); retrying the same id will fail again.
    """

    def __init__(
        self,
        argv: Sequence[str],
        returncode: int,
        stdout: str = "",
        stderr: str = "",
        *,
        session_id: str | None = None,
        kind: FailureKind = FailureKind.OTHER,
        detail: str = "",
        message: str | None = None,
        retry_after_s: float | None = None,
    ) -> None:
        self.session_id = session_id
        if message is None:
            message = (
                f"the CLI could not resume conversation {session_id!r} (exit {returncode}): "
                f"{detail or _last_line(stderr) or 'no error text'}; "
                "forget this session id and start a fresh conversation"
            )
        super().__init__(
            argv,
            returncode,
            stdout,
            stderr,
            kind=kind,
            detail=detail,
            message=message,
            retry_after_s=retry_after_s,
        )

    def _state(self) -> dict[str, Any]:
        state = super()._state()
        state["session_id"] = self.session_id
        return state


class TurnTimeoutError(AgentShimError):
    """A turn overran its time budget of ``timeout`` seconds."""

    def __init__(self, timeout: float | None, message: str | None = None) -> None:
        super().__init__(
            message
            or f"the turn did not finish within {timeout} s; raise the timeout or split the task"
        )
        self.timeout = timeout

    def _state(self) -> dict[str, Any]:
        return {"timeout": self.timeout, "message": self.message}


class CliTimeoutError(TurnTimeoutError):
    """The CLI process was killed for overrunning ``timeout``; ``partial`` is what it said."""

    def __init__(
        self,
        argv: Sequence[str],
        timeout: float | None,
        partial: ParsedTurn | None = None,
        message: str | None = None,
    ) -> None:
        self.argv = tuple(argv)
        self.partial = partial
        program = self.argv[0] if self.argv else "the CLI"
        super().__init__(
            timeout,
            message
            or f"{program} did not finish within {timeout} s and was killed with its "
            "process group; raise the timeout or split the task",
        )

    def _state(self) -> dict[str, Any]:
        return {
            "argv": self.argv,
            "timeout": self.timeout,
            "partial": self.partial,
            "message": self.message,
        }


class ContinuityError(AgentShimError):
    """A turn required a conversation the session does not hold.

    Raised before anything runs when the session holds another conversation, and after a
    strict or pinned turn that the provider answered in another conversation (``actual``);
    the session then still holds ``expected``.
    """

    def __init__(
        self, expected: str | None, actual: str | None, message: str | None = None
    ) -> None:
        super().__init__(
            message
            or f"the turn expected conversation {expected!r} but the session holds {actual!r}; "
            "adopt the expected conversation or drop the expectation"
        )
        self.expected = expected
        self.actual = actual

    def _state(self) -> dict[str, Any]:
        return {"expected": self.expected, "actual": self.actual, "message": self.message}


class SessionStateError(AgentShimError):
    """The session cannot do this now: it is closed, busy, or the ticket is stale."""


class NoRunningTurnError(SessionStateError):
    """The call needs a running turn (``steer``) and none is running."""


class TurnCancelledError(AgentShimError):
    """The turn was cancelled: before it started (nothing ran), or while its CLI ran.

    ``returncode`` is the stopped CLI's exit status (``-15`` after SIGTERM), or None when no
    process ran. A cancel is the caller's own request, never a sign that the conversation is
    gone: its session id stays valid.
    """

    def __init__(self, message: str, returncode: int | None = None) -> None:
        super().__init__(message)
        self.returncode = returncode

    def _state(self) -> dict[str, Any]:
        return {"message": self.message, "returncode": self.returncode}


class ProviderCapabilityError(AgentShimError):
    """The provider cannot do what the request asked (a flag, a schema, a mode)."""


class SchemaDialectError(ProviderCapabilityError):
    """The output schema breaks the provider's schema dialect; ``problems`` lists every one."""

    def __init__(self, problems: Sequence[str], message: str | None = None) -> None:
        self.problems = list(problems)
        super().__init__(
            message
            or "the output schema cannot be used as given: "
            + "; ".join(self.problems)
            + " (agentshim.core.schema.normalize fixes the common cases)"
        )

    def _state(self) -> dict[str, Any]:
        return {"problems": self.problems, "message": self.message}


class McpConfigError(AgentShimError):
    """An MCP config file is unreadable, unwritable, or not a JSON object."""

    def __init__(self, path: str, reason: str, message: str | None = None) -> None:
        super().__init__(
            message or f"cannot install MCP servers into {path}: {reason}; fix or move the file"
        )
        self.path = path
        self.reason = reason

    def _state(self) -> dict[str, Any]:
        return {"path": self.path, "reason": self.reason, "message": self.message}


class ProcessClosedError(AgentShimError):
    """A write went to a long-lived process whose stdin is closed or which has exited."""


class InvalidSessionIdError(AgentShimError):
    """A session id that is not safe to put in argv or a path was refused."""

    def __init__(self, session_id: str, message: str | None = None) -> None:
        super().__init__(
            message
            or f"invalid session id {session_id!r}: ids are 1-128 characters of "
            "letters, digits, '.', '_' and '-', do not start with '-' and are not '.' or '..'; "
            "pass the id the provider printed"
        )
        self.session_id = session_id

    def _state(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "message": self.message}


class InvalidRequestError(AgentShimError, ValueError):
    """A request agentshim cannot carry out as given, refused before anything ran.

    Examples: a timeout that is not a positive finite number of seconds, a NUL byte in an
    argument, an environment variable or a working directory, a relative path where an
    absolute one is required. ``field`` names what was wrong. It is also a ValueError, so code
    written against the standard library's checks still catches it.
    """

    def __init__(self, field: str, problem: str, message: str | None = None) -> None:
        super().__init__(message or f"invalid {field}: {problem}")
        self.field = field
        self.problem = problem

    def _state(self) -> dict[str, Any]:
        return {"field": self.field, "problem": self.problem, "message": self.message}


def _last_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip():
            return line.strip()[:500]
    return ""


def _advice(kind: FailureKind) -> str:
    return {
        FailureKind.TRANSIENT: "retry later",
        FailureKind.USAGE_LIMIT: "wait for the usage limit to reset or raise it",
        FailureKind.AUTH: "log the CLI in again or fix its API key",
        FailureKind.SCHEMA: "simplify the output schema or the prompt",
        FailureKind.CONTEXT_OVERFLOW: "start a fresh conversation or shorten the prompt",
        FailureKind.MODEL: "pick a model the CLI's account can use (the model= option)",
        FailureKind.OTHER: "see stderr and stdout on this error for the CLI's own output",
    }[kind]
