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
import threading
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agentshim._version import __version__
from agentshim.core.conversation import ConversationSpec, TurnSlot, TurnStop
from agentshim.core.errors import (
    AgentShimError,
    ApprovalRequiredError,
    CliDiedError,
    CliExitError,
    CliTimeoutError,
    FailureKind,
    InvalidRequestError,
    NoRunningTurnError,
    ProcessClosedError,
    SchemaDialectError,
    SessionResumeError,
    TurnCancelledError,
    TurnStalledError,
)
from agentshim.core.events import (
    AgentEvent,
    Lifecycle,
    ProviderErrorReported,
    RunFinished,
    RunStarted,
    SessionStarted,
    Stderr,
    TurnInterrupted,
    UsageReport,
    UsageScope,
)
from agentshim.core.frames import UNKNOWN_DETAIL_CHARS
from agentshim.core.ids import validate_session_id
from agentshim.core.profile import SchemaDialect
from agentshim.core.provider import McpInstallation, mcp_env, mcp_env_defaults
from agentshim.core.schema import dialect_problems
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.core.usage import ProviderUsage
from agentshim.execution.process import ProcessExited, SpawnRequest, StderrLine
from agentshim.execution.reaping import can_scan, new_run_id, reap_marked
from agentshim.providers.codex.provider import CodexProvider
from agentshim.transport.approvals import answered, decide_for_turn, requested
from agentshim.transport.channel import Channel
from agentshim.transport.context import TransportContext
from agentshim.transport.correlator import PendingRequest
from agentshim.transport.fixed import refuse_fixed_changes
from agentshim.transport.watch import Due, TurnWatch

from . import protocol as p
from ._wire import encode
from .approvals import approval_reply, approval_request
from .channel import Malformed, Message, RpcChannel
from .errors import failure_kind, is_unknown_thread
from .items import TurnItems
from .permissions import approval_policy, sandbox_mode, sandbox_policy
from .profile import TOOL_MARKER, app_server_argv
from .usage import PROVIDER_NAME, ThreadUsage

__all__ = ["CodexAppServerConversation"]

_STARTUP_TIMEOUT = 60.0
"""How long a new process may take to answer ``initialize`` and open its thread."""

_REPLAY_WAIT = 0.5
"""How long a resumed thread's replayed usage total is waited for (it follows the response)."""

_UNHANDLED = -32601
_CLIENT_NAME = "agentshim"


def _reap_by_marker(marker: str) -> int:
    if not can_scan():
        return 0
    ended, _ = reap_marked(marker, 1.0)
    return ended


class _Turn:
    """What the reader knows about the turn in flight."""

    def __init__(
        self, emit: Callable[[AgentEvent], None], watch: TurnWatch, items: TurnItems
    ) -> None:
        self.emit = emit
        self.watch = watch
        self.items = items
        self.start: PendingRequest | None = None
        self.turn_id: str | None = None
        self.interrupted = False
        self.interrupt_due = False
        """An interrupt came before Codex named the turn: it goes out when it does."""
        self.completed: p.Turn | None = None
        self.refused: str | None = None
        """Why Codex refused ``turn/start``, when it did."""
        self.fail: AgentShimError | None = None
        self.errors: list[tuple[str, object]] = []
        self.steered: deque[str] = deque()

    @property
    def done(self) -> bool:
        """Nothing more of the turn is coming."""
        return self.completed is not None or self.refused is not None

    def ours(self, turn_id: str) -> bool:
        """Whether ``turn_id`` is this turn (before Codex names it, any turn is)."""
        return self.turn_id is None or turn_id == self.turn_id


