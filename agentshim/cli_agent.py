"""CliAgent and AgentSession: one CLI process per turn, composed over a provider.

This module sits above ``providers/`` because turning a provider name into a provider means
importing the catalog, which ``core/`` may not do.
"""

from __future__ import annotations

import copy
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Protocol, runtime_checkable

from agentshim.core import lifecycle_kinds as lk
from agentshim.core._checks import is_positive_seconds, model_name, seconds, working_directory
from agentshim.core.conversation import TurnStop, directory, do_nothing
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    CliNotFoundError,
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
    Emit,
    EventSink,
    Lifecycle,
    RunFinished,
    RunStarted,
    SessionTitle,
    event_callback,
    event_callbacks,
)
from agentshim.core.ids import is_valid_session_id, validate_session_id
from agentshim.core.profile import McpMechanism, OutputSchemaStyle, ProviderProfile
from agentshim.core.provider import (
    ArgvContext,
    ContextualStreamParser,
    McpInstallation,
    ParserContext,
    Provider,
    StreamParser,
    mcp_env,
    mcp_env_defaults,
)
from agentshim.core.schema import compact_json, dialect_problems, materialize
from agentshim.core.tools import TOOL_SERVER_NAME
from agentshim.core.turn import OutputSchema, ParsedTurn, TurnRequest, TurnResult
from agentshim.core.usage import ProviderUsage
from agentshim.execution.env import interactive_env
from agentshim.execution.executor import (
    CallbackSink,
    CommandExecutor,
    CommandHandle,
    CommandRequest,
    CommandResult,
)
from agentshim.execution.host import HostCommandExecutor
from agentshim.providers import DEFAULT_CATALOG, ProviderCatalog
from agentshim.state.locks import ConversationLock, KeyedLocks
from agentshim.tools.local import (
    InstallsTools,
    LocalToolServer,
    refuse_remote_executor,
    serve_tools,
    with_tools,
)

__all__ = ["AgentSession", "CliAgent", "EnvDefaultsProvider"]


class _Handlers:
    """Fans each event out to the turn's handlers and remembers the first one that raised.

    The executor and the parser sit between the handlers and ``turn``; what they make of a
    handler's exception must not decide how the turn fails, so ``reraise`` raises it as it was.
    """

    __slots__ = ("_callbacks", "error")

    def __init__(self, callbacks: Sequence[Emit]) -> None:
        self._callbacks = tuple(callbacks)
        self.error: BaseException | None = None

    def __call__(self, event: AgentEvent) -> None:
        try:
            for callback in self._callbacks:
                callback(event)
        except BaseException as error:
            if self.error is None:
                self.error = error
            raise

    def reraise(self) -> None:
        """Raise the exception a handler raised during this turn, if one did."""
        if self.error is not None:
            raise self.error


@runtime_checkable
class EnvDefaultsProvider(Protocol):
    """A provider that declares environment defaults for its CLI (optional).

    ``CliAgent`` adds each of ``env_defaults`` where the env it runs with does not set it.
    """

    @property
    def env_defaults(self) -> Mapping[str, str]:
        """Variables the CLI should see unless the caller's env sets them."""
        ...


def ignore_log_line(_: str) -> None:
    """Drop a log line (the default logger of every door that takes a ``log``)."""


