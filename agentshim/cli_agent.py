"""CliAgent and AgentSession: the script door, one CLI process per turn over an InstalledCli.

This module sits above ``providers/`` because turning a provider name into a provider means
importing the catalog, which ``core/`` may not do.
"""

from __future__ import annotations

import dataclasses
import os
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path

from agentshim.core import lifecycle_kinds as lk
from agentshim.core._checks import is_positive_seconds, model_name, seconds, working_directory
from agentshim.core.conversation import TurnStop, directory, do_nothing
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
    Emit,
    EventSink,
    Lifecycle,
    RunFinished,
    RunStarted,
    SessionTitle,
    TurnInterrupted,
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
from agentshim.execution.executor import (
    CallbackSink,
    CommandExecutor,
    CommandHandle,
    CommandRequest,
    CommandResult,
)
from agentshim.execution.host import HostCommandExecutor
from agentshim.providers import DEFAULT_CATALOG, ProviderCatalog
from agentshim.state.leases import (
    ConversationLeases,
    InMemoryLeases,
    LeaseKeeper,
    TurnLease,
    conversation_key,
    kept_leases,
)
from agentshim.tools.local import (
    InstallsTools,
    LocalToolServer,
    refuse_remote_executor,
    serve_tools,
    with_tools,
)
from agentshim.transport.installed import InstalledCli, ignore_log_line, required_env

__all__ = ["AgentSession", "CliAgent", "catalogue_window", "read_session_title"]

#: How long a turn's conversation lease lives between renewals when the leases expire (s).
_LEASE_TTL_S = 30.0


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


def catalogue_window(model: str | None) -> int | None:
    """The catalogue's context window of ``model`` (the catalogue is imported when asked)."""
    # Imported here: the catalogue reads every provider's tables, which most imports of this
    # module never need.
    from agentshim.models import context_window_of

    return context_window_of(model)


