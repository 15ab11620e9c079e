"""The exception tree: every failure a caller of agentshim can see.

::

    AgentShimError
      CliNotFoundError            the CLI binary is not on PATH
      CliCheckError               the binary was found but its health check failed
      CliInstallError             installing a CLI into the install cache failed: spec
      TurnFailedError             a turn failed: kind (FailureKind), detail
        CliExitError              the CLI exited nonzero (or its stream reported failure)
          SessionResumeError      a resumed turn failed because the conversation is gone
        CliDiedError              a long-lived CLI died mid-turn: session_id, returncode, stderr
        SpendingLimitError        a turn or session crossed a spending limit: limit_name, limit,
                                  spent, session_id, result
      TurnTimeoutError            a turn overran its budget: timeout
        CliTimeoutError           argv, partial: ParsedTurn | None
        TurnStalledError          the CLI printed nothing for stall_timeout seconds: silent_s
      ContinuityError             a turn required a conversation the session does not hold
      LeaseTimeoutError           another holder kept the conversation's lease: key, pid, host, since
      LeaseLostError              a holder's lease passed to another: key, fence, holder_* (None: unknown)
      ConversationImportError     a conversation blob cannot be imported here: provider, reason
      SessionStateError           closed session, second concurrent turn, stale or reused ticket
        NoRunningTurnError        steer() with no turn running
      TurnCancelledError          the turn was cancelled (before it started, or while it ran)
      ApprovalRequiredError       the agent asked permission under ApprovalPolicy.FAIL_TURN: tool
      ProviderCapabilityError     the provider cannot do what the request asked
        SchemaDialectError        problems: list of every dialect problem found
      McpConfigError              an MCP config file is unreadable, unwritable, or not an object
      StoreError                  a checkpoint or lease store failed (also OSError): path, detail
      ProcessClosedError          a long-lived process's stdin is closed or the process is gone
      InvalidSessionIdError       a session id that may not reach argv or a path
      InvalidRequestError         a request that cannot be carried out as given (also ValueError)
      LineTooLongError            a line of output over the size limit: limit, dropped, lines
      UnknownProviderError        no provider by that name (also KeyError): name, known

Every error's message says what happened and what the caller can do about it. Structured
fields are attributes. Every error survives pickling: a class names the keyword arguments it
adds to its parent's in ``_fields``, and the base's ``__reduce__`` rebuilds the error from
those attributes and its message.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from agentshim.core._error_base import AgentShimError, InvalidRequestError, ProviderCapabilityError
from agentshim.core._text import bounded_head, bounded_tail, last_line
from agentshim.core.failures import FailureKind

if TYPE_CHECKING:
    from agentshim.core.turn import ParsedTurn, TurnResult

__all__ = [
    "AgentShimError",
    "ApprovalRequiredError",
    "CliCheckError",
    "CliDiedError",
    "CliExitError",
    "CliInstallError",
    "CliNotFoundError",
    "CliTimeoutError",
    "ContinuityError",
    "ConversationImportError",
    "FailureKind",
    "InvalidRequestError",
    "InvalidSessionIdError",
    "LeaseLostError",
    "LeaseTimeoutError",
    "LineTooLongError",
    "McpConfigError",
    "NoRunningTurnError",
    "ProcessClosedError",
    "ProviderCapabilityError",
    "SchemaDialectError",
    "SessionResumeError",
    "SessionStateError",
    "SpendingLimitError",
    "StoreError",
    "TurnCancelledError",
    "TurnFailedError",
    "TurnStalledError",
    "TurnTimeoutError",
    "UnknownProviderError",
]

#: How much of a failed CLI's stdout and stderr a CliExitError keeps (characters, each).
EXIT_OUTPUT_TAIL_CHARS = 64 * 1024


#: How much of a failure's own words (``detail``) an error keeps, and how much its message quotes.
DETAIL_CHARS = 64 * 1024
MESSAGE_QUOTE_CHARS = 2000


class CliNotFoundError(AgentShimError):
    """The CLI binary could not be found on the environment's PATH.

    ``install`` is the command that installs it, where the provider names one.
    """

    _fields = ("binary", "install")
    binary: str
    install: str | None

    def __init__(
        self, binary: str, message: str | None = None, *, install: str | None = None
    ) -> None:
        if message is None:
            how = f"install it ({install})" if install else "install it"
            message = f"{binary!r} was not found on PATH; {how} or pass a PATH that contains it"
        super().__init__(message)
        self._keep(binary=binary, install=install)


class CliCheckError(AgentShimError):
    """The CLI binary exists but its health check (``--version``) failed."""

    _fields = ("path", "detail")

    def __init__(self, path: str, detail: str, message: str | None = None) -> None:
        super().__init__(
            message
            or f"health check of {path!r} failed: {detail}; "
            "run it by hand to see why (a broken install or a missing runtime)"
        )
        self.path = path
        self.detail = detail


class CliInstallError(AgentShimError):
    """Installing a CLI into the install cache failed (npm missing, or npm failed).

    ``spec`` is the package spec that was being installed (``package@version``).
    """

    _fields = ("spec",)

    def __init__(self, spec: str, message: str | None = None) -> None:
        super().__init__(
            message or f"installing {spec} failed; run npm install {spec} by hand to see why"
        )
        self.spec = spec


class TurnFailedError(AgentShimError):
    """A turn failed; ``kind`` says why as far as the CLI told, ``detail`` is its own words.

    ``retry_after`` is the provider's hint of when a retry may succeed (a rate limit's reset
    time), when it gave one.
    """

    _fields = ("kind", "detail", "retry_after")

    def __init__(
        self,
        message: str,
        *,
        kind: FailureKind = FailureKind.OTHER,
        detail: str = "",
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.kind = kind
        self.detail = bounded_head(detail, DETAIL_CHARS)
        self.retry_after = retry_after


class CliExitError(TurnFailedError):
    """The CLI process exited nonzero, or its stream reported the turn failed.

    ``stdout`` and ``stderr`` hold a bounded tail (the last 64 KiB each) of what it printed.
    """

    _fields = ("argv", "returncode", "stdout", "stderr")

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
        retry_after: float | None = None,
    ) -> None:
        self.argv = tuple(argv)
        self.returncode = returncode
        self.stdout = bounded_tail(stdout, EXIT_OUTPUT_TAIL_CHARS)
        self.stderr = bounded_tail(stderr, EXIT_OUTPUT_TAIL_CHARS)
        if message is None:
            program = self.argv[0] if self.argv else "the CLI"
            said = bounded_head(detail, MESSAGE_QUOTE_CHARS) or last_line(self.stderr)
            said = said or "no error text"
            message = f"{program} failed (exit {returncode}, {kind.value}): {said}; {_advice(kind)}"
        super().__init__(message, kind=kind, detail=detail, retry_after=retry_after)


class SessionResumeError(CliExitError):
    """A resumed turn failed because the provider no longer has the conversation.

    Start a fresh conversation (forget the session id); retrying the same id will fail again.
    """

    _fields = ("session_id",)

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
        retry_after: float | None = None,
    ) -> None:
        self.session_id = session_id
        if message is None:
            said = detail or last_line(stderr) or "no error text"
            message = (
                f"the CLI could not resume conversation {session_id!r} (exit {returncode}): "
                f"{said}; forget this session id and start a fresh conversation"
            )
        super().__init__(
            argv,
            returncode,
            stdout,
            stderr,
            kind=kind,
            detail=detail,
            message=message,
            retry_after=retry_after,
        )


class CliDiedError(TurnFailedError):
    """A long-lived CLI process ended in the middle of a turn (killed, crashed, or it exited).

    The conversation is not lost: ``session_id`` is the conversation the process held, and
    the next turn starts a new process that resumes it. ``returncode`` is the process's exit
    status (negative: the signal that ended it); ``stderr`` a bounded tail of what it said.
    """

    _fields = ("session_id", "returncode", "stderr")

    def __init__(
        self,
        message: str | None = None,
        *,
        session_id: str | None = None,
        returncode: int | None = None,
        stderr: str = "",
        kind: FailureKind = FailureKind.OTHER,
        detail: str = "",
        retry_after: float | None = None,
    ) -> None:
        self.session_id = session_id
        self.returncode = returncode
        self.stderr = bounded_tail(stderr, EXIT_OUTPUT_TAIL_CHARS)
        if message is None:
            said = last_line(self.stderr) or "it printed nothing on stderr"
            kept = (
                f"the conversation {session_id!r} is kept, and the next turn resumes it in a "
                "new process"
                if session_id is not None
                else "no conversation had started, so the next turn starts a new one"
            )
            message = f"the CLI process ended mid-turn (exit {returncode}): {said}; {kept}"
        super().__init__(message, kind=kind, detail=detail, retry_after=retry_after)


class SpendingLimitError(TurnFailedError):
    """A turn crossed a spending limit and was stopped, or a session at its limit refused one.

    ``limit_name`` is the limit (``max_cost_usd``, ``max_tokens``, ``max_session_cost_usd``,
    ``max_session_tokens``), ``limit`` its value and ``spent`` what was spent against it (USD
    or tokens; None when the cost is unknown and unknown cost is refused). ``result`` is the
    stopped turn's result (None when nothing ran); ``session_id`` the conversation, which the
    session keeps. ``kind`` is ``FailureKind.USAGE_LIMIT``: retrying will not help until the
    limit is raised.
    """

    _fields = ("limit_name", "limit", "spent", "session_id", "result")

    def __init__(
        self,
        message: str | None = None,
        *,
        limit_name: str,
        limit: float,
        spent: float | None,
        session_id: str | None = None,
        result: TurnResult | None = None,
        kind: FailureKind = FailureKind.USAGE_LIMIT,
        detail: str = "",
        retry_after: float | None = None,
    ) -> None:
        self.limit_name = limit_name
        self.limit = limit
        self.spent = spent
        self.session_id = session_id
        self.result = result
        if message is None:
            message = _spending_message(limit_name, limit, spent, ran=result is not None)
        super().__init__(message, kind=kind, detail=detail, retry_after=retry_after)


def _spending_message(limit_name: str, limit: float, spent: float | None, *, ran: bool) -> str:
    tokens = limit_name.endswith("tokens")

    def unit(value: float) -> str:
        return f"{value:g} tokens" if tokens else f"${value:.4f}"

    said = "an unknown cost (no price for the model)" if spent is None else unit(spent)
    if not ran:
        return (
            f"the session has spent {said}, at its {limit_name} of {unit(limit)}; no turn was "
            "started. Raise the limit or open a new session"
        )
    return (
        f"the turn was stopped: it spent {said}, past {limit_name} of {unit(limit)}; the "
        "conversation is kept. Raise the limit (or allow unknown cost) to go on"
    )


class TurnTimeoutError(AgentShimError):
    """A turn overran its time budget of ``timeout`` seconds."""

    _fields = ("timeout",)

    def __init__(self, timeout: float | None, message: str | None = None) -> None:
        super().__init__(
            message
            or f"the turn did not finish within {timeout} s; raise the timeout or split the task"
        )
        self.timeout = timeout


class CliTimeoutError(TurnTimeoutError):
    """The CLI process was killed for overrunning ``timeout``; ``partial`` is what it said."""

    _fields = ("argv", "partial")

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


class TurnStalledError(TurnTimeoutError):
    """The CLI printed nothing for ``silent_s`` seconds (the ``stall_timeout``) mid-turn.

    The turn was interrupted, and its process stopped if the interrupt did not end it.
    """

    _fields = ("silent_s",)

    def __init__(
        self, timeout: float | None, silent_s: float | None = None, message: str | None = None
    ) -> None:
        self.silent_s = silent_s if silent_s is not None else timeout
        super().__init__(
            timeout,
            message
            or f"the CLI printed nothing for {self.silent_s:.1f} s (stall_timeout {timeout} s), "
            "so the turn was stopped; raise stall_timeout if its tools legitimately run that "
            "long in silence",
        )


class ContinuityError(AgentShimError):
    """A turn required a conversation the session does not hold.

    Raised before anything runs when the session holds another conversation, and after a
    strict or pinned turn that the provider answered in another conversation (``actual``);
    the session then still holds ``expected``.
    """

    _fields = ("expected", "actual")
    expected: str | None
    actual: str | None

    def __init__(
        self, expected: str | None, actual: str | None, message: str | None = None
    ) -> None:
        super().__init__(
            message
            or f"the turn expected conversation {expected!r} but the session holds {actual!r}; "
            "adopt the expected conversation or drop the expectation"
        )
        self._keep(expected=expected, actual=actual)


class LeaseTimeoutError(AgentShimError):
    """The turn waited ``timeout`` seconds for its conversation's lease and another holder kept it.

    Nothing ran. ``key`` names the conversation (a checkpoint key, or ``provider/session_id``);
    ``pid``, ``host`` and ``since`` (wall-clock seconds since the epoch) name the holder as it
    was last seen, which may be a worker process on another machine.
    """

    _fields = ("key", "pid", "host", "since", "timeout")
    key: str
    pid: int
    host: str
    since: float
    timeout: float

    def __init__(
        self,
        key: str,
        pid: int,
        host: str,
        since: float,
        timeout: float,
        message: str | None = None,
    ) -> None:
        super().__init__(
            message
            or f"conversation {key!r} is in use by process {pid} on {host!r} since "
            f"{_utc(since)}; waited {timeout:g} s (lease_timeout) and nothing ran. Retry the "
            "turn later, or raise lease_timeout if that holder's turns take longer"
        )
        self._keep(key=key, pid=pid, host=host, since=since, timeout=timeout)


class LeaseLostError(AgentShimError):
    """This holder lost the conversation's lease to another: its write was refused, its turn stopped.

    It paused (a GC pause, a stopped process, a slow host) past its lease's time-to-live and
    another worker took the lease with a newer fencing token. ``fence`` is the token this
    holder had; ``holder_pid``, ``holder_host``, ``holder_since`` and ``holder_fence`` name the
    new holder where the store knows it (None otherwise). Nothing is lost: the new holder
    continues the conversation from the last checkpoint.
    """

    _fields = ("key", "fence", "holder_pid", "holder_host", "holder_since", "holder_fence")
    key: str
    fence: int
    holder_pid: int | None
    holder_host: str | None
    holder_since: float | None
    holder_fence: int | None

    def __init__(
        self,
        key: str,
        fence: int,
        holder_pid: int | None = None,
        holder_host: str | None = None,
        holder_since: float | None = None,
        holder_fence: int | None = None,
        message: str | None = None,
    ) -> None:
        if holder_pid is not None and holder_host is not None:
            who = f"process {holder_pid} on {holder_host!r}"
            if holder_since is not None:
                who += f" (holding it since {_utc(holder_since)})"
        else:
            who = "another holder"
        newer = f", fencing token {holder_fence}" if holder_fence is not None else ""
        super().__init__(
            message
            or f"the lease on conversation {key!r} (fencing token {fence}) passed to {who}"
            f"{newer}: this worker held it past its time-to-live, so its writes are refused "
            "and its turn was stopped. The new holder continues the conversation; raise "
            "lease_ttl if pauses this long are expected"
        )
        self._keep(
            key=key,
            fence=fence,
            holder_pid=holder_pid,
            holder_host=holder_host,
            holder_since=holder_since,
            holder_fence=holder_fence,
        )


class ConversationImportError(AgentShimError):
    """A saved conversation could not be carried to this host; nothing of it was written.

    ``provider`` is the CLI it belongs to and ``reason`` what is wrong (a blob from an
    incompatible CLI version, a damaged blob, a file the CLI could not take).
    """

    _fields = ("provider", "reason")

    def __init__(self, provider: str, reason: str, message: str | None = None) -> None:
        super().__init__(
            message
            or f"cannot import the saved {provider} conversation: {reason}; nothing was "
            "written. Install the CLI version the conversation was saved with, or start a "
            "new conversation"
        )
        self.provider = provider
        self.reason = reason


def _utc(epoch_s: float) -> str:
    import datetime  # only when the message is built

    try:
        moment = datetime.datetime.fromtimestamp(epoch_s, tz=datetime.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return f"{epoch_s!r} (epoch s)"
    return moment.isoformat(timespec="seconds")


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

    _fields = ("returncode",)

    def __init__(self, message: str, returncode: int | None = None) -> None:
        super().__init__(message)
        self.returncode = returncode


class ApprovalRequiredError(AgentShimError):
    """The agent asked permission to run ``tool`` and the approvals say FAIL_TURN.

    The request was denied and the turn interrupted; the conversation is kept.
    """

    _fields = ("tool", "tool_id")
    tool: str
    tool_id: str | None

    def __init__(self, tool: str, tool_id: str | None = None, message: str | None = None) -> None:
        super().__init__(
            message
            or f"the agent asked permission to run {tool} and approvals is "
            "ApprovalPolicy.FAIL_TURN, so the request was denied and the turn stopped; allow "
            "the tool in the agent's permissions, or pass an approval handler to decide"
        )
        self._keep(tool=tool, tool_id=tool_id)


class SchemaDialectError(ProviderCapabilityError):
    """The output schema breaks the provider's schema dialect; ``problems`` lists every one."""

    _fields = ("problems",)

    def __init__(self, problems: Sequence[str], message: str | None = None) -> None:
        self.problems = list(problems)
        super().__init__(
            message
            or "the output schema cannot be used as given: "
            + "; ".join(self.problems)
            + " (agentshim.core.schema.normalize fixes the common cases)"
        )