class CliAgent:
    """One installed, health-checked agent CLI, ready to run turns.

    The constructor resolves the binary on the env's PATH and runs its health check once;
    every session and turn reuses that. ``env=None`` takes the user's interactive shell
    environment, so the CLI sees the same PATH and credentials it does in a terminal.

    Environment defaults: the provider's ``env_defaults`` (see :class:`EnvDefaultsProvider`)
    are added where the env does not set them. ``profile.container_env`` is set when running
    as root, over any value the env or a request gives, since some CLIs refuse their
    permission-bypass flags to root without exactly that value.

    ``event_handler`` and ``event_handlers`` receive every turn's events; each is an
    AgentEventHandler or a plain function of one event. ``locks`` is the registry of
    conversation locks (one per provider and session id) its sessions share; an ``Agent``
    hands its own, and by default the CliAgent has one of its own.
    """

    def __init__(
        self,
        provider: str | Provider,
        *,
        model: str | None = None,
        executor: CommandExecutor | None = None,
        env: Mapping[str, str] | None = None,
        event_handler: EventSink | None = None,
        event_handlers: EventSink | Sequence[EventSink] = (),
        check_timeout: float = 15.0,
        log: Callable[[str], None] | None = None,
        catalog: ProviderCatalog = DEFAULT_CATALOG,
        locks: KeyedLocks | None = None,
    ) -> None:
        self.provider: Provider = (
            catalog.plugin(provider).create_provider() if isinstance(provider, str) else provider
        )
        self.profile: ProviderProfile = self.provider.profile
        self.model = model_name("CliAgent", "model", model)
        check_timeout = seconds("CliAgent", "check_timeout", check_timeout, positive=True)
        self.executor: CommandExecutor = executor if executor is not None else HostCommandExecutor()
        self.log: Callable[[str], None] = log or ignore_log_line
        self.env: dict[str, str] = _compose_env(self.provider, env)
        try:
            self.binary_path: str = self.executor.find_binary(self.profile.binary, self.env)
        except CliNotFoundError as error:
            install = self.profile.install_command
            if install is None or error.install is not None:
                raise
            raise CliNotFoundError(
                error.binary, f"{error}; install it with: {install}", install=install
            ) from None
        # A provider may say its binary has no --version to check (an ACP adapter).
        if getattr(self.provider, "checks_version", True) is not False:
            self.executor.check_binary(self.binary_path, self.env, timeout=check_timeout)
        self.handlers: tuple[Emit, ...] = _handlers("CliAgent", event_handler, event_handlers)
        self.locks: KeyedLocks = locks if locks is not None else KeyedLocks()

    def derive(
        self,
        *,
        model: str | None = None,
        event_handler: EventSink | None = None,
        event_handlers: EventSink | Sequence[EventSink] = (),
    ) -> CliAgent:
        """Return an agent on the same checked install with another model and handlers.

        The binary is not looked up or checked again; the conversation locks are shared. With
        no ``model`` it keeps this agent's, and with no handler given it keeps this agent's.
        """
        handlers = _handlers("CliAgent.derive", event_handler, event_handlers)
        if not handlers:
            handlers = self.handlers
        # A shallow copy shares the provider, executor, env and lock registry as they are.
        derived = copy.copy(self)
        derived.model = model if model is not None else self.model
        derived.handlers = handlers
        return derived

    def start_session(
        self,
        *,
        cwd: str | None = None,
        timeout: float | None = None,
        session_id: str | None = None,
        previous_usage: ProviderUsage | None = None,
        stall_timeout: float | None = None,
        fork: bool = False,
    ) -> AgentSession:
        """Return a session whose turns run in ``cwd`` and resume ``session_id`` if given.

        ``stall_timeout`` kills a turn's CLI that prints nothing for that long (TurnStalledError);
        ``fork`` starts a new conversation from ``session_id``'s history on the first turn.

        Raises:
            InvalidRequestError: ``timeout`` is not a positive number of seconds, or ``cwd``
                is not an existing directory of this machine when the CLI runs here.
        """
        if isinstance(self.executor, HostCommandExecutor):
            cwd = working_directory("", "cwd", directory("", "cwd", cwd))
        return AgentSession(
            self,
            cwd=cwd,
            timeout=timeout,
            session_id=session_id,
            previous_usage=previous_usage,
            stall_timeout=stall_timeout,
            fork=fork,
        )

    def run(
        self,
        request: TurnRequest | str,
        *,
        cwd: str | None = None,
        timeout: float | None = None,
        on_event: EventSink | None = None,
    ) -> TurnResult:
        """Run one turn in a fresh conversation and return its result.

        ``on_event`` receives this turn's events after the agent's handlers.
        """
        return self.start_session(cwd=cwd, timeout=timeout).turn(request, on_event=on_event)

    def session_title(self, session_id: str, *, timeout: float = 10.0) -> SessionTitle | None:
        """The title the CLI gave conversation ``session_id``, read where the CLI runs.

        For a CLI that writes its titles out of band (Claude Code's transcript) the probe of
        :func:`agentshim.titles.title_probe` runs through this agent's executor, with its env,
        and :func:`agentshim.titles.parse_title` reads what it printed. None when there is no
        title (no transcript, no title yet), and for a CLI that names its titles in band (they
        arrive as SessionTitle events during the turn).

        Raises:
            InvalidSessionIdError: ``session_id`` is not a safe id.
            InvalidRequestError: ``timeout`` is not a positive number of seconds.
            CliTimeoutError: the probe ran longer than ``timeout``.
        """
        # Imported here: the titles module reads Claude Code's transcript format, which an
        # import of this module should not load.
        from agentshim.titles import parse_title, title_probe

        validate_session_id(session_id)
        limit = seconds("CliAgent.session_title", "timeout", timeout, positive=True)
        probe = title_probe(self.profile.name, session_id)
        if probe is None:
            return None
        printed: list[str] = []
        request = CommandRequest(argv=["sh", "-c", probe], env=self.env, timeout=limit)
        self.executor.run(request, CallbackSink(on_stdout=printed.append))
        return parse_title(self.profile.name, "".join(printed))


