"""CodexAppServerConversation: every turn of one Codex thread on one ``codex app-server``.

A process starts with the first turn: ``initialize``, ``initialized``, then ``thread/start``
(or ``thread/resume`` of the conversation's thread). Each turn is a ``turn/start``; its items
arrive as notifications, and ``turn/completed`` (completed, interrupted or failed) is the only
end. ``turn/interrupt`` ends a turn in band but leaves its running command alive, so after an
interrupted turn every command the agent started is ended by its marker. ``turn/steer`` adds
input to the running turn, which Codex delivers once the running tool finishes. Approvals come
as server requests, answered from the conversation's approvals, fail closed.

Threading: a turn runs on the thread that calls :meth:`CodexAppServerConversation.turn`, the
only thread that reads the process, sends events or calls the approval handler. ``interrupt``,
``steer`` and ``close`` may come from any thread: they write their request and wake the reader.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable, Mapping
from typing import Any

from agentshim._version import __version__
from agentshim.core import lifecycle_kinds as lk
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import (
    CliExitError,
    FailureKind,
    ProcessClosedError,
    SchemaDialectError,
    SessionResumeError,
)
from agentshim.core.events import (
    Emit,
    Lifecycle,
    ProviderErrorReported,
    RunFinished,
    SessionStarted,
    SessionTitle,
    Stderr,
    TurnInterrupted,
    UsageReport,
    UsageScope,
)
from agentshim.core.frames import UNKNOWN_DETAIL_CHARS
from agentshim.core.profile import SchemaDialect
from agentshim.core.schema import dialect_problems
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.execution.process import ProcessExited, StdoutLine
from agentshim.execution.reaping import can_scan, new_run_id, reap_marked
from agentshim.providers.codex.provider import CodexProvider
from agentshim.tools.local import LocalToolServer, refuse_remote_executor, serve_tools
from agentshim.transport.channel import Channel
from agentshim.transport.conversation import LiveTurn, ProcessConversation, ProcessTransport
from agentshim.transport.correlator import PendingRequest
from agentshim.transport.fixed import refuse_fixed_changes
from agentshim.transport.shared import (
    ProcessPool,
    SharedChannel,
    join_shared,
    once_per_process,
    opening_session,
)
from agentshim.transport.watch import TurnWatch

from . import _wire
from . import protocol as p
from ._wire import encode
from .approvals import approval_reply, approval_request
from .channel import Malformed, Message, decode, pending_key, request_frame
from .errors import failure_kind, is_unknown_thread
from .items import TurnItems
from .permissions import approval_policy, sandbox_mode, sandbox_policy
from .profile import TOOL_MARKER, app_server_argv, thread_config
from .usage import ThreadUsage

__all__ = ["CodexAppServerConversation"]

_REPLAY_WAIT = 0.5
"""How long a resumed thread's replayed usage total is waited for (it follows the response)."""

_UNHANDLED = -32601
_CLIENT_NAME = "agentshim"
_IDS = "agentshim"
"""The prefix of the conversation's Correlator ids (``agentshim_<n>`` goes out as ``n``)."""


def _ignore(_: object) -> None:
    """Drop an event (a warming conversation reports to nobody)."""


@dataclasses.dataclass(frozen=True, slots=True)
class _SpareThread:
    """A thread a warm-up started and left on a shared process for a new conversation."""

    key: str
    thread_id: str
    marker: str
    path: str | None


def _spare_key(params: p.ThreadStartParams) -> str:
    """What a conversation's thread must match to take a spare: its settings, not its marker."""
    return json.dumps(dataclasses.replace(params, config=None).to_wire(), sort_keys=True)


def _reap_by_marker(marker: str) -> int:
    if not can_scan():
        return 0
    # Codex sets the marker on its commands under its own name (shell_environment_policy).
    ended, _ = reap_marked(marker, 1.0, name=TOOL_MARKER)
    return ended