class McpConfigError(AgentShimError):
    """An MCP config file is unreadable, unwritable, or not a JSON object."""

    _fields = ("path", "reason")

    def __init__(self, path: str, reason: str, message: str | None = None) -> None:
        super().__init__(
            message or f"cannot install MCP servers into {path}: {reason}; fix or move the file"
        )
        self.path = path
        self.reason = reason


class StoreError(AgentShimError, OSError):
    """A checkpoint or lease store at ``path`` could not be opened, read or written.

    Also an OSError, so a session treats a failed checkpoint save like a full disk: logged,
    never undoing the turn's work. ``detail`` is the database's own words.
    """

    _fields = ("path", "detail")

    def __init__(self, path: str, detail: str, message: str | None = None) -> None:
        super().__init__(message or f"the store {path} failed: {detail}")
        self.path = path
        self.detail = detail


class ProcessClosedError(AgentShimError):
    """A write went to a long-lived process whose stdin is closed or which has exited."""


class InvalidSessionIdError(AgentShimError):
    """A session id that is not safe to put in argv or a path was refused."""

    _fields = ("session_id",)

    def __init__(self, session_id: str, message: str | None = None) -> None:
        super().__init__(
            message
            or f"invalid session id {session_id!r}: ids are 1-128 characters of "
            "letters, digits, '.', '_' and '-', do not start with '-' and are not '.' or '..'; "
            "pass the id the provider printed"
        )
        self.session_id = session_id