def _handlers(owner: str, handler: EventSink | None, handlers: object) -> tuple[Emit, ...]:
    first = (event_callback("event_handler", handler),) if handler is not None else ()
    return (*first, *event_callbacks(owner, "event_handlers", handlers))


def _compose_env(provider: Provider, env: Mapping[str, str] | None) -> dict[str, str]:
    composed = dict(interactive_env()) if env is None else dict(env)
    defaults: Mapping[str, str] = (
        provider.env_defaults if isinstance(provider, EnvDefaultsProvider) else {}
    )
    for key, value in defaults.items():
        composed.setdefault(key, value)
    composed.update(_required_env(provider))
    return composed


def _required_env(provider: Provider) -> Mapping[str, str]:
    # Values the CLI needs to run at all as root (Claude Code refuses its bypass flags to root
    # unless IS_SANDBOX=1): they win over an inherited or passed value such as IS_SANDBOX=yes,
    # which the CLI does not accept.
    return provider.profile.container_env if _running_as_root() else {}


def _running_as_root() -> bool:
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0


class _TurnSink:
    """Feeds executor output into the parser; a stop ends the process once it exists."""

    __slots__ = (
        "_detach",
        "_done",
        "_grace",
        "_guard",
        "_kill_timer",
        "_stop",
        "side_channel",
        "stderr",
        "stdout",
    )

    def __init__(self, parser: StreamParser, stop: TurnStop, grace: Callable[[], float]) -> None:
        # Bound methods: the executor calls these once per line, so skip a layer of dispatch.
        self.stdout = parser.feed_stdout
        self.stderr = parser.feed_stderr
        self._stop = stop
        self._grace = grace
        self._guard = threading.Lock()
        self._done = False
        self._kill_timer: threading.Timer | None = None
        self._detach: Callable[[], None] = do_nothing
        # The turn's tools, served by the executor on this thread between output lines.
        self.side_channel: LocalToolServer | None = None

    def started(self, handle: CommandHandle) -> None:
        def terminate() -> None:
            with self._guard:
                if self._done:
                    return
                timer = threading.Timer(self._grace(), handle.kill)
                timer.daemon = True
                self._kill_timer = timer
                timer.start()
            handle.terminate()

        # A stop requested before the process existed runs ``terminate`` right here.
        self._detach = self._stop.attach(terminate)

    def finished(self) -> None:
        """The process is gone: a later stop has nothing to end."""
        self._detach()
        with self._guard:
            self._done = True
            timer = self._kill_timer
        if timer is not None:
            timer.cancel()


