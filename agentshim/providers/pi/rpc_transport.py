"""PiRpcTransport: one long-lived ``pi --mode rpc`` process per conversation.

Every turn of a conversation is a ``prompt`` command written to the same process. Pi answers
it with a ``response`` that means "accepted" and then runs the prompt; its events are the
one-shot parser's (rpc mode prints the same event stream as ``--mode json``), read from the
same stdout, and the turn ends at ``agent_end``, or, from a Pi that says it settles (1.x:
its prompt response carries a ``disposition``, or it sent ``agent_settled`` before), at the
``agent_settled`` that follows the run's last ``agent_end``, so that frame never spills into
the next turn. A prompt Pi answers ``"handled"`` (an extension consumed it) starts no run and
ends the turn at once. Messages steered into a running turn are
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

import dataclasses
import glob
import os
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentshim.core import lifecycle_kinds as lk
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    FailureKind,
    ProcessClosedError,
    ProviderCapabilityError,
)
from agentshim.core.events import (
    Emit,
    Lifecycle,
    RunFinished,
    SessionStarted,
    TurnInterrupted,
)
from agentshim.core.frames import UNKNOWN_DETAIL_CHARS
from agentshim.core.ids import is_valid_session_id
from agentshim.core.jsonvalues import as_str
from agentshim.core.permissions import ApprovalPolicy, NativeMode
from agentshim.core.provider import ParserContext
from agentshim.core.stream import parse_json_object
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.execution.host import HostCommandExecutor
from agentshim.providers.warm_transport import WarmConversation, WarmTransport
from agentshim.tools.local import LocalToolServer, refuse_remote_executor, serve_tools
from agentshim.transport.channel import Channel
from agentshim.transport.conversation import (
    LiveTurn,
    ProcessOptions,
)
from agentshim.transport.correlator import PendingRequest
from agentshim.transport.fixed import refuse_fixed_changes
from agentshim.transport.installed import InstalledCli
from agentshim.transport.warm import WarmIdle, greet
from agentshim.transport.watch import TurnWatch

from .parser import PiStreamParser
from .provider import PROFILE, PiProvider
from .rpc_argv import rpc_argv
from .rpc_protocol import (
    DIALOG_METHODS,
    HANDLED,
    SETTLED,
    PiState,
    Response,
    command,
    dialog_cancelled,
    failed_run,
    model_command,
    queued_messages,
    read_disposition,
    read_response,
    read_state,
)
from .tools import tool_extension

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["PiRpcConversation", "PiRpcTransport", "SessionFiles", "host_session_file"]

_AWAITED = ("get_state", "set_model", "switch_session")
"""Our commands whose answers the start phase waits for."""

_SESSIONS = ".pi/agent/sessions"
"""Where Pi keeps its session files, below the home directory."""

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


SessionFiles = Callable[[str], "str | None"]
"""The file of a Pi session, as the path Pi opens, from the session's id (None: not found)."""


def host_session_file(home: str, session_id: str) -> str | None:
    """The file of ``session_id`` under ``home``'s Pi sessions (the largest, if several)."""
    pattern = os.path.join(glob.escape(home), _SESSIONS, "*", f"*_{glob.escape(session_id)}.jsonl")
    sizes: list[tuple[int, str]] = []
    for path in glob.glob(pattern):
        try:
            sizes.append((os.path.getsize(path), path))
        except OSError:
            continue  # gone since it was listed
    return max(sizes)[1] if sizes else None