class LineTooLongError(AgentShimError):
    """A line of output was longer than the limit and was dropped; ``limit`` is the cap in bytes.

    From ``HostCommandExecutor`` and ``HostProcess`` (``max_line_bytes``), and
    ``FakeExecutor`` likewise: the process group was killed, because a CLI printing such a
    line is stuck or broken; every line before it was delivered. ``dropped`` is how many
    lines were dropped and ``lines`` any good lines that came with the error.
    """

    _fields = ("limit", "dropped", "lines")
    limit: int
    dropped: int
    lines: list[str]

    def __init__(
        self,
        limit: int,
        dropped: int = 1,
        lines: list[str] | None = None,
        message: str | None = None,
    ) -> None:
        super().__init__(
            message
            or f"{dropped} line(s) of output exceeded {limit} bytes and were dropped; "
            "raise max_line_bytes if the CLI legitimately prints lines that long"
        )
        self._keep(limit=limit, dropped=dropped, lines=list(lines) if lines is not None else [])


class UnknownProviderError(AgentShimError, KeyError):
    """No provider of that name is in the catalog (also a KeyError, as a failed lookup)."""

    _fields = ("name", "known")
    name: str
    known: tuple[str, ...]

    def __init__(self, name: str, known: Sequence[str], message: str | None = None) -> None:
        super().__init__(
            message
            or f"unknown provider {name!r}; known providers: {', '.join(known)}. Check the "
            "spelling, or install the package that registers it and use providers.discover()"
        )
        self._keep(name=name, known=tuple(known))


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