class CodexAppServerConversation:
    """One Codex thread on one long-lived ``codex app-server`` process (a SteerableConversation)."""

    def __init__(
        self,
        context: TransportContext,
        provider: CodexProvider,
        spec: ConversationSpec,
        *,
        turn_timeout: float | None,
        interrupt_grace: float,
        close_grace: float,
        reap: Callable[[str], int] | None = None,
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
        self._reap = reap or _reap_by_marker
        self._slot = TurnSlot("this Codex conversation")
        # Guards what other threads touch: the channel, the request ids, the turn in flight.
        self._lock = threading.Lock()
        self._rpc: RpcChannel | None = None
        self._turn: _Turn | None = None
        self._session_id = spec.resume_session_id
        self._thread_open = False
        self._model = spec.model or context.model
        self._usage = ThreadUsage(model=self._model)
        previous = spec.previous_usage
        self._usage.known(previous.raw if previous is not None else None)
        self._marker = new_run_id()
        self._mcp: McpInstallation | None = None
        self._stderr: deque[str] = deque(maxlen=200)

    # -- the Conversation protocol -------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        """The conversation's thread id; None until Codex names it."""
        return self._session_id

    def turn(
        self,
        request: TurnRequest,
        emit: Callable[[AgentEvent], None],
        stop: TurnStop | None = None,
    ) -> TurnResult:
        """Run one turn on the conversation's process; events go to ``emit`` on this thread.

        The model, the reasoning effort and the output schema may change per turn. A stop
        requested before the turn is written raises TurnCancelledError with nothing sent; one
        requested later sends ``turn/interrupt``, and the turn returns its result marked
        ``interrupted`` once every command it started is ended.

        Raises:
            SessionStateError: the conversation is closed, or a turn is already running.
            ProviderCapabilityError: the request asks for what a running process cannot
                change (its own env, argv, cwd or MCP servers).
            SchemaDialectError: the output schema is not one Codex's strict mode accepts.
            TurnCancelledError: stopped before the turn was sent.
            CliDiedError: the process ended mid-turn (the conversation is kept).
            SessionResumeError: Codex has no thread of the conversation's id.
            CliExitError: the turn failed (kind from Codex's error info), or Codex refused it.
            CliTimeoutError / TurnStalledError: the turn overran its budget, or went silent.
            ApprovalRequiredError: a permission request met ApprovalPolicy.FAIL_TURN.
        """
        turn_stop = self._slot.begin(stop)
        try:
            per_turn = dataclasses.replace(request, output_schema=None, reasoning_effort=None)
            refuse_fixed_changes("Codex app-server", per_turn, self._spec)
            schema = request.output_schema
            if schema is not None:
                problems = dialect_problems(schema.schema, SchemaDialect.STRICT)
                if problems:
                    raise SchemaDialectError(problems)
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
        """Interrupt the running turn in band (the process stays); nothing when idle."""
        self._slot.interrupt()

    def steer(self, text: str) -> None:
        """Add ``text`` to the running turn (``turn/steer``).

        Codex delivers it once the tool running now finishes, inside the same turn, which
        still ends with one result.

        Raises:
            NoRunningTurnError: no turn is running (or Codex has not named it yet).
            InvalidRequestError: ``text`` is empty.
        """
        if not isinstance(text, str) or not text.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "steer.text", f"{text!r:.40} is empty", "steer() needs some text"
            )
        with self._lock:
            turn, rpc, thread = self._turn, self._rpc, self._session_id
            if (
                turn is None
                or rpc is None
                or thread is None
                or turn.turn_id is None
                or turn.done
                or turn.interrupted
            ):
                raise NoRunningTurnError("no turn is running; send the text as a new turn")
            params = p.TurnSteerParams(
                thread_id=thread,
                expected_turn_id=turn.turn_id,
                input=(p.TextUserInput(text=text),),
            )
            try:
                rpc.request(params, None)
            except ProcessClosedError:
                raise NoRunningTurnError(
                    "the turn's process has ended; send the text as a new turn"
                ) from None
            turn.steered.append(text)
            rpc.wake()

    def close(self) -> None:
        """End the process (stdin EOF, then SIGTERM, then SIGKILL)."""
        self._slot.close()
        self._slot.interrupt()
        if self._slot.running:
            return  # the turn's own thread closes the process when its turn ends
        self._shut_down()

    # -- the turn ------------------------------------------------------------------------

    def _run(
        self, request: TurnRequest, emit: Callable[[AgentEvent], None], stop: TurnStop
    ) -> TurnResult:
        started = self._clock()
        resumed = self._session_id is not None
        rpc = self._ensure_process(emit)
        self._drain_between_turns(rpc, emit)
        thread_id = self._session_id
        assert thread_id is not None
        timeout = request.timeout if request.timeout is not None else self._turn_timeout
        watch = TurnWatch(started, timeout=timeout, stall_timeout=self._spec.stall_timeout)
        turn = _Turn(emit, watch, TurnItems(emit, clock=self._clock))
        model = request.model
        if model is not None:
            self._model = self._usage.model = model
        schema = request.output_schema
        params = p.TurnStartParams(
            thread_id=thread_id,
            input=(p.TextUserInput(text=request.prompt),),
            model=model,
            effort=request.reasoning_effort or self._spec.reasoning_effort,
            output_schema=dict(schema.schema) if schema is not None else None,
            sandbox_policy=sandbox_policy(self._spec.permissions),
        )
        self._usage.begin_turn()
        with self._lock:
            self._turn = turn
            try:
                turn.start = rpc.request(params, None)
            except ProcessClosedError:
                pass  # the read below meets the exit and reports it
        detach = stop.attach(lambda: self._interrupt_turn(None))
        try:
            self._read_turn(rpc, turn)
        finally:
            detach()
        return self._conclude(rpc, turn, resumed, started, timeout, schema is not None)

    def _read_turn(self, rpc: RpcChannel, turn: _Turn) -> None:
        watch, clock = turn.watch, self._clock
        while not turn.done:
            said = rpc.read(watch.deadline())
            if turn.steered:
                self._report_steers(turn)
            if said is None:
                self._on_quiet(rpc, turn, clock())
                if rpc.exit is not None:
                    return
                continue
            if isinstance(said, ProcessExited):
                return
            watch.heard(clock())
            if isinstance(said, StderrLine):
                self._stderr.append(said.text)
                turn.emit(Stderr(said.text.rstrip("\n")))
            else:
                self._on_message(rpc, turn, said)

    def _report_steers(self, turn: _Turn) -> None:
        with self._lock:
            texts = list(turn.steered)
            turn.steered.clear()
        for text in texts:
            turn.emit(Lifecycle("steered", text))

    def _on_quiet(self, rpc: RpcChannel, turn: _Turn, now: float) -> None:
        due = turn.watch.due(now)
        if due is Due.TIMEOUT or due is Due.STALL:
            self._interrupt_turn(due)
        elif due is Due.KILL:
            turn.emit(
                Lifecycle(
                    "interrupt_unanswered",
                    f"no turn/completed {self._interrupt_grace:g} s after the interrupt; "
                    "killing the process",
                )
            )
            rpc.kill()
            while not isinstance(rpc.read(self._clock() + self._close_grace), ProcessExited | None):
                pass

    def _on_message(self, rpc: RpcChannel, turn: _Turn, said: Message | Malformed) -> None:
        if isinstance(said, Malformed):
            turn.emit(
                Lifecycle(
                    "malformed_frame", f"{said.reason}: {said.line.strip()}"[:UNKNOWN_DETAIL_CHARS]
                )
            )
        elif isinstance(said, p.Notification):
            self._on_notification(rpc, turn, said.params)
        elif isinstance(said, p.ServerRequest):
            self._on_server_request(rpc, turn, said)
        else:
            self._on_response(turn, rpc, said)

    def _on_notification(self, rpc: RpcChannel, turn: _Turn, params: object) -> None:
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
            self._named(rpc, turn, params.turn.id)
        elif isinstance(params, p.TurnCompletedNotification):
            if turn.ours(params.turn.id):
                turn.completed = params.turn
        else:
            self._notice(params, emit)

    def _notice(self, params: object, emit: Callable[[AgentEvent], None]) -> None:
        if isinstance(params, p.WarningNotification):
            emit(Lifecycle("warning", params.message))
        elif isinstance(params, p.ConfigWarningNotification | p.DeprecationNoticeNotification):
            emit(Lifecycle("warning", params.summary))
        elif isinstance(params, p.McpServerStatusUpdatedNotification):
            status = encode(params.status)
            emit(Lifecycle("mcp_server_status", f"{params.name}: {status}"))

    def _named(self, rpc: RpcChannel, turn: _Turn, turn_id: str) -> None:
        with self._lock:
            if turn.turn_id is not None:
                return
            turn.turn_id = turn_id
            due, turn.interrupt_due = turn.interrupt_due, False
        turn.emit(Lifecycle("turn_started", turn_id))
        if due:
            self._send_interrupt(rpc, turn)

    def _on_response(
        self, turn: _Turn, rpc: RpcChannel, said: p.Response | p.ErrorResponse
    ) -> None:
        with self._lock:
            pending = rpc.resolve(said)
        if pending is None:
            return
        if turn.start is not None and pending.request_id == turn.start.request_id:
            if isinstance(said, p.ErrorResponse):
                turn.refused = said.message or f"error {said.code}"
                return
            try:
                started = p.TurnStartParams.parse_result(said.result)
            except p.CodexProtocolError as error:
                turn.emit(Lifecycle("malformed_frame", str(error)))
                return
            self._named(rpc, turn, started.turn.id)
        elif isinstance(said, p.ErrorResponse):
            name = "steer_refused" if pending.subtype == "turn/steer" else "request_refused"
            turn.emit(Lifecycle(name, f"{pending.subtype}: {said.message}"))

    def _on_server_request(self, rpc: RpcChannel, turn: _Turn, said: p.ServerRequest) -> None:
        item_id = getattr(said.params, "item_id", None)
        args = turn.items.item_args(item_id) if isinstance(item_id, str) else None
        request = approval_request(said.params, args)
        if request is None:
            self._refuse_request(rpc, said, turn.emit)
            return
        turn.emit(requested(request))
        answer = decide_for_turn(
            self._spec.approvals,
            self._spec.permissions,
            request,
            interrupted=turn.interrupted,
            timeout=self._spec.approval_timeout,
            clock=self._clock,
        )
        decision = answer.decision
        try:
            rpc.reply(said.id, approval_reply(said.params, decision, interrupted=turn.interrupted))
        except (ProcessClosedError, InvalidRequestError) as error:
            turn.emit(Lifecycle("approval_not_sent", str(error)))
        turn.emit(answered(request, decision, answer.decided_by))
        if answer.fail_turn and turn.fail is None:
            turn.fail = ApprovalRequiredError(request.tool, request.tool_id)
            self._interrupt_turn(None)

    def _refuse_request(
        self, rpc: RpcChannel, said: p.ServerRequest, emit: Callable[[AgentEvent], None]
    ) -> None:
        # Codex waits for an answer to every request it makes: one nobody can give is refused.
        try:
            rpc.refuse(said.id, _UNHANDLED, f"agentshim does not handle {said.method} requests")
        except ProcessClosedError:
            return
        emit(Lifecycle("server_request_refused", said.method))

    def _interrupt_turn(self, reason: Due | None) -> None:
        """Send ``turn/interrupt`` for the running turn (any thread; once per turn)."""
        with self._lock:
            turn, rpc = self._turn, self._rpc
            if turn is None or rpc is None or turn.done:
                return
            if turn.interrupted:
                if reason is not None and turn.watch.reason is None:
                    turn.watch.reason = reason
                return
            turn.interrupted = True
            turn.watch.interrupted(self._clock(), self._interrupt_grace, reason)
            if turn.turn_id is None:
                turn.interrupt_due = True
                rpc.wake()
                return
        self._send_interrupt(rpc, turn)

    def _send_interrupt(self, rpc: RpcChannel, turn: _Turn) -> None:
        thread, turn_id = self._session_id, turn.turn_id
        if thread is None or turn_id is None:
            return
        with self._lock:
            try:
                rpc.request(p.TurnInterruptParams(thread_id=thread, turn_id=turn_id), None)
            except ProcessClosedError:
                pass  # the reader meets the exit
        rpc.wake()

    # -- the result ------------------------------------------------------------------------

    def _conclude(
        self,
        rpc: RpcChannel,
        turn: _Turn,
        resumed: bool,
        started: float,
        timeout: float | None,
        structured: bool,
    ) -> TurnResult:
        completed = turn.completed
        status = str(encode(completed.status)) if completed is not None else None
        interrupted = turn.interrupted or status == "interrupted"
        if turn.items.open_tools or completed is None or interrupted:
            turn.items.close_open("interrupted before it finished")
        if interrupted:
            ended = self._reap(self._marker)
            if ended:
                turn.emit(Lifecycle("commands_ended", f"{ended} left running by the interrupt"))
        argv, exit_status, stderr = rpc.argv, rpc.exit, "".join(self._stderr)
        if exit_status is not None and completed is None:
            turn.emit(RunFinished(exit_status.returncode))
        reason = turn.watch.reason
        if reason is Due.STALL:
            raise TurnStalledError(self._spec.stall_timeout, turn.watch.stalled_for)
        if reason is Due.TIMEOUT:
            raise CliTimeoutError(argv, timeout)
        if turn.fail is not None:
            raise turn.fail
        if exit_status is not None and completed is None and not turn.interrupted:
            raise CliDiedError(
                session_id=self._session_id, returncode=exit_status.returncode, stderr=stderr
            )
        if turn.refused is not None:
            raise CliExitError(
                argv, 1, stderr=stderr, detail=f"codex refused turn/start: {turn.refused}"
            )
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
        else:
            usage = ProviderUsage(provider=PROVIDER_NAME, increment_known=False, model=self._model)
        return TurnResult(
            text=text,
            structured_output=payload,
            session_id=self._session_id,
            resumed=resumed,
            usage=usage,
            cost_usd=usage.total_cost_usd,
            duration_ms=int((self._clock() - started) * 1000),
            exit_code=0,
            interrupted=interrupted,
            context_tokens=self._usage.context_tokens,
            context_window=self._usage.context_window,
        )

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

    def _ensure_process(self, emit: Callable[[AgentEvent], None]) -> RpcChannel:
        rpc = self._rpc
        if rpc is not None and rpc.exit is None and self._thread_open:
            return rpc
        if rpc is not None:
            self._release_process()
        context, spec = self._context, self._spec
        if self._mcp is None and spec.mcp_servers:
            workspace = Path(spec.cwd) if spec.cwd is not None else None
            self._mcp = self._provider.install_mcp(workspace, spec.mcp_servers)
        mcp_argv = tuple(self._mcp.argv) if self._mcp is not None else ()
        argv = app_server_argv(
            context.binary_path,
            path=context.env.get("PATH"),
            marker=self._marker,
            mcp_argv=mcp_argv,
        )
        env = dict(context.env)
        if self._mcp is not None:
            for name, value in mcp_env_defaults(self._mcp).items():
                env.setdefault(name, value)
            env.update(mcp_env(self._mcp))
        env[TOOL_MARKER] = self._marker
        emit(RunStarted(tuple(argv)))
        process = context.executor.spawn(SpawnRequest(argv, cwd=spec.cwd, env=env))
        rpc = RpcChannel(Channel(process, argv, clock=self._clock), clock=self._clock)
        with self._lock:
            self._rpc = rpc
        self._stderr.clear()
        self._thread_open = False
        self._handshake(rpc, emit)
        self._open_thread(rpc, emit)
        return rpc

    def _handshake(self, rpc: RpcChannel, emit: Callable[[AgentEvent], None]) -> None:
        params = p.InitializeParams(
            client_info=p.ClientInfo(name=_CLIENT_NAME, title=_CLIENT_NAME, version=__version__),
            capabilities=p.InitializeCapabilities(experimental_api=True),
        )
        answer = self._call(rpc, params, emit)
        if isinstance(answer, p.ErrorResponse):
            self._release_process()
            raise CliExitError(
                rpc.argv,
                1,
                stderr="".join(self._stderr),
                detail=f"codex refused initialize: {answer.message}",
            )
        try:
            rpc.notify("initialized")
        except ProcessClosedError:
            raise self._startup_failed(rpc, emit) from None

    def _open_thread(self, rpc: RpcChannel, emit: Callable[[AgentEvent], None]) -> None:
        spec, thread_id = self._spec, self._session_id
        policy, sandbox = approval_policy(spec.permissions), sandbox_mode(spec.permissions)
        params: p.ThreadStartParams | p.ThreadResumeParams
        if thread_id is None:
            params = p.ThreadStartParams(
                cwd=spec.cwd, approval_policy=policy, sandbox=sandbox, model=self._model
            )
        else:
            params = p.ThreadResumeParams(
                thread_id=thread_id,
                cwd=spec.cwd,
                approval_policy=policy,
                sandbox=sandbox,
                model=self._model,
                exclude_turns=True,
            )
        answer = self._call(rpc, params, emit)
        if isinstance(answer, p.ErrorResponse):
            self._release_process()
            detail = f"codex refused {params.METHOD}: {answer.message}"
            if thread_id is not None and is_unknown_thread(answer.code, answer.message):
                raise SessionResumeError(rpc.argv, 1, session_id=thread_id, detail=detail)
            raise CliExitError(rpc.argv, 1, stderr="".join(self._stderr), detail=detail)
        try:
            opened = params.parse_result(answer.result)
        except p.CodexProtocolError as error:
            self._release_process()
            raise CliExitError(
                rpc.argv, 1, detail=f"codex answered {params.METHOD}: {error}"
            ) from None
        self._session_id = opened.thread.id
        self._thread_open = True
        emit(SessionStarted(opened.thread.id))
        if opened.thread.path:
            emit(Lifecycle("session_file", opened.thread.path))
        if thread_id is not None and not self._usage.has_total:
            # The stored total follows the response; it is the baseline of the next turn.
            deadline = self._clock() + _REPLAY_WAIT
            while not self._usage.has_total:
                said = rpc.read(deadline)
                if said is None or isinstance(said, ProcessExited):
                    return
                self._between_turns(rpc, said, emit)

    def _call(
        self, rpc: RpcChannel, params: Any, emit: Callable[[AgentEvent], None]
    ) -> p.Response | p.ErrorResponse:
        """Send one request before a turn and read until it is answered (or fail the turn)."""
        with self._lock:
            try:
                pending = rpc.request(params, self._clock() + _STARTUP_TIMEOUT)
            except ProcessClosedError:
                pending = None
        while pending is not None:
            said = rpc.read(pending.deadline)
            if said is None:
                if pending.deadline is not None and self._clock() < pending.deadline:
                    continue
                rpc.kill()
                self._release_process()
                raise CliTimeoutError(
                    rpc.argv,
                    _STARTUP_TIMEOUT,
                    message=(
                        f"codex app-server did not answer {pending.subtype} within "
                        f"{_STARTUP_TIMEOUT:g} s; it was killed (check that it starts: "
                        "codex app-server)"
                    ),
                )
            if isinstance(said, ProcessExited):
                break
            if isinstance(said, p.Response | p.ErrorResponse):
                with self._lock:
                    answered_request = rpc.resolve(said)
                if (
                    answered_request is not None
                    and answered_request.request_id == pending.request_id
                ):
                    return said
                continue
            self._between_turns(rpc, said, emit)
        raise self._startup_failed(rpc, emit)

    def _startup_failed(self, rpc: RpcChannel, emit: Callable[[AgentEvent], None]) -> CliDiedError:
        """The process ended before it was ready: release it, say how it ended."""
        exit_status = rpc.exit
        code = exit_status.returncode if exit_status is not None else None
        emit(RunFinished(code))
        stderr = "".join(self._stderr)
        self._release_process()
        return CliDiedError(session_id=self._session_id, returncode=code, stderr=stderr)

    def _drain_between_turns(self, rpc: RpcChannel, emit: Callable[[AgentEvent], None]) -> None:
        """Take what Codex said since the last turn (late notifications) before this one."""
        while True:
            said = rpc.read(self._clock())
            if said is None or isinstance(said, ProcessExited):
                return
            self._between_turns(rpc, said, emit)

    def _between_turns(
        self,
        rpc: RpcChannel,
        said: Message | Malformed | StderrLine | Any,
        emit: Callable[[AgentEvent], None],
    ) -> None:
        if isinstance(said, StderrLine):
            self._stderr.append(said.text)
        elif isinstance(said, p.ServerRequest):
            self._refuse_request(rpc, said, emit)
        elif isinstance(said, p.Notification):
            params = said.params
            if isinstance(params, p.ThreadTokenUsageUpdatedNotification):
                self._usage.update(params.token_usage)
            else:
                self._notice(params, emit)
        elif isinstance(said, p.Response | p.ErrorResponse):
            with self._lock:
                rpc.resolve(said)
        elif isinstance(said, Malformed):
            emit(Lifecycle("malformed_frame", said.reason[:UNKNOWN_DETAIL_CHARS]))

    # -- closing ---------------------------------------------------------------------------

    def _release_process(self) -> None:
        with self._lock:
            rpc, self._rpc = self._rpc, None
        self._thread_open = False
        if rpc is not None:
            rpc.close(self._close_grace)

    def _shut_down(self) -> None:
        self._release_process()
        with self._lock:  # close() and the turn's own thread may both get here
            installation, self._mcp = self._mcp, None
        if installation is not None:
            note = installation.restore()
            if note:
                self._context.log(note)
