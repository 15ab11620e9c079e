"""CliAgent and AgentSession: one CLI process per turn, composed over a provider.

This module sits above ``providers/`` because turning a provider name into a provider means
importing the catalog, which ``core/`` may not do.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agentshim.core._checks import is_positive_seconds
from agentshim.core.env import interactive_env
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    CliTimeoutError,
    FailureKind,
    InvalidRequestError,
    ProviderCapabilityError,
    SchemaDialectError,
    SessionResumeError,
    SessionStateError,
    TurnCancelledError,
    TurnFailedError,
)
from agentshim.core.events import (
    AgentEvent,
    AgentEventHandler,
    CompositeEventHandler,
    Lifecycle,
    RunFinished,
    RunStarted,
    SessionStarted,
)
from agentshim.core.ids import is_valid_session_id, validate_session_id
from agentshim.core.locks import KeyedLocks
from agentshim.core.profile import OutputSchemaStyle, ProviderProfile
from agentshim.core.provider import (
    ArgvContext,
    ContextualStreamParser,
    McpInstallation,
    ParsedTurn,
    ParserContext,
    Provider,
    StreamParser,
    mcp_env,
)
from agentshim.core.schema import compact_json, dialect_problems, materialize
from agentshim.core.turn import OutputSchema, TurnRequest, TurnResult
from agentshim.core.usage import ProviderUsage
from agentshim.execution.executor import (
    CommandExecutor,
    CommandHandle,
    CommandRequest,
    CommandResult,
)
from agentshim.execution.host import HostCommandExecutor
from agentshim.providers import DEFAULT_CATALOG, ProviderCatalog

__all__ = ["AgentSession", "CliAgent"]


def _ignore(_: str) -> None:
    """Drop a log line (the default logger)."""


class CliAgent:
    """One installed, health-checked agent CLI, ready to run turns.

    The constructor resolves the binary on the env's PATH and runs its health check once;
    every session and turn reuses that. ``env=None`` takes the user's interactive shell
    environment, so the CLI sees the same PATH and credentials it does in a terminal.

    Environment defaults: the provider's ``env_defaults`` (if it declares any) are added where
    the env does not set them, and so is ``profile.container_env`` when running as root, since
    some CLIs refuse their permission-bypass flags to root without it.
    """

    def __init__(
        self,
        provider: str | Provider,
        *,
        model: str | None = None,
        executor: CommandExecutor | None = None,
        env: Mapping[str, str] | None = None,
        event_handler: AgentEventHandler | None = None,
        event_handlers: Sequence[AgentEventHandler] = (),
        check_timeout: float = 15.0,
        log: Callable[[str], None] | None = None,
        catalog: ProviderCatalog = DEFAULT_CATALOG,
    ) -> None:
        self.provider: Provider = (
            catalog.plugin(provider).create_provider() if isinstance(provider, str) else provider
        )
        self.profile: ProviderProfile = self.provider.profile
        self.model = model
        self.executor: CommandExecutor = executor if executor is not None else HostCommandExecutor()
        self.log: Callable[[str], None] = log or _ignore
        self.env: dict[str, str] = _compose_env(self.provider, env)
        self.binary_path: str = self.executor.find_binary(self.profile.binary, self.env)
        self.executor.check_binary(self.binary_path, self.env, timeout=check_timeout)
        self.handlers: tuple[AgentEventHandler, ...] = _handlers(event_handler, event_handlers)
        self.locks = KeyedLocks()

    def derive(
        self,
        *,
        model: str | None = None,
        event_handler: AgentEventHandler | None = None,
        event_handlers: Sequence[AgentEventHandler] = (),
    ) -> CliAgent:
        """Return an agent on the same checked install with another model and handlers.

        The binary is not looked up or checked again; the conversation locks are shared.
        """
        clone = object.__new__(CliAgent)
        clone.__dict__.update(self.__dict__)
        clone.model = model if model is not None else self.model
        clone.handlers = _handlers(event_handler, event_handlers)
        return clone

    def start_session(
        self,
        *,
        cwd: str | None = None,
        timeout: float | None = None,
        session_id: str | None = None,
        previous_usage: ProviderUsage | None = None,
    ) -> AgentSession:
        """Return a session whose turns run in ``cwd`` and resume ``session_id`` if given."""
        return AgentSession(
            self, cwd=cwd, timeout=timeout, session_id=session_id, previous_usage=previous_usage
        )

    def run(
        self,
        request: TurnRequest | str,
        *,
        cwd: str | None = None,
        timeout: float | None = None,
    ) -> TurnResult:
        """Run one turn in a fresh conversation and return its result."""
        return self.start_session(cwd=cwd, timeout=timeout).turn(request)


def _handlers(
    handler: AgentEventHandler | None, handlers: Sequence[AgentEventHandler]
) -> tuple[AgentEventHandler, ...]:
    chosen = (*((handler,) if handler is not None else ()), *handlers)
    for candidate in chosen:
        if not callable(getattr(candidate, "on_event", None)):
            raise InvalidRequestError(
                "event_handler",
                f"{candidate!r:.200} has no on_event(event) method; wrap a plain function in "
                "CallbackEventHandler",
            )
    return chosen


def _compose_env(provider: Provider, env: Mapping[str, str] | None) -> dict[str, str]:
    composed = dict(interactive_env()) if env is None else dict(env)
    defaults: Mapping[str, str] = getattr(provider, "env_defaults", None) or {}
    for key, value in defaults.items():
        composed.setdefault(key, value)
    if _running_as_root():
        for key, value in provider.profile.container_env.items():
            composed.setdefault(key, value)
    return composed


def _running_as_root() -> bool:
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


class _TurnSink:
    """Feeds executor output into the parser and publishes the process handle."""

    __slots__ = ("_on_handle", "stderr", "stdout")

    def __init__(self, parser: StreamParser, on_handle: Callable[[CommandHandle], None]) -> None:
        self._on_handle = on_handle
        # Bound methods: the executor calls these once per line, so skip a layer of dispatch.
        self.stdout = parser.feed_stdout
        self.stderr = parser.feed_stderr

    def started(self, handle: CommandHandle) -> None:
        self._on_handle(handle)


class AgentSession:
    """A conversation with one CLI, one process per turn; not safe to ``turn()`` concurrently.

    ``session_id`` names the provider conversation the next turn resumes (None: start fresh).
    ``cancel`` is the one thread-safe call.
    """

    def __init__(
        self,
        agent: CliAgent,
        *,
        cwd: str | None = None,
        timeout: float | None = None,
        session_id: str | None = None,
        previous_usage: ProviderUsage | None = None,
    ) -> None:
        self.agent = agent
        self.cwd = cwd
        self.timeout = timeout
        self.session_id: str | None = (
            validate_session_id(session_id) if session_id is not None else None
        )
        self.previous_usage = previous_usage
        self.last_result: TurnResult | None = None
        self._state = threading.Lock()
        self._busy = False
        self._handle: CommandHandle | None = None
        self._cancel_requested = False
        self._kill_timer: threading.Timer | None = None
        self._cancel_grace_s = 5.0

    # -- conversation bookkeeping -------------------------------------------------------

    def adopt(self, session_id: str, *, previous_usage: ProviderUsage | None = None) -> bool:
        """Make the next turn resume ``session_id``.

        Returns False (and changes nothing) when the provider cannot resume or a turn is in
        flight; raises InvalidSessionIdError for an id that is not safe to pass to the CLI.
        """
        validate_session_id(session_id)
        if not self.agent.profile.supports_resume:
            return False
        with self._state:
            if self._busy:
                return False
            self.session_id = session_id
            self.previous_usage = previous_usage
            return True

    def forget(self) -> bool:
        """Drop the conversation so the next turn starts fresh; False while a turn is in flight."""
        with self._state:
            if self._busy:
                return False
            self.session_id = None
            self.previous_usage = None
            return True

    def cancel(self, grace_s: float = 5.0) -> None:
        """Stop the running turn: terminate the process group, then kill it after ``grace_s``.

        Thread-safe. A cancel that arrives before the process exists is honoured as soon as it
        does; with no turn in flight it does nothing.
        """
        with self._state:
            if not self._busy:
                return
            self._cancel_requested = True
            self._cancel_grace_s = grace_s
            handle = self._handle
            if handle is not None and self._kill_timer is None:
                self._kill_timer = self._start_kill_timer(handle, grace_s)
        if handle is not None:
            handle.terminate()

    def _start_kill_timer(self, handle: CommandHandle, grace_s: float) -> threading.Timer:
        timer = threading.Timer(max(0.0, grace_s), handle.kill)
        timer.daemon = True
        timer.start()
        return timer

    def _set_handle(self, handle: CommandHandle) -> None:
        with self._state:
            self._handle = handle
            cancel = self._cancel_requested
            if cancel and self._kill_timer is None:
                self._kill_timer = self._start_kill_timer(handle, self._cancel_grace_s)
        if cancel:
            handle.terminate()

    # -- the turn -----------------------------------------------------------------------

    def turn(self, request: TurnRequest | str) -> TurnResult:
        """Run one turn and return its result.

        Raises only AgentShimError subclasses (SessionStateError for a second concurrent turn,
        ProviderCapabilityError/SchemaDialectError before anything runs, CliExitError or
        SessionResumeError when the CLI or its stream reports failure, CliTimeoutError with the
        partial turn), except that an event handler that raises fails the turn with its own
        exception.
        """
        with self._state:
            if self._busy:
                raise SessionStateError(
                    "a turn is already running in this session; wait for it or cancel() it"
                )
            self._busy = True
        installation: McpInstallation | None = None
        lock_key: tuple[str, str] | None = None
        fresh_lock: list[tuple[str, str]] = []
        try:
            turn = _PreparedTurn(self, _as_request(request))
            resume_id = self.session_id
            if resume_id is not None:
                lock_key = (self.agent.profile.name, resume_id)
                self.agent.locks.acquire(lock_key)
            installation = turn.install_mcp()
            turn.add_env(mcp_env(installation))
            argv = turn.build_argv(resume_id, installation.argv)
            emit = self._emitter(fresh_lock if resume_id is None else None)
            return self._execute(turn, argv, resume_id, emit)
        finally:
            if installation is not None:
                note = installation.restore()
                if note:
                    self.agent.log(note)
            for key in (lock_key, *fresh_lock):
                if key is not None:
                    self.agent.locks.release(key)
            with self._state:
                if self._kill_timer is not None:
                    self._kill_timer.cancel()
                    self._kill_timer = None
                self._handle = None
                self._cancel_requested = False
                self._busy = False

    def _emitter(self, fresh_lock: list[tuple[str, str]] | None) -> Callable[[AgentEvent], None]:
        handlers = self.agent.handlers
        agent = self.agent
        fanout = CompositeEventHandler(handlers).on_event

        def emit(event: AgentEvent) -> None:
            if fresh_lock is not None and not fresh_lock and isinstance(event, SessionStarted):
                # A fresh conversation is locked as soon as the stream names it, so another
                # session that adopts the id mid-turn waits for this turn to end.
                key = (agent.profile.name, event.session_id)
                if agent.locks.acquire(key, blocking=False):
                    fresh_lock.append(key)
            fanout(event)

        return emit

    def _execute(
        self,
        turn: _PreparedTurn,
        argv: list[str],
        resume_id: str | None,
        emit: Callable[[AgentEvent], None],
    ) -> TurnResult:
        provider = self.agent.provider
        parser = provider.new_parser(emit, expect_structured=turn.request.output_schema is not None)
        if isinstance(parser, ContextualStreamParser):
            parser.configure(
                ParserContext(
                    previous_usage=self.previous_usage if resume_id is not None else None,
                    resumed=resume_id is not None,
                    requested_session_id=resume_id,
                    model=self.agent.model,
                )
            )
        command = CommandRequest(
            argv=argv,
            stdin=turn.request.prompt,
            cwd=turn.cwd,
            env=turn.env,
            timeout=turn.timeout,
        )
        emit(RunStarted(tuple(argv)))
        started = time.monotonic()
        try:
            outcome = self.agent.executor.run(command, _TurnSink(parser, self._set_handle))
        except CliTimeoutError as error:
            emit(RunFinished(None))
            partial = _finish(parser, emit)
            self._adopt_from(partial)
            raise CliTimeoutError(error.argv or argv, error.timeout, partial) from error
        except AgentShimError:
            emit(RunFinished(None))
            self._adopt_from(_finish(parser, emit))
            raise
        except OSError as error:
            emit(RunFinished(None))
            self._adopt_from(_finish(parser, emit))
            raise TurnFailedError(
                f"could not run {argv[0]}: {error}; check the binary and the turn's cwd",
                detail=str(error),
            ) from error
        duration_ms = int((time.monotonic() - started) * 1000)
        emit(RunFinished(outcome.returncode))
        parsed = _finish(parser, emit)
        resumed = resume_id is not None and parsed.session_id in (None, resume_id)
        if resume_id is not None and parsed.session_id not in (None, resume_id):
            emit(
                Lifecycle(
                    "resume_replaced",
                    f"asked to resume {resume_id} but the CLI continued in {parsed.session_id}",
                )
            )
        if outcome.returncode != 0 or parsed.error is not None:
            self._raise_failure(argv, outcome, parsed, resumed=resume_id is not None)
        self._adopt_from(parsed)
        usage = parsed.usage or ProviderUsage(
            provider=self.agent.profile.name, increment_known=False
        )
        self.previous_usage = usage
        result = TurnResult(
            text=parsed.text,
            structured_output=parsed.structured_output,
            session_id=self.session_id,
            resumed=resumed,
            usage=usage,
            cost_usd=parsed.cost_usd,
            duration_ms=duration_ms,
            exit_code=outcome.returncode,
            interrupted=False,
            context_tokens=parsed.context_tokens,
        )
        self.last_result = result
        return result

    def _raise_failure(
        self, argv: list[str], outcome: CommandResult, parsed: ParsedTurn, *, resumed: bool
    ) -> None:
        with self._state:
            cancelled = self._cancel_requested
        if cancelled:
            # The caller stopped the CLI: whatever it printed on the way out (a resumed Claude
            # turn looks like a lost conversation) says nothing about the conversation.
            self._adopt_from(parsed)
            raise TurnCancelledError(
                f"the turn was cancelled while {argv[0]} ran (exit {outcome.returncode}); "
                "the conversation is intact: run another turn in this session to continue",
                returncode=outcome.returncode,
            )
        error = CliExitError(
            argv,
            outcome.returncode,
            outcome.stdout,
            outcome.stderr,
            kind=parsed.error_kind or FailureKind.OTHER,
            detail=parsed.error or "",
        )
        classified = self.agent.provider.classify_exit(error, resumed=resumed)
        if not isinstance(classified, SessionResumeError):
            self._adopt_from(parsed)
        raise classified

    def _adopt_from(self, parsed: ParsedTurn) -> None:
        if parsed.session_id:
            self.session_id = parsed.session_id
            if parsed.usage is not None:
                self.previous_usage = parsed.usage


class _PreparedTurn:
    """One turn's resolved settings, checked against the provider before anything runs."""

    def __init__(self, session: AgentSession, request: TurnRequest) -> None:
        agent = session.agent
        profile = agent.profile
        self.agent = agent
        self.request = request
        self.cwd = request.cwd if request.cwd is not None else session.cwd
        self.timeout = request.timeout if request.timeout is not None else session.timeout
        if self.timeout is not None and not is_positive_seconds(self.timeout):
            raise InvalidRequestError(
                "timeout",
                f"must be a positive, finite number of seconds (or None), got {self.timeout!r}",
            )
        self.env = {**agent.env, **(request.env or {})}
        if request.reasoning_effort is not None and not profile.supports_reasoning_effort:
            raise ProviderCapabilityError(
                f"{profile.display_name} has no reasoning-effort setting; "
                "drop reasoning_effort from the request"
            )
        if self.cwd is not None and not os.path.isdir(self.cwd) and _is_host(agent.executor):
            raise TurnFailedError(
                f"the turn's cwd {self.cwd!r} is not an existing directory; create it or pass "
                "another cwd",
                detail=f"no such directory: {self.cwd}",
            )
        self.schema_inline: str | None = None
        self.schema_path: str | None = None
        schema = request.output_schema
        if schema is not None:
            self._prepare_schema(profile, schema)

    def _prepare_schema(self, profile: ProviderProfile, schema: OutputSchema) -> None:
        if profile.output_schema is OutputSchemaStyle.NONE or profile.schema_dialect is None:
            raise ProviderCapabilityError(
                f"{profile.display_name} cannot constrain its answer to an output schema; "
                "drop output_schema or use a provider that supports it"
            )
        problems = dialect_problems(schema.schema, profile.schema_dialect)
        if problems:
            raise SchemaDialectError(problems)
        if profile.output_schema is OutputSchemaStyle.INLINE_JSON:
            self.schema_inline = compact_json(schema.schema)
            return
        try:
            written = materialize(schema.schema, schema.host_dir)
        except OSError as error:
            raise TurnFailedError(
                f"could not write the output schema under {schema.host_dir}: {error}; "
                "pass a writable host_dir",
                detail=str(error),
            ) from error
        self.schema_path = f"{schema.cli_dir_or_host.rstrip('/')}/{written.name}"

    def install_mcp(self) -> McpInstallation:
        servers = self.request.mcp_servers
        workspace = self.request.mcp_workspace
        if workspace is None and self.cwd is not None:
            workspace = Path(self.cwd)
        return self.agent.provider.install_mcp(workspace, servers)

    def add_env(self, extra: Mapping[str, str]) -> None:
        """Give the CLI the variables its MCP servers read by name; refuse a clash."""
        for name, value in extra.items():
            if self.env.get(name, value) != value:
                raise ProviderCapabilityError(
                    f"{self.agent.profile.display_name} passes MCP server env to the server by "
                    f"name from its own environment, which already sets {name} to another "
                    f"value; have the server read a variable of another name, or drop {name} "
                    "from the CLI's env"
                )
        self.env = {**self.env, **extra}

    def build_argv(self, resume_id: str | None, mcp_argv: Sequence[str]) -> list[str]:
        return self.agent.provider.build_argv(
            ArgvContext(
                binary_path=self.agent.binary_path,
                model=self.agent.model,
                env=self.env,
                resume_session_id=resume_id,
                reasoning_effort=self.request.reasoning_effort,
                schema_inline=self.schema_inline,
                schema_path=self.schema_path,
                mcp_argv=tuple(mcp_argv),
                extra_args=tuple(self.request.extra_args),
                cwd=self.cwd,
            )
        )


def _is_host(executor: CommandExecutor) -> bool:
    return isinstance(executor, HostCommandExecutor)


def _finish(parser: StreamParser, emit: Callable[[AgentEvent], None]) -> ParsedTurn:
    """End the parse; a session id that may not reach argv or a path is dropped, with a notice.

    The id comes from the CLI's output. Adopting an unsafe one would hand it back in the
    result and make every later turn of the session fail on it.
    """
    parsed = parser.finish()
    session_id = parsed.session_id
    if session_id is None or is_valid_session_id(session_id):
        return parsed
    emit(
        Lifecycle(
            "session_id_refused",
            f"the CLI named its session {session_id[:200]!r}, which is not a safe id; "
            "the turn keeps no session id",
        )
    )
    return dataclasses.replace(parsed, session_id=None)


def _as_request(given: object) -> TurnRequest:
    """A prompt or a TurnRequest as a TurnRequest; anything else is refused."""
    if isinstance(given, str):
        return TurnRequest(prompt=given)
    if isinstance(given, TurnRequest):
        return given
    raise InvalidRequestError(
        "request", f"must be a prompt (str) or a TurnRequest, not {given!r:.200}"
    )