class CliAgent:
    """The script door: one installed, health-checked agent CLI, ready to run turns.

    ``provider`` is a provider name, a Provider, or an :class:`InstalledCli` already found
    (then ``model``, ``executor`` and ``env`` are refused: they are the InstalledCli's; use
    ``dataclasses.replace(cli, model=...)`` for another model). Otherwise the constructor finds the binary on the env's PATH and checks it once
    (:meth:`InstalledCli.find`); every session and turn reuses that. ``env=None`` takes the
    user's interactive shell environment, so the CLI sees the same PATH and credentials it
    does in a terminal.

    ``event_handlers`` receive every turn's events; each is an AgentEventHandler or a plain
    function of one event. ``leases`` serialize the turns of one provider conversation: two
    sessions that hold the same conversation take turns in it. By default the CliAgent keeps
    in-process leases of its own; pass ``SqliteStore(path)`` (or any ConversationLeases) to
    serialize across processes.
    """

    def __init__(
        self,
        provider: str | Provider | InstalledCli,
        *,
        model: str | None = None,
        executor: CommandExecutor | None = None,
        env: Mapping[str, str] | None = None,
        event_handlers: EventSink | Sequence[EventSink] = (),
        check_timeout: float = 15.0,
        log: Callable[[str], None] | None = None,
        catalog: ProviderCatalog = DEFAULT_CATALOG,
        leases: ConversationLeases | None = None,
    ) -> None:
        self.log: Callable[[str], None] = log or ignore_log_line
        # Checked before the CLI is looked for: a wrong argument runs nothing.
        self.handlers: tuple[Emit, ...] = event_callbacks(
            "CliAgent", "event_handlers", event_handlers
        )
        given = kept_leases("CliAgent", leases, self.log)
        self.leases: ConversationLeases = (
            given if given is not None else LeaseKeeper(InMemoryLeases(expires=False))
        )
        if isinstance(provider, InstalledCli):
            own = [
                name
                for name, value in (("model", model), ("executor", executor), ("env", env))
                if value is not None
            ]
            if own:
                raise InvalidRequestError(
                    own[0],
                    "given with an InstalledCli",
                    f"{own[0]} is the InstalledCli's own; drop it, or pass "
                    f"dataclasses.replace(cli, {own[0]}=...)",
                )
            self.cli: InstalledCli = provider
        else:
            found = (
                catalog.plugin(provider).create_provider()
                if isinstance(provider, str)
                else provider
            )
            self.cli = InstalledCli.find(
                found,
                executor if executor is not None else HostCommandExecutor(),
                env,
                model=model_name("CliAgent", "model", model),
                check_timeout=seconds("CliAgent", "check_timeout", check_timeout, positive=True),
                log=self.log,
                context_window=catalogue_window,
            )

    @property
    def profile(self) -> ProviderProfile:
        """The provider's static capabilities (``cli`` holds the rest of the installed CLI)."""
        return self.cli.provider.profile

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
        if isinstance(self.cli.executor, HostCommandExecutor):
            cwd = working_directory("", "cwd", directory("", "cwd", cwd))
        return AgentSession(
            self.cli,
            event_handlers=self.handlers,
            leases=self.leases,
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
        """The title the CLI gave conversation ``session_id``; see :func:`read_session_title`."""
        return read_session_title(self.cli, session_id, timeout=timeout)


def read_session_title(
    cli: InstalledCli, session_id: str, *, timeout: float = 10.0
) -> SessionTitle | None:
    """The title ``cli`` gave conversation ``session_id``, read where the CLI runs.

    For a CLI that writes its titles out of band (Claude Code's transcript) the probe of
    :func:`agentshim.titles.title_probe` runs through the CLI's executor, with its env, and
    :func:`agentshim.titles.parse_title` reads what it printed. None when there is no title
    (no transcript, no title yet), and for a CLI that names its titles in band (they arrive
    as SessionTitle events during the turn).

    Raises:
        InvalidSessionIdError: ``session_id`` is not a safe id.
        InvalidRequestError: ``timeout`` is not a positive number of seconds.
        CliTimeoutError: the probe ran longer than ``timeout``.
    """
    # Imported here: the titles module reads Claude Code's transcript format, which an
    # import of this module should not load.
    from agentshim.titles import parse_title, title_probe

    validate_session_id(session_id)
    limit = seconds("read_session_title", "timeout", timeout, positive=True)
    name = cli.provider.profile.name
    probe = title_probe(name, session_id)
    if probe is None:
        return None
    printed: list[str] = []
    request = CommandRequest(argv=["sh", "-c", probe], env=dict(cli.env), timeout=limit)
    cli.executor.run(request, CallbackSink(on_stdout=printed.append))
    return parse_title(name, "".join(printed))


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

    ``cli`` is the installed CLI its turns run (``CliAgent.start_session`` hands its own),
    ``event_handlers`` receive every turn's events, and ``leases`` (None: none taken) keep
    two sessions from running turns in one provider conversation at the same time.
    ``session_id`` names the provider conversation the next turn resumes (None: start fresh).
    ``interrupt`` (and its alias ``cancel``) is the one thread-safe call. ``cancel_grace`` is
    how long a stopped CLI gets between SIGTERM and SIGKILL. ``stall_timeout`` (None: off)
    kills a turn's CLI when it prints nothing for that long, and the turn raises
    TurnStalledError. With ``fork`` the first turn starts a new conversation from
    ``session_id``'s history (where the profile ``supports_fork``); the session then holds the
    new conversation.
    """

    def __init__(
        self,
        cli: InstalledCli,
        *,
        event_handlers: EventSink | Sequence[EventSink] = (),
        leases: ConversationLeases | None = None,
        cwd: str | None = None,
        timeout: float | None = None,
        session_id: str | None = None,
        previous_usage: ProviderUsage | None = None,
        cancel_grace: float = 5.0,
        stall_timeout: float | None = None,
        fork: bool = False,
    ) -> None:
        self.cli = cli
        profile = cli.provider.profile
        if fork and (session_id is None or not profile.supports_fork):
            raise ProviderCapabilityError(
                f"{profile.display_name} cannot fork a conversation"
                if session_id is not None
                else "fork=True needs the session_id of the conversation to fork"
            )
        self.fork = fork
        self.handlers: tuple[Emit, ...] = event_callbacks(
            "AgentSession", "event_handlers", event_handlers
        )
        self._leases = kept_leases("AgentSession", leases, cli.log)
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

    @property
    def profile(self) -> ProviderProfile:
        """The provider's static capabilities."""
        return self.cli.provider.profile

    # -- conversation bookkeeping -------------------------------------------------------

    def adopt(self, session_id: str, *, previous_usage: ProviderUsage | None = None) -> bool:
        """Make the next turn resume ``session_id``.

        Returns False (and changes nothing) when the provider cannot resume or a turn is in
        flight; raises InvalidSessionIdError for an id that is not safe to pass to the CLI.
        """
        validate_session_id(session_id)
        if not self.profile.supports_resume:
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

    def interrupt(self) -> None:
        """Cut the running turn short; thread-safe. ``Session.interrupt`` does the same.

        A turn whose CLI is running (or exiting on its own) returns its result marked
        ``interrupted`` (with what the CLI printed before it stopped) and emits
        ``TurnInterrupted``; the session keeps its conversation. A turn that has not started
        its CLI yet (waiting for another session's turn in the conversation) raises
        TurnCancelledError with nothing run. The CLI's process group gets SIGTERM, then
        SIGKILL after ``cancel_grace``. With no turn in flight it does nothing: the next turn
        is not affected.
        """
        with self._state:
            stop = self._stop
        if stop is not None:
            stop.request()

    def cancel(self, grace: float = 5.0) -> None:
        """``interrupt()`` with ``grace`` seconds between SIGTERM and SIGKILL; thread-safe.

        Kept as an alias of :meth:`interrupt`, with the same outcome. ``HostCommandExecutor``
        kills a terminated process after its ``terminate_grace`` (5 s by default) whatever
        ``grace`` says, so a longer ``grace`` needs a longer ``terminate_grace`` too.
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
        """Run one turn and return its result (the same contract as ``Session.turn``).

        Events go to the session's handlers, then to ``on_event`` (an AgentEventHandler or a
        function of one event), on this thread. ``stop`` is the turn's stop request when the
        caller holds one: requesting it (before the turn or during it) is ``interrupt()``.

        Returns the turn's TurnResult: ``interrupted`` is True when ``interrupt()`` stopped
        the CLI once it ran (the text is what it printed until then).

        Raises only AgentShimError subclasses (SessionStateError for a second concurrent turn,
        ProviderCapabilityError/SchemaDialectError before anything runs, CliExitError or
        SessionResumeError when the CLI or its stream reports failure, CliTimeoutError with the
        partial turn, TurnCancelledError after an ``interrupt()`` that came before the CLI
        started), except that an event handler that raises fails the turn with its own
        exception.
        """
        handlers = self.handlers
        if on_event is not None:
            handlers = (*handlers, event_callback("on_event", on_event))
        turn_stop = stop if stop is not None else TurnStop()
        with self._state:
            if self._busy:
                raise SessionStateError(
                    "a turn is already running in this session; wait for it or interrupt() it"
                )
            self._busy = True
            self._stop = turn_stop
            self._grace_s = self._default_grace
        installation: McpInstallation | None = None
        serving: LocalToolServer | None = None
        lease = TurnLease(self._leases, _LEASE_TTL_S, None) if self._leases is not None else None
        try:
            turn = _PreparedTurn(self, _as_request(request))
            resume_session_id = self.session_id
            name = self.profile.name
            if (
                lease is not None
                and resume_session_id is not None
                and not lease.wait(conversation_key(name, resume_session_id), turn_stop)
            ):
                raise _cancelled_before_start()
            if turn_stop.is_set():
                raise _cancelled_before_start()
            watched = _Handlers(handlers)
            emit: Emit = watched
            if lease is not None and resume_session_id is None:
                emit = lease.watching(emit, lambda session_id: conversation_key(name, session_id))
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
                if lease is not None:
                    lease.release()
                with self._state:
                    self._stop = None
                    self._busy = False

    def _restore(self, installation: McpInstallation) -> str | None:
        note = installation.restore()
        if note:
            try:
                self.cli.log(note)
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
        cli = self.cli
        parser = cli.provider.new_parser(
            emit, expect_structured=turn.request.output_schema is not None
        )
        if isinstance(parser, ContextualStreamParser):
            parser.configure(
                ParserContext(
                    previous_usage=self.previous_usage if resume_session_id is not None else None,
                    resumed=resume_session_id is not None,
                    requested_session_id=resume_session_id,
                    model=turn.model,
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
        started = cli.monotonic()
        sink = _TurnSink(parser, stop, lambda: self._grace_s)
        sink.side_channel = serving
        try:
            outcome = cli.executor.run(command, sink)
        except BaseException as error:
            # A handler's exception fails the turn as it is, even one that looks like the
            # executor's own (a BrokenPipeError from a client that went away is an OSError).
            handler.reraise()
            if stop.is_set() and isinstance(error, (AgentShimError, OSError)):
                # However the executor reports the process it was told to stop, the turn
                # was interrupted on request.
                emit(RunFinished(None))
                partial = _finish(parser, emit)
                return self._interrupted(turn, partial, emit, _exit_code(error), started)
            self._run_failed(error, parser, emit, argv)
            raise
        finally:
            sink.finished()
        # An executor that swallowed the handler's exception still fails the turn with it.
        handler.reraise()
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
            return self._interrupted(turn, parsed, emit, outcome.returncode, started, resumed)
        if outcome.returncode != 0 or parsed.error is not None:
            self._raise_failure(argv, outcome, parsed, resumed=resume_session_id is not None)
        self._adopt_from(parsed)
        result = self._result(turn, parsed, outcome.returncode, started, resumed=resumed)
        self.previous_usage = result.usage
        return result

    def _interrupted(
        self,
        turn: _PreparedTurn,
        parsed: ParsedTurn,
        emit: Emit,
        exit_code: int,
        started: float,
        resumed: bool | None = None,
    ) -> TurnResult:
        """The result of a turn stopped on request, from what the CLI printed until then."""
        # Whatever the stopped CLI printed on the way out (a resumed Claude turn looks like a
        # lost conversation) says nothing about the conversation: keep it.
        if resumed is None:
            resumed = turn.resumes is not None
        self._adopt_from(parsed)
        emit(TurnInterrupted("interrupted on request"))
        return self._result(turn, parsed, exit_code, started, resumed=resumed, interrupted=True)

    def _result(
        self,
        turn: _PreparedTurn,
        parsed: ParsedTurn,
        exit_code: int,
        started: float,
        *,
        resumed: bool,
        interrupted: bool = False,
    ) -> TurnResult:
        cli = self.cli
        usage = parsed.usage or ProviderUsage(provider=self.profile.name, increment_known=False)
        result = TurnResult(
            text=parsed.text,
            structured_output=parsed.structured_output,
            session_id=self.session_id,
            resumed=resumed,
            usage=usage,
            cost_usd=parsed.cost_usd,
            duration_ms=int((cli.monotonic() - started) * 1000),
            exit_code=exit_code,
            interrupted=interrupted,
            context_tokens=parsed.context_tokens,
            context_window=parsed.context_window or cli.context_window(usage.model or turn.model),
            background_tasks=parsed.background_tasks,
            notices=parsed.notes,
        )
        self.last_result = result
        return result

    def _run_failed(
        self, error: BaseException, parser: StreamParser, emit: Emit, argv: list[str]
    ) -> None:
        """Report how the executor failed, as the typed error a caller of ``turn`` sees."""
        if isinstance(error, CliTimeoutError):
            emit(RunFinished(None))
            partial = _finish(parser, emit)
            self._adopt_from(partial)
            raise CliTimeoutError(error.argv or argv, error.timeout, partial) from error
        if isinstance(error, AgentShimError):
            emit(RunFinished(None))
            self._adopt_from(_finish(parser, emit))
        elif isinstance(error, OSError):
            emit(RunFinished(None))
            self._adopt_from(_finish(parser, emit))
            raise TurnFailedError(
                f"could not run {argv[0]}: {error}; check the binary and the turn's cwd",
                detail=str(error),
            ) from error

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
        classified = self.cli.provider.classify_exit(error, resumed=resumed)
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


def _exit_code(error: BaseException) -> int:
    """The stopped CLI's exit status, or -1 when the error carries none."""
    if isinstance(error, (CliExitError, TurnCancelledError)) and error.returncode is not None:
        return error.returncode
    return -1


