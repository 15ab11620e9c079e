"""PiRpcTransport: one long-lived ``pi --mode rpc`` process per conversation.

Every turn of a conversation is a ``prompt`` command written to the same process. Pi answers
it with a ``response`` that means "accepted" and then runs the prompt; its events are the
one-shot parser's (rpc mode prints the same event stream as ``--mode json``), read from the
same stdout, and the turn ends at ``agent_end``. Messages steered into a running turn are
``steer`` (or ``follow_up``) commands that Pi runs inside the same run, so the turn still
ends at one ``agent_end``. An interrupt is ``abort``: Pi kills the running tool, ends the run
with ``agent_end`` and only then answers the abort.

Pi names its conversation only when asked (``get_state``), so each process is asked once it
starts, which is also how the transport knows it is ready. The process stays until the
conversation is closed; when it dies, the turn fails with CliDiedError and the next turn
starts a new process with ``--session ID``.

Pi has no permission prompts of its own (every tool runs at once), so the transport takes
only ``NativePermissions.bypass()`` and an ApprovalPolicy: an approval handler would never be
asked. A dialog an extension opens (``extension_ui_request``) is dismissed, as nobody is
there to answer it.

Threading: a turn runs on the thread that calls :meth:`PiRpcConversation.turn`, the only
thread that reads the process and sends events. ``interrupt``, ``steer``, ``follow_up`` and
``close`` may come from any thread: they write their command and wake the reader.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from agentshim.core.conversation import ConversationSpec, TransportKind, TurnSlot, TurnStop
from agentshim.core.errors import (
    AgentShimError,
    CliDiedError,
    CliExitError,
    CliTimeoutError,
    FailureKind,
    InvalidRequestError,
    NoRunningTurnError,
    ProcessClosedError,
    ProviderCapabilityError,
    SessionResumeError,
    TurnCancelledError,
    TurnStalledError,
)
from agentshim.core.events import (
    AgentEvent,
    Lifecycle,
    RunFinished,
    RunStarted,
    SessionStarted,
    TurnInterrupted,
)
from agentshim.core.frames import UNKNOWN_DETAIL_CHARS
from agentshim.core.ids import is_valid_session_id, validate_session_id
from agentshim.core.jsonvalues import as_str
from agentshim.core.permissions import ApprovalPolicy, NativeMode
from agentshim.core.profile import ProviderProfile
from agentshim.core.provider import ArgvContext, ParserContext
from agentshim.core.stream import parse_json_object
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.core.usage import ProviderUsage
from agentshim.execution.process import ProcessExited, SpawnRequest, StderrLine, StdoutLine
from agentshim.tools.local import LocalToolServer, refuse_remote_executor, serve_tools
from agentshim.transport.channel import Channel
from agentshim.transport.context import ContextSource, TransportContext
from agentshim.transport.correlator import Correlator, PendingRequest
from agentshim.transport.fixed import refuse_fixed_changes
from agentshim.transport.watch import Due, TurnWatch

from .parser import PiStreamParser
from .provider import PROFILE, PiProvider
from .rpc_argv import rpc_argv
from .rpc_protocol import (
    DIALOG_METHODS,
    PiState,
    Response,
    command,
    dialog_cancelled,
    failed_run,
    model_command,
    queued_messages,
    read_response,
    read_state,
)
from .tools import tool_extension

__all__ = ["PiRpcConversation", "PiRpcTransport"]

_STARTUP_TIMEOUT = 60.0
"""How long a new process may take to answer ``get_state`` (2 s alone, 4 s when five start)."""

_COMMAND_TIMEOUT = 30.0
"""How long a command of ours that must be answered before a turn (``set_model``) may take."""

# The largest lines Pi prints, each repeating the whole message twice: handed to the parser
# undecoded, as it drops most of them by their first bytes.
_UPDATE_PREFIX = '{"type":"message_update"'


def refuse_unsupported_spec(spec: ConversationSpec) -> None:
    """Refuse what Pi cannot honour: native permissions other than bypass, an approval handler.

    Raises:
        ProviderCapabilityError: ``spec`` asks for one of them.
    """
    if spec.hooks is not None:
        raise ProviderCapabilityError(
            "Pi has no hook callbacks agentshim can register; drop hooks (its extensions can "
            "intercept tool calls, but only from code loaded into Pi)"
        )
    if not isinstance(spec.approvals, ApprovalPolicy):
        raise ProviderCapabilityError(
            "Pi has no approval flow: it runs every tool at once and never asks, so an "
            "approval handler would never be called; pass an ApprovalPolicy, and confine "
            "the agent (a Confinement) to limit what its tools can do"
        )
    mode = spec.permissions.mode
    if mode is not NativeMode.BYPASS:
        raise ProviderCapabilityError(
            f"Pi has no sandbox and no permission modes: only NativePermissions.bypass() is "
            f"possible, not {mode.value}; run the agent inside a Confinement with bypass()"
        )


class PiRpcTransport:
    """A Transport whose conversations each keep one ``pi --mode rpc`` process.

    ``context`` resolves the installed CLI (binary, env, executor) on first use.
    ``turn_timeout`` is the budget of a turn whose request sets none; ``interrupt_grace`` how
    long an aborted turn may take to end before its process is killed; ``close_grace`` how
    long each step of closing a process (stdin EOF, SIGTERM) is given.
    """

    kind = TransportKind.STREAM

    def __init__(
        self,
        context: TransportContext | Callable[[], TransportContext],
        *,
        turn_timeout: float | None = None,
        interrupt_grace: float = 10.0,
        close_grace: float = 5.0,
    ) -> None:
        self._source = ContextSource(context)
        self.turn_timeout = turn_timeout
        self.interrupt_grace = interrupt_grace
        self.close_grace = close_grace

    @property
    def profile(self) -> ProviderProfile:
        """Pi's capabilities."""
        return PROFILE

    @property
    def context(self) -> TransportContext:
        """The resolved CLI (found and checked on first use)."""
        return self._source.get()

    def open(self, spec: ConversationSpec) -> PiRpcConversation:
        """Open a conversation; its process starts with its first turn.

        Raises:
            ProviderCapabilityError: the CLI's provider is not Pi, or ``spec`` asks for
                native permissions other than bypass or for an approval handler.
            InvalidSessionIdError: ``spec.resume_session_id`` is not safe to pass.
        """
        refuse_unsupported_spec(spec)
        context = self.context
        provider = context.provider
        if not isinstance(provider, PiProvider):
            raise ProviderCapabilityError(
                f"the rpc transport speaks Pi's protocol, not {provider.profile.display_name}'s"
            )
        return PiRpcConversation(
            context,
            provider,
            spec,
            turn_timeout=self.turn_timeout,
            interrupt_grace=self.interrupt_grace,
            close_grace=self.close_grace,
        )