class PiRpcTransport(WarmTransport):
    """A Transport whose conversations each keep one ``pi --mode rpc`` process.

    The constructor's keywords are :class:`~agentshim.transport.conversation.ProcessTransport`'s,
    and ``session_files``, which finds a session's file for a warm process to switch to (by
    default, on the host executor, under the CLI's HOME; elsewhere a resumed conversation
    starts a process of its own). :meth:`prewarm` starts processes ahead of conversations.
    """

    profile = PROFILE
    """Pi's capabilities."""

    def __init__(
        self,
        context: InstalledCli | Callable[[], InstalledCli],
        *,
        session_files: SessionFiles | None = None,
        **options: Unpack[ProcessOptions],
    ) -> None:
        super().__init__(context, **options)
        self.session_files = session_files

    def prewarm(self, count: int, spec: ConversationSpec, idle: WarmIdle | None = None) -> None:
        """Start ``count`` processes for conversations like ``spec``, kept until one takes each.

        Each answered ``get_state`` before this returns. A conversation that starts exactly
        like one of them (the same flags, cwd and environment) takes it: a new conversation
        as it is (Pi's fresh session), a resumed one after ``switch_session`` to its session's
        file (found by ``session_files``). A conversation with tools, or a fork, starts its own.
        With ``idle``, a process still untaken after ``idle.after`` seconds is ended.

        Raises:
            ProviderCapabilityError: what :meth:`open` refuses for ``spec``.
            CliDiedError / CliTimeoutError: a process ended or did not answer in time.
        """
        conversation = self.open(spec)
        try:
            launch = conversation.launch(resume=False)
        finally:
            conversation.close()
        self._start_warm(count, launch, spec.cwd, _say_hello, idle)

    def session_file(self, session_id: str) -> str | None:
        """The file of ``session_id`` as Pi opens it; None when it cannot be found from here."""
        if self.session_files is not None:
            return self.session_files(session_id)
        context = self.context
        home = context.env.get("HOME")
        if home and isinstance(context.executor, HostCommandExecutor):
            return host_session_file(home, session_id)
        return None

    def open(self, spec: ConversationSpec) -> PiRpcConversation:
        """Open a conversation; its process starts with its first turn.

        Raises:
            ProviderCapabilityError: the CLI's provider is not Pi, or ``spec`` asks for
                native permissions other than bypass, for an approval handler or for MCP
                servers (as a one-shot turn is refused them).
            InvalidSessionIdError: ``spec.resume_session_id`` is not safe to pass.
        """
        refuse_unsupported_spec(spec)
        provider = self._provider(PiProvider, "Pi's rpc protocol")
        if spec.mcp_servers:
            # The refusal a one-shot turn gets: Pi is handed no servers, and a conversation
            # that went on without them would let the caller believe it had them.
            provider.install_mcp(None, spec.mcp_servers)
        return PiRpcConversation(self, provider, spec)


def _say_hello(channel: Channel, monotonic: Callable[[], float]) -> None:
    """Ask a new process ``get_state`` and read until it answers: then it is ready.

    Raises:
        CliExitError / CliTimeoutError: it ended first, or did not answer in time.
    """

    def answers(frame: Mapping[str, Any]) -> bool:
        return frame.get("type") == "response" and frame.get("id") == _HELLO_ID

    greet(channel, command(_HELLO_ID, "get_state"), answers, monotonic, cli="pi")


_HELLO_ID = "agentshim_warm"


class _Turn(LiveTurn):
    """What the reader knows about the turn in flight."""

    __slots__ = (
        "abort_answered",
        "abort_id",
        "agent_ended",
        "handled",
        "parser",
        "probe_answered",
        "probe_id",
        "queued",
        "refused",
        "retrying",
        "settled",
        "settles",
    )

    def __init__(
        self, parser: PiStreamParser, emit: Emit, watch: TurnWatch, *, settles: bool
    ) -> None:
        super().__init__(emit, watch)
        self.parser = parser
        self.agent_ended = False
        self.refused: str | None = None
        """Why Pi refused the prompt, when it did (the run never starts then)."""
        self.abort_id: str | None = None
        self.abort_answered = False
        self.retrying = False
        """Pi is retrying a failed model call (``auto_retry_start`` until ``auto_retry_end``)."""
        self.probe_id: str | None = None
        """The ``get_state`` sent after a failed run, to learn whether Pi retries it."""
        self.probe_answered = False
        self.queued: list[str] = []
        """What Pi's last ``queue_update`` said is still waiting to be delivered."""
        self.settles = settles
        """This Pi ends every run with ``agent_settled`` after its last ``agent_end``."""
        self.settled = False
        self.handled = False
        """Pi answered the prompt ``"handled"``: no run starts for it."""

    @property
    def over(self) -> bool:
        """Nothing more of the run is coming: it ended, or it never started."""
        return self.agent_ended or self.refused is not None or self.handled

    @property
    def done(self) -> bool:
        """The reader may stop: the run ended (and settled, where Pi says so), any abort answered."""
        if self.refused is not None or self.handled:
            return True
        return (
            self.agent_ended
            and (self.settled or not self.settles)
            and not self.retrying
            and (self.abort_id is None or self.abort_answered)
            and (self.probe_id is None or self.probe_answered)
        )

    def feed_stderr(self, text: str) -> None:
        """The one-shot parser reads stderr too."""
        self.parser.feed_stderr(text)