def _cancelled_before_start() -> TurnCancelledError:
    return TurnCancelledError(
        "the turn was cancelled before its CLI started; nothing ran and the conversation is "
        "intact: run another turn in this session to continue"
    )


class _PreparedTurn:
    """One turn's resolved settings, checked against the provider before anything runs."""

    def __init__(self, session: AgentSession, request: TurnRequest) -> None:
        cli = session.cli
        profile = cli.provider.profile
        self.cli = cli
        self.profile = profile
        self.request = request
        self.model = request.model or cli.model
        self.resumes = session.session_id
        self.cwd = request.cwd if request.cwd is not None else session.cwd
        self.timeout = request.timeout if request.timeout is not None else session.timeout
        if self.timeout is not None and not is_positive_seconds(self.timeout):
            raise InvalidRequestError(
                "timeout",
                f"must be a positive, finite number of seconds (or None), got {self.timeout!r}",
            )
        self.env = {**cli.env, **(request.env or {}), **required_env(cli.provider)}
        if request.reasoning_effort is not None and not profile.supports_reasoning_effort:
            raise ProviderCapabilityError(
                f"{profile.display_name} has no reasoning-effort setting; "
                "drop reasoning_effort from the request"
            )
        if self.cwd is not None and not os.path.isdir(self.cwd) and _is_host(cli.executor):
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
        profile = self.profile
        if profile.mcp is McpMechanism.NONE and not isinstance(self.cli.provider, InstallsTools):
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
        refuse_remote_executor(self.cli.executor)
        return serve_tools(tools, emit=emit)

    def install_mcp(self, serving: LocalToolServer | None) -> McpInstallation:
        provider = self.cli.provider
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
                    f"{self.profile.display_name} passes MCP server env to the server by "
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
        return self.cli.provider.build_argv(
            ArgvContext(
                binary_path=self.cli.binary_path,
                model=self.model,
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