class _Turn(LiveTurn):
    """What the reader knows about the turn in flight."""

    __slots__ = ("completed", "errors", "items", "refused", "start", "turn_id")

    def __init__(self, emit: Emit, watch: TurnWatch, items: TurnItems) -> None:
        super().__init__(emit, watch)
        self.items = items
        self.start: PendingRequest | None = None
        self.turn_id: str | None = None
        self.completed: p.Turn | None = None
        self.refused: str | None = None
        """Why Codex refused ``turn/start``, when it did."""
        self.errors: list[tuple[str, object]] = []

    @property
    def over(self) -> bool:
        """Nothing more of the turn is coming: it completed, or Codex refused it."""
        return self.completed is not None or self.refused is not None

    def ours(self, turn_id: str) -> bool:
        """Whether ``turn_id`` is this turn (before Codex names it, any turn is)."""
        return self.turn_id is None or turn_id == self.turn_id

    def feed_stderr(self, text: str) -> None:
        """Codex's stderr is tracing lines, passed on as they are."""
        self.emit(Stderr(text.rstrip("\n")))


class CodexAppServerConversation(ProcessConversation[_Turn]):
    """One Codex thread on one long-lived ``codex app-server`` process (a SteerableConversation).

    The model, the reasoning effort and the output schema may change per turn. Besides the
    failures every long-lived conversation has, a turn raises SchemaDialectError for an output
    schema Codex's strict mode refuses, SessionResumeError when Codex has no thread of the
    conversation's id, CliExitError when the turn failed (kind from Codex's error info) or
    Codex refused it, and ApprovalRequiredError when a permission request met
    ApprovalPolicy.FAIL_TURN. An interrupt is ``turn/interrupt``; the turn returns once every
    command it started is ended.
    """

    _unanswered = "no turn/completed {grace:g} s after the interrupt; killing the process"
    _start_command = "codex app-server"
    # Codex takes an interrupt or a steer only once it started the turn (``turn/started``);
    # its ``turn/start`` response comes before, and one sent then is refused.
    _stop_waits_for_start = True

    def __init__(
        self,
        # The base type, not CodexAppServerTransport: that module imports this one.
        transport: ProcessTransport,
        provider: CodexProvider,
        spec: ConversationSpec,
        *,
        reap: Callable[[str], int] | None = None,
        pool: ProcessPool | None = None,
    ) -> None:
        super().__init__(transport, spec, name="Codex")
        self._provider = provider
        # Tools are served on a socket of the conversation's own, named in its argv: such a
        # conversation keeps a process of its own.
        self._pool = pool if not spec.tools else None
        self._reap = reap or _reap_by_marker
        self._usage = ThreadUsage(model=self._model)
        previous = spec.previous_usage
        self._usage.known(previous.raw if previous is not None else None)
        self._marker = new_run_id()
        # The thread this conversation started (thread/start): a warm-up leaves it on the process.
        self._spare: _SpareThread | None = None
        # The conversation's tools, served to the process as a local MCP server while it runs.
        self._serving: LocalToolServer | None = None

    def warm(self) -> None:
        """Join (or start) a shared process and open the conversation's thread on it now.

        The process stays running, warm, when the conversation closes (see
        :meth:`CodexAppServerTransport.prewarm`).
        """
        channel = self._ensure_process(_ignore)
        if isinstance(channel, SharedChannel):
            channel.keep_warm()
            spare, self._spare = self._spare, None
            if spare is not None:
                # The thread stays on the process for the next new conversation like this one.
                channel.process.leave_spare(spare.key, spare)
                self._session_id = None

    def _refuse(self, request: TurnRequest) -> None:
        per_turn = dataclasses.replace(request, output_schema=None, reasoning_effort=None)
        refuse_fixed_changes("Codex app-server", per_turn, self._spec)
        schema = request.output_schema
        if schema is not None:
            problems = dialect_problems(schema.schema, SchemaDialect.STRICT)
            if problems:
                raise SchemaDialectError(problems)

    def steer(self, text: str) -> None:
        """Add ``text`` to the running turn (``turn/steer``).

        Codex delivers it once the tool running now finishes, inside the same turn, which
        still ends with one result.

        Raises:
            NoRunningTurnError: no turn is running (or Codex has not named it yet).
            InvalidRequestError: ``text`` is empty.
        """

        def frame(turn: _Turn) -> dict[str, Any] | None:
            thread = self._session_id
            if thread is None or turn.turn_id is None or not turn.started or turn.interrupted:
                return None
            params = p.TurnSteerParams(
                thread_id=thread,
                expected_turn_id=turn.turn_id,
                input=(p.TextUserInput(text=text),),
            )
            return request_frame(self._requests.issue(params.METHOD, None), params)

        self._add_to_turn("steer", text, lk.STEERED, frame)

    # -- the turn ------------------------------------------------------------------------

    _forks_count_as_resumed = True

    def _before_turn(self, channel: Channel, request: TurnRequest, emit: Emit) -> None:
        # The model goes with each turn (turn/start), not as a request before it.
        self._drain_between_turns(channel, emit)

    def _new_turn(self, request: TurnRequest, emit: Emit, watch: TurnWatch, resumed: bool) -> _Turn:
        turn = _Turn(emit, watch, TurnItems(emit, monotonic=self._clock))
        if self._serving is not None:
            self._serving.host.emit = emit
            self._serving.host.approve = self._tool_approvals(turn)
        return turn

    def _turn_frame(self, turn: _Turn, request: TurnRequest) -> Mapping[str, Any]:
        thread_id = self._session_id
        assert thread_id is not None
        if request.model is not None:
            self._model = self._usage.model = request.model
        schema = request.output_schema
        params = p.TurnStartParams(
            thread_id=thread_id,
            input=(p.TextUserInput(text=request.prompt),),
            model=request.model,
            effort=request.reasoning_effort or self._spec.reasoning_effort,
            output_schema=dict(schema.schema) if schema is not None else None,
            sandbox_policy=sandbox_policy(self._spec.permissions),
        )
        self._usage.begin_turn()
        turn.start = self._issue(params.METHOD, None)
        return request_frame(turn.start, params)

    def _on_line(self, channel: Channel, turn: _Turn, line: str) -> None:
        said = decode(line)
        if isinstance(said, Malformed):
            detail = f"{said.reason}: {said.line.strip()}"
            turn.emit(Lifecycle(lk.MALFORMED_FRAME, detail[:UNKNOWN_DETAIL_CHARS]))
        elif isinstance(said, p.Notification):
            self._on_notification(channel, turn, said.params)
        elif isinstance(said, p.ServerRequest):
            self._on_server_request(channel, turn, said)
        else:
            self._on_response(channel, turn, said)

    def _on_notification(self, channel: Channel, turn: _Turn, params: object) -> None:
        emit, items = turn.emit, turn.items
        if isinstance(params, p.ItemStartedNotification):
            if turn.ours(params.turn_id):
                items.started(params.item)
        elif isinstance(params, p.ItemCompletedNotification):
            if turn.ours(params.turn_id):
                items.completed(params.item)
        elif isinstance(params, p.AgentMessageDeltaNotification):
            if turn.ours(params.turn_id):
                items.delta(params.item_id, params.delta)
        elif isinstance(params, p.ThreadTokenUsageUpdatedNotification):
            call = self._usage.update(params.token_usage)
            if call is not None:
                emit(UsageReport(call, call.total_cost_usd, UsageScope.CALL))
        elif isinstance(params, p.ErrorNotification):
            message = params.error.message
            turn.errors.append((message, params.error.codex_error_info))
            emit(ProviderErrorReported(message, fatal=not params.will_retry))
        elif isinstance(params, p.TurnStartedNotification):
            self._named(channel, turn, params.turn.id, active=True)
        elif isinstance(params, p.TurnCompletedNotification):
            if turn.ours(params.turn.id):
                turn.completed = params.turn
        else:
            self._notice(params, emit)

    def _notice(self, params: object, emit: Emit) -> None:
        if isinstance(params, p.WarningNotification):
            emit(Lifecycle(lk.WARNING, params.message))
        elif isinstance(params, p.ConfigWarningNotification | p.DeprecationNoticeNotification):
            emit(Lifecycle(lk.WARNING, params.summary))
        elif isinstance(params, p.McpServerStatusUpdatedNotification):
            emit(Lifecycle(lk.MCP_SERVER_STATUS, f"{params.name}: {encode(params.status)}"))
        elif isinstance(params, p.ThreadNameUpdatedNotification):
            # Another thread's name (a shared process routes by thread, but a stray one may
            # still come) and a name cleared (null) are not this conversation's title.
            ours = self._session_id is None or params.thread_id == self._session_id
            if ours and params.thread_name and params.thread_name.strip():
                emit(SessionTitle(params.thread_name, "thread/name/updated"))

    def _named(self, channel: Channel, turn: _Turn, turn_id: str, *, active: bool = False) -> None:
        """Codex named the turn (its ``turn/start`` response), or started it (``turn/started``)."""
        with self._lock:
            if turn.turn_id is not None and turn.turn_id != turn_id:
                return  # another turn's
            named, turn.turn_id = turn.turn_id is None, turn_id
        if named:
            turn.emit(Lifecycle(lk.TURN_STARTED, turn_id))
        if active:
            self._run_began(channel, turn)

    def _on_response(
        self, channel: Channel, turn: _Turn, said: p.Response | p.ErrorResponse
    ) -> None:
        pending = self._resolve(said)
        if pending is None:
            return
        if turn.start is not None and pending.request_id == turn.start.request_id:
            if isinstance(said, p.ErrorResponse):
                turn.refused = said.message or f"error {said.code}"
                return
            try:
                started = p.TurnStartParams.parse_result(said.result)
            except p.CodexProtocolError as error:
                turn.emit(Lifecycle(lk.MALFORMED_FRAME, str(error)[:UNKNOWN_DETAIL_CHARS]))
                return
            self._named(channel, turn, started.turn.id)
        elif isinstance(said, p.ErrorResponse):
            name = lk.STEER_REFUSED if pending.subtype == "turn/steer" else lk.REQUEST_REFUSED
            turn.emit(Lifecycle(name, f"{pending.subtype}: {said.message}"))

    def _resolve(self, said: p.Response | p.ErrorResponse) -> PendingRequest | None:
        key = pending_key(_IDS, said)
        with self._lock:
            return self._requests.resolve(key) if key is not None else None

    def _on_server_request(self, channel: Channel, turn: _Turn, said: p.ServerRequest) -> None:
        item_id = getattr(said.params, "item_id", None)
        args = turn.items.item_args(item_id) if isinstance(item_id, str) else None
        request = approval_request(said.params, args)
        if request is None:
            self._refuse_request(channel, said, turn.emit)
            return
        answer = self._decide(turn, request)
        reply = approval_reply(said.params, answer.decision, interrupted=turn.interrupted)
        self._answer_approval(channel, turn, request, answer, p.reply(said.id, reply))

    def _refuse_request(self, channel: Channel, said: p.ServerRequest, emit: Emit) -> None:
        # Codex waits for an answer to every request it makes: one nobody can give is refused.
        message = f"agentshim does not handle {said.method} requests"
        try:
            channel.send({"id": said.id, "error": {"code": _UNHANDLED, "message": message}})
        except ProcessClosedError:
            return
        emit(Lifecycle(lk.SERVER_REQUEST_REFUSED, said.method))

    def _interrupt_frame(self, turn: _Turn) -> dict[str, Any]:
        thread, turn_id = self._session_id, turn.turn_id
        assert thread is not None
        assert turn_id is not None
        params = p.TurnInterruptParams(thread_id=thread, turn_id=turn_id)
        pending = self._issue(params.METHOD, None)
        return request_frame(pending, params)

    # -- the result ------------------------------------------------------------------------

    def _conclude(
        self, channel: Channel, turn: _Turn, request: TurnRequest, resumed: bool, started: float
    ) -> TurnResult:
        structured = request.output_schema is not None
        completed = turn.completed
        status = str(encode(completed.status)) if completed is not None else None
        interrupted = turn.interrupted or status == "interrupted"
        if turn.items.open_tools or completed is None or interrupted:
            turn.items.close_open("interrupted before it finished")
        if interrupted:
            ended = self._reap(self._marker)
            if ended:
                turn.emit(Lifecycle(lk.COMMANDS_ENDED, f"{ended} left running by the interrupt"))
        argv, exit_status, stderr = channel.argv, channel.exit, "".join(self._stderr)
        if exit_status is not None and completed is None:
            turn.emit(RunFinished(exit_status.returncode))
        self._raise_for_reading(turn, argv)
        if exit_status is not None and completed is None and not turn.interrupted:
            raise self._died(exit_status)
        if turn.refused is not None:
            raise self._refused(channel, f"codex refused turn/start: {turn.refused}")
        if status == "failed" and not interrupted:
            raise self._failure(argv, stderr, completed, turn.errors)
        if interrupted:
            turn.emit(TurnInterrupted("interrupted on request"))
        text = turn.items.final_text()
        payload: Any | None = None
        if structured and text and not interrupted:
            try:
                payload = json.loads(text)
            except (ValueError, RecursionError):
                payload = None
        usage = self._usage.turn_usage()
        if usage is not None:
            turn.emit(UsageReport(usage, usage.total_cost_usd))
        result = self._turn_result(
            text,
            usage,
            started=started,
            resumed=resumed,
            interrupted=interrupted,
            context_tokens=self._usage.context_tokens,
            context_window=self._usage.context_window,
        )
        return dataclasses.replace(result, structured_output=payload) if payload else result

    def _failure(
        self,
        argv: tuple[str, ...],
        stderr: str,
        completed: p.Turn | None,
        errors: list[tuple[str, object]],
    ) -> CliExitError:
        error = completed.error if completed is not None else None
        if error is not None:
            message, info = error.message, error.codex_error_info
        elif errors:
            message, info = errors[-1]
        else:
            message, info = "codex reported the turn failed without a reason", None
        kind = failure_kind(info, message)
        if kind is FailureKind.OTHER and errors:
            kind = failure_kind(errors[-1][1], errors[-1][0])
        return CliExitError(argv, 1, stderr=stderr, kind=kind, detail=message)

    # -- the process -----------------------------------------------------------------------

    def _open_process(self, emit: Emit) -> Channel:
        if self._pool is not None:
            return self._join_shared(self._pool, emit)
        context, spec = self._context, self._spec
        servers = tuple(spec.mcp_servers)
        if spec.tools:
            refuse_remote_executor(context.executor)
            self._serving = serve_tools(spec.tools, emit=emit)
            # Each process gets its own socket; Codex's MCP flags write nothing, so they are
            # simply built again.
            servers = (*servers, self._serving.server)
            self._mcp = None
        argv = app_server_argv(
            context.binary_path,
            path=context.env.get("PATH"),
            marker=self._marker,
            mcp_argv=self._install_mcp(servers),
        )
        env = dict(context.env)
        self._add_mcp_env(env)
        channel = self._start_process(argv, env, emit, side=self._serving)
        self._handshake(channel, emit)
        self._open_thread(channel, emit)
        return channel

    def _join_shared(self, pool: ProcessPool, emit: Emit) -> Channel:
        """Open the conversation's thread on a shared process (started when none can take it).

        The process-wide configuration (the environment, the MCP servers' flags) decides
        which processes it may share; its marker goes per thread.
        """
        self._announce_respawn(emit)  # a shared process reports it as its own does
        context = self._context
        argv = app_server_argv(
            context.binary_path,
            path=context.env.get("PATH"),
            marker=None,
            mcp_argv=self._install_mcp(tuple(self._spec.mcp_servers)),
        )
        env = dict(context.env)
        self._add_mcp_env(env)
        channel = join_shared(pool, argv, env, emit)
        self._adopt_channel(channel)
        once_per_process(channel, lambda: self._handshake(channel, emit))
        self._open_thread(channel, emit)
        return channel

    def _handshake(self, channel: Channel, emit: Emit) -> None:
        params = p.InitializeParams(
            client_info=p.ClientInfo(name=_CLIENT_NAME, title=_CLIENT_NAME, version=__version__),
            capabilities=p.InitializeCapabilities(experimental_api=True),
        )
        answer = self._request(channel, params, emit)
        if isinstance(answer, p.ErrorResponse):
            self._release_process()
            raise self._refused(channel, f"codex refused initialize: {answer.message}")
        # A process that ended meanwhile is met by the next read of the start phase.
        self._send(channel, _wire.notification("initialized"))

    def _open_thread(self, channel: Channel, emit: Emit) -> None:
        spec, thread_id = self._spec, self._session_id
        policy, sandbox = approval_policy(spec.permissions), sandbox_mode(spec.permissions)
        params: p.ThreadStartParams | p.ThreadResumeParams | p.ThreadForkParams
        shared = channel if isinstance(channel, SharedChannel) else None
        config = None
        if shared is not None:
            config = thread_config(path=self._context.env.get("PATH"), marker=self._marker)
        # What every way of opening a thread says about it.
        thread: dict[str, Any] = {
            "cwd": spec.cwd,
            "approval_policy": policy,
            "sandbox": sandbox,
            "model": self._model,
        }
        if thread_id is None:
            params = p.ThreadStartParams(**thread, config=config)
            if shared is not None and self._adopt_spare(shared, params, emit):
                return
        elif self._fork:
            # A new thread with the history of thread_id; the conversation becomes the fork.
            params = p.ThreadForkParams(thread_id=thread_id, exclude_turns=True, **thread)
        else:
            if shared is not None:
                shared.bind_session(thread_id)
            params = p.ThreadResumeParams(
                thread_id=thread_id, exclude_turns=True, config=config, **thread
            )
        with opening_session(channel):
            answer = self._request(channel, params, emit)
        if isinstance(answer, p.ErrorResponse):
            self._release_process()
            detail = f"codex refused {params.METHOD}: {answer.message}"
            if thread_id is not None and is_unknown_thread(answer.code, answer.message):
                raise SessionResumeError(channel.argv, 1, session_id=thread_id, detail=detail)
            raise self._refused(channel, detail)
        try:
            opened = params.parse_result(answer.result)
        except p.CodexProtocolError as error:
            self._release_process()
            detail = f"codex answered {params.METHOD} with {error}"
            raise CliExitError(channel.argv, 1, detail=detail) from None
        self._session_id = opened.thread.id
        if shared is not None:
            shared.bind_session(opened.thread.id)
            if isinstance(params, p.ThreadStartParams):
                key = _spare_key(params)
                self._spare = _SpareThread(key, opened.thread.id, self._marker, opened.thread.path)
        self._fork = False
        emit(SessionStarted(opened.thread.id))
        if opened.thread.name and opened.thread.name.strip():
            emit(SessionTitle(opened.thread.name, params.METHOD))  # a resumed thread's name
        if opened.thread.path:
            emit(Lifecycle(lk.SESSION_FILE, opened.thread.path))
        if thread_id is not None:
            # The stored total follows the response; it is the baseline of the next turn.
            deadline, before = self._clock() + _REPLAY_WAIT, self._usage.updates
            self._drain_between_turns(
                channel,
                emit,
                settle=_REPLAY_WAIT,
                deadline=deadline,
                until=lambda: self._usage.updates != before,
            )

    def _request(self, channel: Channel, params: Any, emit: Emit) -> p.Response | p.ErrorResponse:
        """Send ``params`` (a request of the start phase) and read until it is answered."""
        return self._call(
            channel, str(params.METHOD), lambda pending: request_frame(pending, params), emit
        )

    def _adopt_spare(self, shared: SharedChannel, params: p.ThreadStartParams, emit: Emit) -> bool:
        """Take a thread a warm-up left on the process with these settings; whether there was one.

        The thread is new and empty; the conversation takes its marker with it (its commands
        carry that one).
        """
        spare = shared.process.take_spare(_spare_key(params))
        if not isinstance(spare, _SpareThread):
            return False
        self._session_id, self._marker = spare.thread_id, spare.marker
        shared.bind_session(spare.thread_id)
        emit(SessionStarted(spare.thread_id))
        if spare.path:
            emit(Lifecycle(lk.SESSION_FILE, spare.path))
        return True

    def _answer_of(
        self, channel: Channel, pending: PendingRequest, line: str, emit: Emit
    ) -> p.Response | p.ErrorResponse | None:
        said = decode(line)
        if isinstance(said, p.Response | p.ErrorResponse):
            if self._resolve(said) is pending:
                return said
            return None
        self._take_between_turns(channel, said, emit)
        return None

    def _between_turns(self, channel: Channel, line: str, emit: Emit) -> float:
        """Take what Codex said since the last turn (late notifications) before this one."""
        self._take_between_turns(channel, decode(line), emit)
        return 0.0

    def _take_between_turns(self, channel: Channel, said: Message | Malformed, emit: Emit) -> None:
        if isinstance(said, p.ServerRequest):
            self._refuse_request(channel, said, emit)
        elif isinstance(said, p.Notification):
            params = said.params
            if isinstance(params, p.ThreadTokenUsageUpdatedNotification):
                self._usage.update(params.token_usage)
            else:
                self._notice(params, emit)
        elif isinstance(said, p.Response | p.ErrorResponse):
            self._resolve(said)
        else:
            emit(Lifecycle(lk.MALFORMED_FRAME, said.reason[:UNKNOWN_DETAIL_CHARS]))

    # -- closing ---------------------------------------------------------------------------

    def _shut_down(self) -> None:
        """On a shared process, unsubscribe from the thread first (``thread/unsubscribe``).

        The process runs on for the other conversations; unsubscribed, it sends this thread's
        frames to nobody and unloads the thread later. Waited for up to the close grace, and
        never fatal: a process that does not answer is left to the others as it is.
        """
        channel, thread_id = self._channel, self._session_id
        if isinstance(channel, SharedChannel) and channel.exit is None and thread_id is not None:
            self._unsubscribe(channel, thread_id)
        super()._shut_down()

    def _unsubscribe(self, channel: SharedChannel, thread_id: str) -> None:
        deadline = self._clock() + self._close_grace
        params = p.ThreadUnsubscribeParams(thread_id=thread_id)
        pending = self._issue(str(params.METHOD), deadline)
        try:
            channel.send(request_frame(pending, params))
        except ProcessClosedError:
            return
        self._answer(channel, pending, deadline, _ignore)

    def _answer(
        self, channel: Channel, pending: PendingRequest, deadline: float, emit: Emit
    ) -> p.Response | p.ErrorResponse | ProcessExited | None:
        """Read until ``pending`` is answered, the process ends, or ``deadline`` (None).

        Unlike the start phase's request, nothing is killed when no answer comes: the
        process may serve other conversations.
        """
        while True:
            output = channel.read_until(deadline)
            if output is None or isinstance(output, ProcessExited):
                return output
            if isinstance(output, StdoutLine):
                said = decode(output.text)
                if (
                    isinstance(said, p.Response | p.ErrorResponse)
                    and self._resolve(said) is pending
                ):
                    return said
                if not isinstance(said, p.Response | p.ErrorResponse):
                    self._between_turns(channel, output.text, emit)