class PiRpcConversation(WarmConversation[_Turn]):
    """One Pi conversation on one long-lived ``pi --mode rpc`` process (a SteerableConversation).

    Besides the failures every long-lived conversation has, a turn raises
    ProviderCapabilityError for a request Pi cannot honour on a running process (an output
    schema, MCP servers, a thinking level) or a model Pi refuses to switch to,
    SessionResumeError when Pi no longer has the conversation to resume, and CliExitError
    when the model API failed (kind as on one-shot) or Pi refused the prompt. An interrupt
    is Pi's ``abort``.
    """

    _unanswered = "the run did not end {grace:g} s after the abort; killing the process"
    _start_command = "pi --mode rpc"
    # An abort before the run begins (``agent_start``) would find Pi idle and be lost.
    _stop_waits_for_start = True

    def __init__(
        self, transport: PiRpcTransport, provider: PiProvider, spec: ConversationSpec
    ) -> None:
        super().__init__(transport, spec, name="Pi")
        self._provider = provider
        self._session_file = transport.session_file
        self._model_provider: str | None = provider.provider
        # The conversation's tools, served to the extension that relays them while it runs.
        self._serving: LocalToolServer | None = None
        # Whether this Pi ends its runs with agent_settled (learned from what it prints).
        self._settles = False

    def _refuse(self, request: TurnRequest) -> None:
        refuse_fixed_changes(
            "Pi",
            request,
            self._spec,
            also=("mcp_servers",) if request.mcp_servers else (),
            note=" (and Pi has no output schema nor MCP servers)",
        )

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

    # -- the turn ------------------------------------------------------------------------

    def _queue(self, kind: str, text: str) -> None:
        def frame(turn: _Turn) -> Mapping[str, Any] | None:
            if turn.interrupted:
                return None
            return command(self._requests.issue(kind, None).request_id, kind, message=text)

        self._add_to_turn(kind, text, lk.STEERED if kind == "steer" else lk.FOLLOWED_UP, frame)

    def _new_turn(self, request: TurnRequest, emit: Emit, watch: TurnWatch, resumed: bool) -> _Turn:
        if self._serving is not None:
            self._serving.host.emit = emit
        parser = self._provider.new_parser(emit, expect_structured=False)
        parser.configure(ParserContext(model=self._model, resumed=resumed))
        return _Turn(parser, emit, watch, settles=self._settles)

    def _turn_frame(self, turn: _Turn, request: TurnRequest) -> Mapping[str, Any]:
        prompt = self._issue("prompt", None)
        return command(prompt.request_id, "prompt", message=request.prompt)

    # -- the process -----------------------------------------------------------------------

    def _open_process(self, emit: Emit) -> Channel:
        context, spec = self._context, self._spec
        if spec.tools:
            refuse_remote_executor(context.executor)
            self._serving = serve_tools(spec.tools, emit=emit)
        else:
            channel = self._take_warm(emit)
            if channel is not None:
                self._handshake(channel, emit)
                return channel
        extension = None if self._serving is None else tool_extension(self._serving)
        tools = () if extension is None else extension.argv
        argv = rpc_argv(self._provider, self._argv_context(tools, fork_session=self._fork))
        env = dict(context.env)
        if extension is not None:
            env.update(extension.env)  # the tools' credential: Pi's env, never argv or a file
        channel = self._start_process(argv, env, emit, side=self._serving)
        self._handshake(channel, emit)
        return channel

    def launch(self, *, resume: bool = True) -> tuple[list[str], dict[str, str]]:
        """The argv and environment of a process for this conversation, without tools.

        ``resume=False``: as for a new conversation (no ``--session``), which is what a warm
        process is started with.
        """
        ctx = self._argv_context(())
        if not resume:
            ctx = dataclasses.replace(ctx, resume_session_id=None)
        return rpc_argv(self._provider, ctx), dict(self._context.env)

    def _take_warm(self, emit: Emit) -> Channel | None:
        """Take a warm process, switched to the conversation's session if it has one; or None.

        A fork starts its own process (``--fork`` is on the command line), and so does a
        resumed conversation whose session file cannot be found from here, or which Pi
        would not switch to.
        """
        session_id = self._session_id
        if self._fork:
            return None
        path = None if session_id is None else self._session_file(session_id)
        if session_id is not None and path is None:
            return None
        argv, env = self.launch(resume=False)
        channel = self._adopt_warm_like(argv, env, emit)
        if channel is None:
            return None
        if path is not None and not self._switch_session(channel, path, emit):
            self._release_process()
            return None
        return channel

    def _switch_session(self, channel: Channel, path: str, emit: Emit) -> bool:
        """Make the session in ``path`` the process's (``switch_session``); whether Pi did."""
        response: Response = self._call(
            channel,
            "switch_session",
            lambda pending: command(pending.request_id, "switch_session", sessionPath=path),
            emit,
        )
        return response.success and response.data.get("cancelled") is not True

    def _handshake(self, channel: Channel, emit: Emit) -> None:
        """Ask the new process for its state: it is ready once it answers, and names its session."""
        response: Response = self._call(
            channel, "get_state", lambda pending: command(pending.request_id, "get_state"), emit
        )
        if not response.success:
            self._release_process()
            detail = f"pi refused get_state: {response.error or 'no reason given'}"
            raise self._refused(channel, detail)
        self._adopt_state(read_state(response.data), emit)

    def _adopt_state(self, state: PiState, emit: Emit) -> None:
        if state.model_provider is not None:
            self._model_provider = state.model_provider
        reported = state.session_id
        if reported is None:
            return
        if not is_valid_session_id(reported):
            emit(
                Lifecycle(
                    lk.SESSION_ID_REFUSED,
                    f"pi named its session {reported[:200]!r}, which is not a safe id",
                )
            )
            return
        requested = self._session_id
        if self._fork:
            emit(Lifecycle(lk.FORKED, f"{requested} -> {reported}"))
            self._session_id = reported
            self._fork = False  # the fork exists now; later processes continue it
        elif requested is not None and reported.startswith(requested):
            if reported != requested:
                # Pi resolved a partial id: the caller's id stays the conversation's name.
                emit(Lifecycle(lk.SESSION_RESOLVED, reported))
        else:
            self._session_id = reported
        assert self._session_id is not None
        emit(SessionStarted(self._session_id))
        if state.session_file is not None:
            emit(Lifecycle(lk.SESSION_FILE, state.session_file))

    def _answer_of(
        self, channel: Channel, pending: PendingRequest, line: str, emit: Emit
    ) -> Response | None:
        answered = self._between_turns_line(line, emit)
        if answered is not None and answered[0].request_id == pending.request_id:
            return answered[1]
        return None

    def _between_turns(self, channel: Channel, line: str, emit: Emit) -> float:
        """What Pi printed between turns (late responses, say) is reported, not read as a turn's."""
        self._between_turns_line(line, emit)
        return 0.0

    def _between_turns_line(self, line: str, emit: Emit) -> tuple[PendingRequest, Response] | None:
        frame = parse_json_object(line)
        if frame is not None and frame.get("type") == SETTLED:
            # The end of the last turn's run, from a Pi not yet known to settle: now it is.
            self._settles = True
            return None
        if frame is not None and frame.get("type") == "response":
            response = read_response(frame)
            answered = self._resolve(response)
            if answered is not None and answered.subtype in _AWAITED:
                return answered, response
        emit(Lifecycle(lk.BETWEEN_TURNS, line.strip()[:UNKNOWN_DETAIL_CHARS]))
        return None

    def _resolve(self, response: Response) -> PendingRequest | None:
        """The pending command ``response`` answers: by its id, else (no id) by its command."""
        with self._lock:
            if response.command_id is not None:
                return self._requests.resolve(response.command_id)
            oldest = self._requests.pending(response.command)
            return self._requests.resolve(oldest.request_id) if oldest is not None else None

    def _switch_model(self, channel: Channel, model: str, emit: Emit) -> None:
        def frame(pending: PendingRequest) -> Mapping[str, Any]:
            return model_command(pending.request_id, model, self._model_provider)

        response: Response = self._call(channel, "set_model", frame, emit)
        if not response.success:
            raise ProviderCapabilityError(
                f"Pi refused model {model!r}: {response.error or 'no reason given'}; name a "
                "model Pi knows (provider/id, or an id of the current provider)"
            )
        self._model = model
        self._model_provider = as_str(response.data.get("provider")) or self._model_provider
        emit(Lifecycle(lk.MODEL_SWITCHED, model))

    # -- reading a turn --------------------------------------------------------------------

    def _on_line(self, channel: Channel, turn: _Turn, line: str) -> None:
        if line.startswith(_UPDATE_PREFIX):
            turn.parser.feed_stdout(line)
            return
        frame = turn.parser.frame_or_feed(line)
        if frame is None:
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
            elif kind == SETTLED:
                turn.settled = self._settles = turn.settles = True
            elif kind == "auto_retry_start":
                turn.retrying = True
            elif kind == "auto_retry_end":
                turn.retrying = False
            elif kind == "queue_update":
                turn.queued = queued_messages(frame)

    def _on_agent_start(self, channel: Channel, turn: _Turn) -> None:
        turn.agent_ended = False  # a retry of the run, which ends at its own agent_end
        turn.settled = False
        self._run_began(channel, turn)

    def _on_agent_end(self, channel: Channel, turn: _Turn, frame: Mapping[str, Any]) -> None:
        """After a failed run, ask Pi's state: its retry (if any) is announced before the answer.

        Pi retries a failed model call (a 5xx, an overload) after the run's ``agent_end``,
        with ``auto_retry_start`` and a new run, or says it gives up with ``auto_retry_end``;
        it prints either before it reads our next command, so the turn ends once the answer
        to that ``get_state`` came with no retry under way.
        """
        if turn.settles or turn.interrupted or turn.retrying or not failed_run(frame):
            return  # a Pi that settles says so once its retries are over
        with self._lock:
            pending = self._requests.issue("get_state", None)
            turn.probe_id, turn.probe_answered = pending.request_id, False
        try:
            channel.send(command(pending.request_id, "get_state"))
        except ProcessClosedError:
            turn.probe_answered = True  # the reader meets the exit

    def _on_response(self, turn: _Turn, response: Response) -> None:
        answered = self._resolve(response)
        name = answered.subtype if answered is not None else response.command
        disposition = read_disposition(response)
        if disposition is not None and name in ("prompt", "steer", "follow_up"):
            # Only a Pi that ends its runs with agent_settled answers with a disposition.
            turn.settles = self._settles = True
        if answered is not None and answered.request_id == turn.probe_id:
            turn.probe_answered = True
        elif name == "prompt" and not response.success:
            turn.refused = response.error or "no reason given"
        elif name == "prompt" and disposition == HANDLED:
            turn.handled = True
            turn.emit(Lifecycle(lk.PROMPT_HANDLED, "pi handled the prompt without a run"))
        elif name in ("steer", "follow_up") and disposition == HANDLED:
            handled = lk.STEER_HANDLED if name == "steer" else lk.FOLLOW_UP_HANDLED
            turn.emit(Lifecycle(handled, "pi handled it without queueing it"))
        elif name == "abort" and answered is not None and answered.request_id == turn.abort_id:
            turn.abort_answered = True
        elif name in ("steer", "follow_up") and not response.success:
            refused = lk.STEER_REFUSED if name == "steer" else lk.FOLLOW_UP_REFUSED
            turn.emit(Lifecycle(refused, response.error))
        elif name != "prompt" or answered is None:
            status = "ok" if response.success else f"failed: {response.error}"
            turn.emit(Lifecycle(lk.COMMAND_RESPONSE, f"{name}: {status}"))

    def _on_extension_request(
        self, channel: Channel, turn: _Turn, frame: Mapping[str, Any]
    ) -> None:
        request_id = as_str(frame.get("id"))
        method = as_str(frame.get("method")) or "?"
        title = as_str(frame.get("title")) or as_str(frame.get("message")) or ""
        if method not in DIALOG_METHODS or request_id is None:
            turn.emit(Lifecycle(lk.EXTENSION_UI, f"{method}: {title}"[:UNKNOWN_DETAIL_CHARS]))
            return
        # Nobody is there to answer an extension's dialog, and Pi blocks until it is answered.
        try:
            channel.send(dialog_cancelled(request_id))
        except ProcessClosedError:
            pass
        turn.emit(
            Lifecycle(lk.EXTENSION_DIALOG_CANCELLED, f"{method}: {title}"[:UNKNOWN_DETAIL_CHARS])
        )

    def _interrupt_frame(self, turn: _Turn) -> Mapping[str, Any]:
        with self._lock:
            pending = self._requests.issue("abort", None)
            turn.abort_id = pending.request_id
        return command(pending.request_id, "abort")

    # -- the result ------------------------------------------------------------------------

    def _conclude(
        self, channel: Channel, turn: _Turn, request: TurnRequest, resumed: bool, started: float
    ) -> TurnResult:
        parsed = turn.parser.finish()
        argv = channel.argv
        exit_status = channel.exit
        stderr = "".join(self._stderr)
        if exit_status is not None and not turn.agent_ended:
            turn.emit(RunFinished(exit_status.returncode))
        self._raise_for_reading(turn, argv, parsed)
        if exit_status is not None and not turn.agent_ended and not turn.interrupted:
            raise self._died(exit_status)
        if turn.refused is not None:
            raise self._refused(channel, f"pi refused the prompt: {turn.refused}")
        if turn.handled:
            # An extension consumed the prompt: no run, no answer, no usage.
            return self._turn_result("", None, started=started, resumed=resumed, interrupted=False)
        if turn.queued:
            # A steer that reached Pi as its run ended stays queued for the next run.
            turn.emit(Lifecycle(lk.STEER_CARRIED_OVER, " / ".join(turn.queued)))
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
        return self._turn_result(
            parsed.text,
            parsed.usage,
            started=started,
            resumed=resumed,
            interrupted=turn.interrupted,
            context_tokens=parsed.context_tokens,
            notices=parsed.notes,
        )