class AgentSession:
    """A conversation with one CLI, one process per turn; not safe to ``turn()`` concurrently.

    ``session_id`` names the provider conversation the next turn resumes (None: start fresh).
    ``cancel`` is the one thread-safe call. ``cancel_grace`` is how long a stopped CLI gets
    between SIGTERM and SIGKILL when the stop comes through a ``TurnStop`` rather than
    ``cancel(grace)``. ``stall_timeout`` (None: off) kills a turn's CLI when it prints
    nothing for that long, and the turn raises TurnStalledError. With ``fork`` the first turn
    starts a new conversation from ``session_id``'s history (where the profile
    ``supports_fork``); the session then holds the new conversation.
    """

    def __init__(
        self,
        agent: CliAgent,
        *,
        cwd: str | None = None,
        timeout: float | None = None,
        session_id: str | None = None,
        previous_usage: ProviderUsage | None = None,
        cancel_grace: float = 5.0,
        stall_timeout: float | None = None,
        fork: bool = False,
    ) -> None:
        self.agent = agent
        if fork and (session_id is None or not agent.profile.supports_fork):
            raise ProviderCapabilityError(
                f"{agent.profile.display_name} cannot fork a conversation"
                if session_id is not None
                else "fork=True needs the session_id of the conversation to fork"
            )
        self.fork = fork
        self.stall_timeout = (
            None
            if stall_timeout is None
            else seconds("AgentSession", "stall_timeout", stall_timeout, positive=True)
        )
        self.cwd = directory("AgentSession", "cwd", cwd)
        self.timeout = (
            None if timeout is None else seconds("AgentSession", "timeout", timeout, positive=True)
        )
        self.session_id: str | None = (
            validate_session_id(session_id) if session_id is not None else None
        )
        self.previous_usage = previous_usage
        self.last_result: TurnResult | None = None
        self._state = threading.Lock()
        self._busy = False
        self._stop: TurnStop | None = None
        self._default_grace = seconds("AgentSession", "cancel_grace", cancel_grace)
        self._grace_s = self._default_grace

    # -- conversation bookkeeping -------------------------------------------------------

    def adopt(self, session_id: str, *, previous_usage: ProviderUsage | None = None) -> bool:
        """Make the next turn resume ``session_id``.

        Returns False (and changes nothing) when the provider cannot resume or a turn is in
        flight; raises InvalidSessionIdError for an id that is not safe to pass to the CLI.
        """
        validate_session_id(session_id)
        if not self.agent.profile.supports_resume:
            return False
        return self._hold(session_id, previous_usage)

    def forget(self) -> bool:
        """Drop the conversation so the next turn starts fresh; False while a turn is in flight."""
        return self._hold(None, None)

    def _hold(self, session_id: str | None, previous_usage: ProviderUsage | None) -> bool:
        """Hold ``session_id`` for the next turn, unless a turn is in flight (then False)."""
        with self._state:
            if self._busy:
                return False
            self.session_id = session_id
            self.previous_usage = previous_usage
            return True

    def cancel(self, grace: float = 5.0) -> None:
        """Cancel the turn in flight: it raises TurnCancelledError; the session id is kept.

        Thread-safe. The CLI's process group gets SIGTERM, then SIGKILL after ``grace`` or
        after the executor's own grace, whichever is sooner: ``HostCommandExecutor`` kills a
        terminated process after its ``terminate_grace`` (5 s by default), so a longer
        ``grace`` needs a longer ``terminate_grace`` too. A cancel that arrives before the
        process exists is not lost: the CLI is not started, or is terminated the moment it
        starts. The outcome is the same however late in the turn the cancel comes, even when
        the CLI then exits cleanly. With no turn in flight it does nothing (the next turn is
        not affected).
        """
        grace = seconds("AgentSession.cancel", "grace", grace)
        with self._state:
            stop = self._stop
            if stop is None:
                return
            self._grace_s = grace
        stop.request()

    # -- the turn -----------------------------------------------------------------------

    def turn(
        self,
        request: TurnRequest | str,
        *,
        on_event: EventSink | None = None,
        stop: TurnStop | None = None,
    ) -> TurnResult:
        """Run one turn and return its result.

        Events go to the agent's handlers, then to ``on_event`` (an AgentEventHandler or a
        function of one event), on this thread. ``stop`` is the turn's stop request when the
        caller holds one: requesting it (before the turn or during it) is ``cancel()``.

        Raises only AgentShimError subclasses (SessionStateError for a second concurrent turn,
        ProviderCapabilityError/SchemaDialectError before anything runs, CliExitError or
        SessionResumeError when the CLI or its stream reports failure, CliTimeoutError with the
        partial turn, TurnCancelledError after ``cancel()``), except that an event handler that
        raises fails the turn with its own exception.
        """
        handlers = self.agent.handlers
        if on_event is not None:
            handlers = (*handlers, event_callback("on_event", on_event))
        turn_stop = stop if stop is not None else TurnStop()
        with self._state:
            if self._busy:
                raise SessionStateError(
                    "a turn is already running in this session; wait for it or cancel() it"
                )
            self._busy = True
            self._stop = turn_stop
            self._grace_s = self._default_grace
        installation: McpInstallation | None = None
        serving: LocalToolServer | None = None
        lock = ConversationLock(self.agent.locks, self.agent.profile.name)
        try:
            turn = _PreparedTurn(self, _as_request(request))
            resume_session_id = self.session_id
            if resume_session_id is not None and not lock.wait(resume_session_id, turn_stop):
                raise _cancelled_before_start()
            if turn_stop.is_set():
                raise _cancelled_before_start()
            watched = _Handlers(handlers)
            emit: Emit = watched
            if resume_session_id is None:
                emit = lock.watching(emit)
            serving = turn.serve_tools(emit)
            installation = turn.install_mcp(serving)
            turn.add_env(mcp_env(installation))
            turn.add_env_defaults(mcp_env_defaults(installation))
            argv = turn.build_argv(resume_session_id, installation.argv)
            result = self._execute(turn, argv, resume_session_id, emit, watched, turn_stop, serving)
            # Restored before the result is returned, so what restore could not do exactly
            # reaches the caller on the result and the event stream, not only the log.
            done, installation = installation, None
            note = self._restore(done)
            if note:
                emit(Lifecycle(lk.MCP_CONFIG_RESTORE, note))
                result = dataclasses.replace(result, notices=(*result.notices, note))
            return result
        finally:
            try:
                if installation is not None:
                    self._restore(installation)
            finally:
                if serving is not None:
                    serving.close()
                lock.release()
                with self._state:
                    self._stop = None
                    self._busy = False

    def _restore(self, installation: McpInstallation) -> str | None:
        note = installation.restore()
        if note:
            try:
                self.agent.log(note)
            except Exception:
                # The log is a side channel: a failing one must not replace the turn's own
                # result or error (the note also reaches the result and the event stream).
                pass
        return note

    def _execute(
        self,
        turn: _PreparedTurn,
        argv: list[str],
        resume_session_id: str | None,
        emit: Emit,
        handler: _Handlers,
        stop: TurnStop,
        serving: LocalToolServer | None,
    ) -> TurnResult:
        provider = self.agent.provider
        parser = provider.new_parser(emit, expect_structured=turn.request.output_schema is not None)
        if isinstance(parser, ContextualStreamParser):
            parser.configure(
                ParserContext(
                    previous_usage=self.previous_usage if resume_session_id is not None else None,
                    resumed=resume_session_id is not None,
                    requested_session_id=resume_session_id,
                    model=turn.request.model or self.agent.model,
                )
            )
        command = CommandRequest(
            argv=argv,
            stdin=turn.request.prompt,
            cwd=turn.cwd,
            env=turn.env,
            timeout=turn.timeout,
            idle_timeout=self.stall_timeout,
        )
        emit(RunStarted(tuple(argv)))
        started = time.monotonic()
        sink = _TurnSink(parser, stop, lambda: self._grace_s)
        sink.side_channel = serving
        try:
            outcome = self.agent.executor.run(command, sink)
        except BaseException as error:
            # A handler's exception fails the turn as it is, even one that looks like the
            # executor's own (a BrokenPipeError from a client that went away is an OSError).
            handler.reraise()
            self._run_failed(error, parser, emit, stop, argv)
            raise
        finally:
            sink.finished()
        # An executor that swallowed the handler's exception still fails the turn with it.
        handler.reraise()
        duration_ms = int((time.monotonic() - started) * 1000)
        emit(RunFinished(outcome.returncode))
        parsed = _finish(parser, emit)
        resumed = resume_session_id is not None and parsed.session_id in (None, resume_session_id)
        if turn.fork and resume_session_id is not None and parsed.session_id:
            resumed = False
            emit(Lifecycle(lk.FORKED, f"{resume_session_id} -> {parsed.session_id}"))
        elif resume_session_id is not None and parsed.session_id not in (None, resume_session_id):
            emit(
                Lifecycle(
                    lk.RESUME_REPLACED,
                    f"asked to resume {resume_session_id} but the CLI continued in "
                    f"{parsed.session_id}",
                )
            )
        if stop.is_set():
            # The caller stopped the CLI: whatever it printed on the way out (a resumed Claude
            # turn looks like a lost conversation) says nothing about the conversation.
            self._adopt_from(parsed)
            self._raise_if_cancelled(stop, argv, outcome.returncode, None)
        if outcome.returncode != 0 or parsed.error is not None:
            self._raise_failure(argv, outcome, parsed, resumed=resume_session_id is not None)
        self._adopt_from(parsed)
        usage = parsed.usage or ProviderUsage(
            provider=self.agent.profile.name, increment_known=False
        )
        self.previous_usage = usage
        # Imported here: the catalogue reads every provider's tables, which most imports
        # of this module never need.
        from agentshim.models import context_window_of

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
            context_window=parsed.context_window
            or context_window_of(usage.model or turn.request.model or self.agent.model),
            background_tasks=parsed.background_tasks,
            notices=parsed.notes,
        )
        self.last_result = result
        return result

    def _run_failed(
        self,
        error: BaseException,
        parser: StreamParser,
        emit: Emit,
        stop: TurnStop,
        argv: list[str],
    ) -> None:
        """Report how the executor failed, as the typed error a caller of ``turn`` sees."""
        if isinstance(error, CliTimeoutError):
            emit(RunFinished(None))
            partial = _finish(parser, emit)
            self._adopt_from(partial)
            self._raise_if_cancelled(stop, argv, None, error)
            raise CliTimeoutError(error.argv or argv, error.timeout, partial) from error
        if isinstance(error, AgentShimError):
            emit(RunFinished(None))
            self._adopt_from(_finish(parser, emit))
            self._raise_if_cancelled(stop, argv, None, error)
        elif isinstance(error, OSError):
            emit(RunFinished(None))
            self._adopt_from(_finish(parser, emit))
            raise TurnFailedError(
                f"could not run {argv[0]}: {error}; check the binary and the turn's cwd",
                detail=str(error),
            ) from error

    def _raise_if_cancelled(
        self,
        stop: TurnStop,
        argv: list[str],
        returncode: int | None,
        cause: BaseException | None,
    ) -> None:
        if not stop.is_set():
            return
        if returncode is None and isinstance(cause, CliExitError):
            returncode = cause.returncode
        raise TurnCancelledError(
            f"the turn was cancelled while {argv[0]} ran"
            + (f" (exit {returncode})" if returncode is not None else "")
            + "; the conversation is intact: run another turn in this session to continue",
            returncode=returncode,
        ) from cause

    def _raise_failure(
        self, argv: list[str], outcome: CommandResult, parsed: ParsedTurn, *, resumed: bool
    ) -> None:
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
            if parsed.session_id != self.session_id:
                self.fork = False  # the fork exists now; later turns continue it
            self.session_id = parsed.session_id
            if parsed.usage is not None:
                self.previous_usage = parsed.usage