class _Turn:
    """What the reader knows about the turn in flight."""

    __slots__ = (
        "abort_answered",
        "abort_due",
        "abort_id",
        "agent_ended",
        "emit",
        "interrupted",
        "parser",
        "probe_answered",
        "probe_id",
        "queued",
        "refused",
        "retrying",
        "started",
        "steered",
        "watch",
    )

    def __init__(
        self, parser: PiStreamParser, emit: Callable[[AgentEvent], None], watch: TurnWatch
    ) -> None:
        self.parser = parser
        self.emit = emit
        self.watch = watch
        self.started = False
        """Pi began the run (``agent_start``): an abort now reaches it."""
        self.agent_ended = False
        self.refused: str | None = None
        """Why Pi refused the prompt, when it did (the run never starts then)."""
        self.interrupted = False
        self.abort_due = False
        """An interrupt came before the run began: the abort goes out at ``agent_start``."""
        self.abort_id: str | None = None
        self.abort_answered = False
        self.retrying = False
        """Pi is retrying a failed model call (``auto_retry_start`` until ``auto_retry_end``)."""
        self.probe_id: str | None = None
        """The ``get_state`` sent after a failed run, to learn whether Pi retries it."""
        self.probe_answered = False
        self.steered: deque[tuple[str, str]] = deque()
        self.queued: list[str] = []
        """What Pi's last ``queue_update`` said is still waiting to be delivered."""

    @property
    def finished(self) -> bool:
        """Nothing more of the run is coming: it ended, or it never started."""
        return self.agent_ended or self.refused is not None

    @property
    def done(self) -> bool:
        """The reader may stop: the run ended and an abort sent for it was answered."""
        if self.refused is not None:
            return True
        return (
            self.agent_ended
            and not self.retrying
            and (self.abort_id is None or self.abort_answered)
            and (self.probe_id is None or self.probe_answered)
        )