def _cancelled_before_start() -> TurnCancelledError:
    return TurnCancelledError(
        "the turn was cancelled before its CLI started; nothing ran and the conversation is "
        "intact: run another turn in this session to continue"
    )


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
        self.env = {**agent.env, **(request.env or {}), **_required_env(agent.provider)}
        if request.reasoning_effort is not None and not profile.supports_reasoning_effort:
            raise ProviderCapabilityError(
                f"{profile.display_name} has no reasoning-effort setting; "
                "drop reasoning_effort from the request"
            )
        if self.cwd is not None and not os.path.isdir(self.cwd) and _is_host(agent.executor):
            raise InvalidRequestError(
                "cwd",
                f"{self.cwd!r} is not an existing directory",
                f"the turn's cwd {self.cwd!r} is not an existing directory; create it or pass "
                "another cwd",
            )
        self.fork = session.fork
        self.schema_inline: str | None = None
        self.schema_path: str | None = None
        schema = request.output_schema
        if schema is not None:
            self._prepare_schema(profile, schema)
        if request.attachments:
            raise ProviderCapabilityError(
                f"{profile.display_name} one-shot turns take the prompt as text only; drop "
                "attachments, or use an ACP agent's transport, which sends them"
            )

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
        if schema.host_dir is None:
            raise InvalidRequestError(
                "output_schema.host_dir",
                "is needed: this CLI reads its schema from a file",
                f"{profile.display_name} reads its output schema from a file; give "
                "OutputSchema(schema, host_dir=<an absolute directory it may be written to>)",
            )
        # materialize reports a directory it cannot write as an AgentShimError itself.
        written = materialize(schema.schema, schema.host_dir)
        self.schema_path = f"{schema.cli_dir_or_host.rstrip('/')}/{written.name}"

    def serve_tools(self, emit: Emit) -> LocalToolServer | None:
        """Start serving the request's tools (None when it has none); see agentshim.tools."""
        tools = self.request.tools
        if not tools:
            return None
        profile = self.agent.profile
        if profile.mcp is McpMechanism.NONE and not isinstance(self.agent.provider, InstallsTools):
            raise ProviderCapabilityError(
                f"{profile.display_name} has no MCP support, so it cannot call Python tools; "
                "drop tools, or use a provider that takes MCP servers"
            )
        if any(server.name == TOOL_SERVER_NAME for server in self.request.mcp_servers):
            raise InvalidRequestError(
                "TurnRequest.mcp_servers",
                f"an MCP server is named {TOOL_SERVER_NAME!r}",
                f"an MCP server is named {TOOL_SERVER_NAME!r}, the name the turn's tools are "
                "served under; rename that server",
            )
        refuse_remote_executor(self.agent.executor)
        return serve_tools(tools, emit=emit)

    def install_mcp(self, serving: LocalToolServer | None) -> McpInstallation:
        provider = self.agent.provider
        servers = tuple(self.request.mcp_servers)
        if serving is not None and not isinstance(provider, InstallsTools):
            servers = (*servers, serving.server)
        workspace = self.request.mcp_workspace
        if workspace is None and self.cwd is not None:
            workspace = Path(self.cwd)
        installation = provider.install_mcp(workspace, servers)
        if serving is not None and isinstance(provider, InstallsTools):
            installation = with_tools(installation, provider.install_tools(serving))
        return installation

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

    def add_env_defaults(self, defaults: Mapping[str, str]) -> None:
        """Give the CLI each of ``defaults`` its env does not set (the caller's value wins)."""
        if defaults:
            self.env = {**defaults, **self.env}

    def build_argv(self, resume_session_id: str | None, mcp_argv: Sequence[str]) -> list[str]:
        return self.agent.provider.build_argv(
            ArgvContext(
                binary_path=self.agent.binary_path,
                model=self.request.model or self.agent.model,
                env=self.env,
                resume_session_id=resume_session_id,
                reasoning_effort=self.request.reasoning_effort,
                schema_inline=self.schema_inline,
                schema_path=self.schema_path,
                mcp_argv=tuple(mcp_argv),
                extra_args=tuple(self.request.extra_args),
                cwd=self.cwd,
                fork_session=self.fork and resume_session_id is not None,
            )
        )


def _is_host(executor: CommandExecutor) -> bool:
    return isinstance(executor, HostCommandExecutor)


def _finish(parser: StreamParser, emit: Emit) -> ParsedTurn:
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
            lk.SESSION_ID_REFUSED,
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