class PiRpcConversation:
    """One Pi conversation on one long-lived ``pi --mode rpc`` process (a SteerableConversation)."""

    def __init__(
        self,
        context: TransportContext,
        provider: PiProvider,
        spec: ConversationSpec,
        *,
        turn_timeout: float | None,
        interrupt_grace: float,
        close_grace: float,
    ) -> None:
        if spec.resume_session_id is not None:
            validate_session_id(spec.resume_session_id)
        self._context = context
        self._provider = provider
        self._spec = spec
        self._clock = context.clock
        self._turn_timeout = turn_timeout
        self._interrupt_grace = interrupt_grace
        self._close_grace = close_grace
        self._slot = TurnSlot("this Pi conversation")
        # Guards what other threads touch: the channel, the command ids, the turn in flight.
        self._lock = threading.Lock()
        self._channel: Channel | None = None
        self._commands = Correlator("agentshim")
        self._turn: _Turn | None = None
        self._session_id = spec.resume_session_id
        self._fork = spec.fork
        self._model = spec.model or context.model
        self._model_provider: str | None = provider.provider
        self._stderr: deque[str] = deque(maxlen=200)
        # The conversation's tools, served to the extension that relays them while it runs.
        self._serving: LocalToolServer | None = None

    # -- the Conversation protocol -------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        """The conversation's id; None until Pi names it."""
        return self._session_id

    def turn(
        self,
        request: TurnRequest,
        emit: Callable[[AgentEvent], None],
        stop: TurnStop | None = None,
    ) -> TurnResult:
        """Run one turn on the conversation's process; events go to ``emit`` on this thread.

        A stop requested before the prompt is written raises TurnCancelledError with nothing
        sent; one requested later sends ``abort``, and the turn returns its result marked
        ``interrupted`` (the process and the conversation stay).

        Raises:
            SessionStateError: the conversation is closed, or a turn is already running.
            ProviderCapabilityError: the request asks for what a running process cannot
                change (an output schema, its own env, argv, cwd, MCP servers or thinking
                level), or a model Pi refuses to switch to.
            TurnCancelledError: stopped before the prompt was sent.
            CliDiedError: the process ended mid-turn (the conversation is kept).
            SessionResumeError: Pi no longer has the conversation to resume.
            CliExitError: the model API failed (kind as on one-shot), or Pi refused the prompt.
            CliTimeoutError / TurnStalledError: the turn overran its budget, or went silent.
        """
        turn_stop = self._slot.begin(stop)
        try:
            refuse_fixed_changes(
                "Pi",
                request,
                self._spec,
                also=("mcp_servers",) if request.mcp_servers else (),
                note=" (and Pi has no output schema nor MCP servers)",
            )
            if turn_stop.is_set():
                raise TurnCancelledError(
                    "the turn was cancelled before it was sent; nothing ran and the "
                    "conversation is intact"
                )
            return self._run(request, emit, turn_stop)
        finally:
            with self._lock:
                self._turn = None
            self._slot.end()
            if self._slot.closed:
                self._shut_down()

    def interrupt(self) -> None:
        """Abort the running turn in band (the process stays); nothing when idle."""
        self._slot.interrupt()

    def steer(self, text: str) -> None:
        """Send ``text`` into the running turn (Pi's ``steer``).

        Pi delivers it once the tool calls running now finish, before the model's next call,
        and the turn still ends with one result.

        Raises:
            NoRunningTurnError: no turn is running.
            InvalidRequestError: ``text`` is empty.
        """
        self._queue("steer", text)

    def follow_up(self, text: str) -> None:
        """Queue ``text`` for when the running turn would end (Pi's ``follow_up``).

        Pi runs it as a further message of the same turn once the agent has nothing left to
        do, so the turn still ends with one result, after answering it.

        Raises:
            NoRunningTurnError: no turn is running.
            InvalidRequestError: ``text`` is empty.
        """
        self._queue("follow_up", text)

    def close(self) -> None:
        """End the process (stdin EOF, then SIGTERM, then SIGKILL)."""
        self._slot.close()
        self._slot.interrupt()
        if self._slot.running:
            return  # the turn's own thread closes the process when its turn ends
        self._shut_down()

    # -- the turn ------------------------------------------------------------------------

    def _queue(self, kind: str, text: str) -> None:
        if not isinstance(text, str) or not text.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                f"{kind}.text", f"{text!r:.40} is empty", f"{kind}() needs some text"
            )
        with self._lock:
            turn, channel = self._turn, self._channel
            if turn is None or channel is None or turn.finished or turn.interrupted:
                raise NoRunningTurnError("no turn is running; send the text as a new turn")
            pending = self._commands.issue(kind, None)
            try:
                channel.send(command(pending.request_id, kind, message=text))
            except ProcessClosedError:
                raise NoRunningTurnError(
                    "the turn's process has ended; send the text as a new turn"
                ) from None
            turn.steered.append((kind, text))
            channel.wake()

    def _run(
        self, request: TurnRequest, emit: Callable[[AgentEvent], None], stop: TurnStop
    ) -> TurnResult:
        started = self._clock()
        resumed = self._session_id is not None and not self._fork
        channel = self._ensure_process(emit)
        if self._serving is not None:
            self._serving.host.emit = emit
        self._drain_between_turns(channel, emit)
        if request.model is not None and request.model != self._model:
            self._switch_model(channel, request.model, emit)
        timeout = request.timeout if request.timeout is not None else self._turn_timeout
        watch = TurnWatch(started, timeout=timeout, stall_timeout=self._spec.stall_timeout)
        parser = self._provider.new_parser(emit, expect_structured=False)
        parser.configure(ParserContext(model=self._model, resumed=resumed))
        turn = _Turn(parser, emit, watch)
        with self._lock:
            self._turn = turn
            prompt = self._commands.issue("prompt", None)
        try:
            channel.send(command(prompt.request_id, "prompt", message=request.prompt))
        except ProcessClosedError:
            pass  # the read below meets the exit and reports it
        detach = stop.attach(lambda: self._interrupt_turn(None))
        try:
            self._read_turn(channel, turn)
        finally:
            detach()
        return self._conclude(turn, resumed, started, timeout)

    # -- the process -----------------------------------------------------------------------

    def _ensure_process(self, emit: Callable[[AgentEvent], None]) -> Channel:
        channel = self._channel
        if channel is not None and channel.exit is None:
            return channel
        if channel is not None:
            self._release_process()
        context, spec = self._context, self._spec
        if spec.tools:
            refuse_remote_executor(context.executor)
            self._serving = serve_tools(spec.tools, emit=emit)
        ctx = ArgvContext(
            binary_path=context.binary_path,
            model=self._model,
            env=context.env,
            resume_session_id=self._session_id,
            reasoning_effort=spec.reasoning_effort,
            mcp_argv=() if self._serving is None else tuple(tool_extension(self._serving).argv),
            cwd=spec.cwd,
            fork_session=self._fork,
        )
        argv = rpc_argv(self._provider, ctx)
        env = dict(context.env)
        for name, value in self._provider.env_defaults.items():
            env.setdefault(name, value)
        emit(RunStarted(tuple(argv)))
        try:
            process = context.executor.spawn(SpawnRequest(argv, cwd=spec.cwd, env=env))
        except BaseException:
            self._release_process()
            raise
        channel = Channel(process, argv, clock=self._clock, side=self._serving)
        with self._lock:
            self._channel = channel
            self._commands.clear()
        self._stderr.clear()
        self._handshake(channel, emit)
        return channel

    def _handshake(self, channel: Channel, emit: Callable[[AgentEvent], None]) -> None:
        """Ask the new process for its state: it is ready once it answers, and names its session."""
        with self._lock:
            pending = self._commands.issue("get_state", self._clock() + _STARTUP_TIMEOUT)
        try:
            channel.send(command(pending.request_id, "get_state"))
        except ProcessClosedError:
            pass  # the read meets the exit
        response = self._await(channel, pending, emit)
        if response is None:
            exit_status = channel.exit
            if exit_status is None:
                channel.kill()
                self._release_process()
                raise CliTimeoutError(
                    channel.argv,
                    _STARTUP_TIMEOUT,
                    message=(
                        f"pi did not answer get_state within {_STARTUP_TIMEOUT:g} s of starting; "
                        "it was killed (check that it starts: pi --mode rpc)"
                    ),
                )
            self._startup_failed(channel, exit_status, emit)
        elif not response.success:
            self._release_process()
            raise CliExitError(
                channel.argv,
                1,
                stderr="".join(self._stderr),
                detail=f"pi refused get_state: {response.error or 'no reason given'}",
            )
        else:
            self._adopt_state(read_state(response.data), emit)

    def _startup_failed(
        self, channel: Channel, exit_status: ProcessExited, emit: Callable[[AgentEvent], None]
    ) -> None:
        emit(RunFinished(exit_status.returncode))
        stderr = "".join(self._stderr)
        error = CliExitError(
            channel.argv,
            exit_status.returncode,
            stderr=stderr,
            detail=stderr.strip().splitlines()[0] if stderr.strip() else "",
        )
        classified = self._provider.classify_exit(error, resumed=self._session_id is not None)
        if isinstance(classified, SessionResumeError):
            raise classified
        raise CliDiedError(
            session_id=self._session_id, returncode=exit_status.returncode, stderr=stderr
        )

    def _adopt_state(self, state: PiState, emit: Callable[[AgentEvent], None]) -> None:
        if state.model_provider is not None:
            self._model_provider = state.model_provider
        reported = state.session_id
        if reported is None:
            return
        if not is_valid_session_id(reported):
            emit(
                Lifecycle(
                    "session_id_refused",
                    f"pi named its session {reported[:200]!r}, which is not a safe id",
                )
            )
            return
        requested = self._session_id
        if self._fork:
            emit(Lifecycle("forked", f"{requested} -> {reported}"))
            self._session_id = reported
            self._fork = False  # the fork exists now; later processes continue it
        elif requested is not None and reported.startswith(requested):
            if reported != requested:
                # Pi resolved a partial id: the caller's id stays the conversation's name.
                emit(Lifecycle("session_resolved", reported))
        else:
            self._session_id = reported
        assert self._session_id is not None
        emit(SessionStarted(self._session_id))
        if state.session_file is not None:
            emit(Lifecycle("session_file", state.session_file))

    def _await(
        self, channel: Channel, pending: PendingRequest, emit: Callable[[AgentEvent], None]
    ) -> Response | None:
        """Read until ``pending`` is answered; None at its deadline or the process's exit.

        What else Pi prints meanwhile is no turn's output: it is reported as
        ``Lifecycle("between_turns", line)``.
        """
        while True:
            output = channel.read(pending.deadline)
            if output is None or isinstance(output, ProcessExited):
                return None
            if isinstance(output, StderrLine):
                self._stderr.append(output.text)
                continue
            answered = self._between_turns_line(output.text, emit)
            if answered is not None and answered[0].request_id == pending.request_id:
                return answered[1]

    def _drain_between_turns(self, channel: Channel, emit: Callable[[AgentEvent], None]) -> None:
        """Report what Pi printed since the last turn (late responses, say) before this one."""
        while True:
            output = channel.read(self._clock())
            if output is None or isinstance(output, ProcessExited):
                return
            if isinstance(output, StderrLine):
                self._stderr.append(output.text)
            else:
                self._between_turns_line(output.text, emit)

    def _between_turns_line(
        self, line: str, emit: Callable[[AgentEvent], None]
    ) -> tuple[PendingRequest, Response] | None:
        frame = parse_json_object(line)
        if frame is not None and frame.get("type") == "response":
            response = read_response(frame)
            answered = self._resolve(response)
            if answered is not None and answered.subtype in ("get_state", "set_model"):
                return answered, response
        emit(Lifecycle("between_turns", line.strip()[:UNKNOWN_DETAIL_CHARS]))
        return None

    def _resolve(self, response: Response) -> PendingRequest | None:
        """The pending command ``response`` answers: by its id, else (no id) by its command."""
        with self._lock:
            if response.command_id is not None:
                return self._commands.resolve(response.command_id)
            oldest = self._commands.pending(response.command)
            return self._commands.resolve(oldest.request_id) if oldest is not None else None

    def _switch_model(
        self, channel: Channel, model: str, emit: Callable[[AgentEvent], None]
    ) -> None:
        with self._lock:
            pending = self._commands.issue("set_model", self._clock() + _COMMAND_TIMEOUT)
        try:
            channel.send(model_command(pending.request_id, model, self._model_provider))
        except ProcessClosedError:
            return  # the turn's read meets the exit and reports it
        response = self._await(channel, pending, emit)
        if response is None:
            if channel.exit is not None:
                return
            raise ProviderCapabilityError(
                f"Pi did not confirm the switch to model {model!r} within "
                f"{_COMMAND_TIMEOUT:g} s; the turn was not sent"
            )
        if not response.success:
            raise ProviderCapabilityError(
                f"Pi refused model {model!r}: {response.error or 'no reason given'}; name a "
                "model Pi knows (provider/id, or an id of the current provider)"
            )
        self._model = model
        self._model_provider = as_str(response.data.get("provider")) or self._model_provider
        emit(Lifecycle("model_switched", model))

    # -- reading a turn --------------------------------------------------------------------

    def _read_turn(self, channel: Channel, turn: _Turn) -> None:
        parser, watch, clock = turn.parser, turn.watch, self._clock
        while not turn.done:
            output = channel.read(watch.deadline())
            if turn.steered:
                self._report_steers(turn)
            if output is None:
                self._on_quiet(channel, turn, clock())
                if channel.exit is not None:
                    return
                continue
            if isinstance(output, StdoutLine):
                watch.heard(clock())
                self._on_line(channel, turn, output.text)
            elif isinstance(output, StderrLine):
                watch.heard(clock())
                self._stderr.append(output.text)
                parser.feed_stderr(output.text)
            else:
                return

    def _report_steers(self, turn: _Turn) -> None:
        with self._lock:
            queued = list(turn.steered)
            turn.steered.clear()
        for kind, text in queued:
            turn.emit(Lifecycle("steered" if kind == "steer" else "followed_up", text))

    def _on_quiet(self, channel: Channel, turn: _Turn, now: float) -> None:
        due = turn.watch.due(now)
        if due is Due.TIMEOUT or due is Due.STALL:
            self._interrupt_turn(due)
        elif due is Due.KILL:
            turn.emit(
                Lifecycle(
                    "interrupt_unanswered",
                    f"the run did not end {self._interrupt_grace:g} s after the abort; "
                    "killing the process",
                )
            )
            channel.kill()
            self._drain_exit(channel, turn)

    def _drain_exit(self, channel: Channel, turn: _Turn) -> None:
        while True:
            output = channel.read(self._clock() + self._close_grace)
            if output is None or isinstance(output, ProcessExited):
                return
            if isinstance(output, StdoutLine):
                self._on_line(channel, turn, output.text)
            else:
                turn.parser.feed_stderr(output.text)

    def _on_line(self, channel: Channel, turn: _Turn, line: str) -> None:
        if line.startswith(_UPDATE_PREFIX):
            turn.parser.feed_stdout(line)
            return
        frame = parse_json_object(line)
        if frame is None:
            turn.parser.feed_stdout(line)
            return
        kind = frame.get("type")
        if kind == "response":
            self._on_response(turn, read_response(frame))
        elif kind == "extension_ui_request":
            self._on_extension_request(channel, turn, frame)
        else:
            turn.parser.dispatch(frame, line)
            if kind == "agent_start":
                self._on_agent_start(channel, turn)
            elif kind == "agent_end":
                turn.agent_ended = True
                self._on_agent_end(channel, turn, frame)
            elif kind == "auto_retry_start":
                turn.retrying = True
            elif kind == "auto_retry_end":
                turn.retrying = False
            elif kind == "queue_update":
                turn.queued = queued_messages(frame)

    def _on_agent_start(self, channel: Channel, turn: _Turn) -> None:
        turn.agent_ended = False  # a retry of the run, which ends at its own agent_end
        with self._lock:
            turn.started = True
            due, turn.abort_due = turn.abort_due, False
        if due:
            self._send_abort(channel, turn)

    def _on_agent_end(self, channel: Channel, turn: _Turn, frame: Mapping[str, Any]) -> None:
        """After a failed run, ask Pi's state: its retry (if any) is announced before the answer.

        Pi retries a failed model call (a 5xx, an overload) after the run's ``agent_end``,
        with ``auto_retry_start`` and a new run, or says it gives up with ``auto_retry_end``;
        it prints either before it reads our next command, so the turn ends once the answer
        to that ``get_state`` came with no retry under way.
        """
        if turn.interrupted or turn.retrying or not failed_run(frame):
            return
        with self._lock:
            pending = self._commands.issue("get_state", None)
            turn.probe_id, turn.probe_answered = pending.request_id, False
        try:
            channel.send(command(pending.request_id, "get_state"))
        except ProcessClosedError:
            turn.probe_answered = True  # the reader meets the exit

    def _on_response(self, turn: _Turn, response: Response) -> None:
        answered = self._resolve(response)
        name = answered.subtype if answered is not None else response.command
        if answered is not None and answered.request_id == turn.probe_id:
            turn.probe_answered = True
        elif name == "prompt" and not response.success:
            turn.refused = response.error or "no reason given"
        elif name == "abort" and answered is not None and answered.request_id == turn.abort_id:
            turn.abort_answered = True
        elif name in ("steer", "follow_up") and not response.success:
            turn.emit(Lifecycle(f"{name}_refused", response.error))
        elif name != "prompt" or answered is None:
            status = "ok" if response.success else f"failed: {response.error}"
            turn.emit(Lifecycle("command_response", f"{name}: {status}"))

    def _on_extension_request(
        self, channel: Channel, turn: _Turn, frame: Mapping[str, Any]
    ) -> None:
        request_id = as_str(frame.get("id"))
        method = as_str(frame.get("method")) or "?"
        title = as_str(frame.get("title")) or as_str(frame.get("message")) or ""
        if method not in DIALOG_METHODS or request_id is None:
            turn.emit(Lifecycle("extension_ui", f"{method}: {title}"[:UNKNOWN_DETAIL_CHARS]))
            return
        # Nobody is there to answer an extension's dialog, and Pi blocks until it is answered.
        try:
            channel.send(dialog_cancelled(request_id))
        except ProcessClosedError:
            pass
        turn.emit(
            Lifecycle("extension_dialog_cancelled", f"{method}: {title}"[:UNKNOWN_DETAIL_CHARS])
        )

    def _interrupt_turn(self, reason: Due | None) -> None:
        """Abort the running turn (any thread; once per turn)."""
        with self._lock:
            turn, channel = self._turn, self._channel
            if turn is None or channel is None or turn.finished:
                return
            if turn.interrupted:
                if reason is not None and turn.watch.reason is None:
                    turn.watch.reason = reason
                return
            turn.interrupted = True
            turn.watch.interrupted(self._clock(), self._interrupt_grace, reason)
            if not turn.started:
                # An abort before the run begins would find Pi idle and be lost.
                turn.abort_due = True
                channel.wake()
                return
        self._send_abort(channel, turn)

    def _send_abort(self, channel: Channel, turn: _Turn) -> None:
        with self._lock:
            pending = self._commands.issue("abort", None)
            turn.abort_id = pending.request_id
        try:
            channel.send(command(pending.request_id, "abort"))
        except ProcessClosedError:
            pass  # the reader meets the exit
        channel.wake()

    # -- the result ------------------------------------------------------------------------

    def _conclude(
        self, turn: _Turn, resumed: bool, started: float, timeout: float | None
    ) -> TurnResult:
        channel = self._channel
        assert channel is not None
        parsed = turn.parser.finish()
        argv = channel.argv
        exit_status = channel.exit
        stderr = "".join(self._stderr)
        if exit_status is not None and not turn.agent_ended:
            turn.emit(RunFinished(exit_status.returncode))
        reason = turn.watch.reason
        if reason is Due.STALL:
            raise TurnStalledError(self._spec.stall_timeout, turn.watch.stalled_for)
        if reason is Due.TIMEOUT:
            raise CliTimeoutError(argv, timeout, parsed)
        if exit_status is not None and not turn.agent_ended and not turn.interrupted:
            raise CliDiedError(
                session_id=self._session_id, returncode=exit_status.returncode, stderr=stderr
            )
        if turn.refused is not None:
            raise CliExitError(
                argv,
                1,
                stderr=stderr,
                detail=f"pi refused the prompt: {turn.refused}",
            )
        if turn.queued:
            # A steer that reached Pi as its run ended stays queued for the next run.
            turn.emit(Lifecycle("steer_carried_over", " / ".join(turn.queued)))
        if turn.interrupted:
            turn.emit(TurnInterrupted("interrupted on request"))
        elif parsed.error is not None:
            error = CliExitError(
                argv,
                1,
                stderr=stderr,
                kind=parsed.error_kind or FailureKind.OTHER,
                detail=parsed.error,
            )
            failure: AgentShimError = self._provider.classify_exit(error, resumed=False)
            raise failure
        usage = parsed.usage
        if usage is None:
            usage = ProviderUsage(provider=PROFILE.name, increment_known=False)
        return TurnResult(
            text=parsed.text,
            structured_output=None,
            session_id=self._session_id,
            resumed=resumed,
            usage=usage,
            cost_usd=usage.total_cost_usd,
            duration_ms=int((self._clock() - started) * 1000),
            exit_code=0,
            interrupted=turn.interrupted,
            context_tokens=parsed.context_tokens,
        )

    # -- closing ---------------------------------------------------------------------------

    def _release_process(self) -> None:
        with self._lock:
            channel, self._channel = self._channel, None
            self._commands.clear()
        serving, self._serving = self._serving, None
        try:
            if channel is not None:
                channel.close(self._close_grace)
        finally:
            if serving is not None:
                serving.close()

    def _shut_down(self) -> None:
        self._release_process()
