"""AcpTransport: one long-lived ACP agent process per conversation, every turn on it.

The process starts with the first turn: ``initialize`` (advertising no ``fs`` and no
``terminal``, so the agent uses its own tools), then ``session/new`` with the conversation's
MCP servers, or the dialect's ``attach`` (``session/load``, whose replayed history is
suppressed, or ``session/resume``) when the conversation has an id. Each turn is one ``session/prompt``; the response's ``stopReason`` is the only
end of a turn. ``session/cancel`` interrupts it, and every permission request that is still
open, or arrives after it, is answered ``cancelled`` (an agent may hold the turn open until
it is). When the process dies the turn fails with CliDiedError, keeping the session id, and
the next turn loads the session in a new process.

Threading: a turn runs on the thread that calls :meth:`AcpConversation.turn`, the only one
that reads the process, sends events or calls the approval handler. ``interrupt`` and
``close`` may come from any thread: they write their frame and wake the reader.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import ConversationSpec, TurnStop
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    CliTimeoutError,
    FailureKind,
    InvalidRequestError,
    ProcessClosedError,
    ProviderCapabilityError,
    SessionResumeError,
)
from agentshim.core.events import (
    Emit,
    Lifecycle,
    RunFinished,
    SessionStarted,
    ToolResult,
    TurnInterrupted,
    UsageReport,
)
from agentshim.core.failures import kind_from_text
from agentshim.core.ids import is_valid_session_id
from agentshim.core.jsonvalues import as_mapping, as_str, list_or_empty
from agentshim.core.mcp import HttpMcpServer, McpServer
from agentshim.core.profile import ProviderProfile
from agentshim.core.stream import parse_json_object
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.core.usage import ProviderUsage, TokenUsage
from agentshim.execution.process import ProcessExited, StderrLine
from agentshim.tools.local import LocalToolServer, refuse_remote_executor, serve_tools
from agentshim.transport.channel import Channel
from agentshim.transport.context import TransportContext
from agentshim.transport.conversation import (
    LiveTurn,
    ProcessConversation,
    ProcessOptions,
    ProcessTransport,
    shown_argv,
)
from agentshim.transport.fixed import refuse_fixed_changes
from agentshim.transport.shared import (
    PoolSlot,
    ProcessPool,
    ProcessSharing,
    SharedChannel,
    bind_session,
    join_shared,
    once_per_process,
    opening_session,
    warm_up,
)
from agentshim.transport.watch import TurnWatch

from .dialect import AcpArgv, AcpDialect
from .jsonrpc import (
    METHOD_NOT_FOUND,
    Notification,
    Request,
    Response,
    RpcError,
    error_response,
    notification,
    read_message,
    request,
    result_response,
)
from .sharing import session_of
from .updates import UpdateReader

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["PROTOCOL_VERSION", "AcpConversation", "AcpTransport", "mcp_servers_param"]

PROTOCOL_VERSION = 1
"""The ACP version this client speaks."""

_CLIENT_INFO = {"name": "agentshim", "title": "agentshim", "version": "1"}
_CANCELLED = {"outcome": {"outcome": "cancelled"}}


def mcp_servers_param(servers: Sequence[McpServer]) -> list[dict[str, Any]]:
    """``servers`` in the shape of ``session/new``'s ``mcpServers``."""
    out: list[dict[str, Any]] = []
    for server in servers:
        if isinstance(server, HttpMcpServer):
            headers = [{"name": k, "value": v} for k, v in server.headers.items()]
            out.append(
                {
                    "type": server.transport,
                    "name": server.name,
                    "url": server.url,
                    "headers": headers,
                }
            )
        else:
            env = [{"name": k, "value": v} for k, v in server.env.items()]
            out.append(
                {
                    "name": server.name,
                    "command": server.command,
                    "args": list(server.args),
                    "env": env,
                }
            )
    return out


class AcpTransport(ProcessTransport):
    """A Transport whose conversations each keep one ACP agent process.

    ``dialect`` is how the agent speaks ACP; ``context`` resolves the installed CLI on first
    use. ``turn_timeout`` is the budget of a turn whose request sets none;
    ``handshake_timeout`` how long starting a session (``initialize`` plus ``session/new``
    or ``session/load``) may take; ``interrupt_grace`` how long a cancelled turn may take to
    end before its process is killed; ``close_grace`` each step of closing a process.
    ``wall_clock`` and ``sleep`` time a dialect's deferred ``session/load``. With
    ``sharing`` the conversations share processes, one ACP session each (see
    :mod:`agentshim.acp.sharing`).
    """

    def __init__(
        self,
        context: TransportContext | Callable[[], TransportContext],
        dialect: AcpDialect,
        *,
        handshake_timeout: float = 90.0,
        wall_clock: Callable[[], float] = time.time,
        sleep: Callable[[float], None] = time.sleep,
        sharing: ProcessSharing | None = None,
        **options: Unpack[ProcessOptions],
    ) -> None:
        super().__init__(context, **options)
        self.sharing = sharing
        self._pools = PoolSlot(session_of)
        self._lock = threading.Lock()
        self.dialect = dialect
        self.handshake_timeout = handshake_timeout
        self.wall_clock = wall_clock
        self.sleep = sleep
        self._created: dict[str, float] = {}

    def pool(self) -> ProcessPool | None:
        """The processes its conversations share (see :mod:`agentshim.transport.shared`)."""
        return self._pools.get(self.sharing, self.context, close_grace=self.close_grace)

    def prewarm(self, count: int, spec: ConversationSpec) -> None:
        """Start ``count`` processes for conversations like ``spec`` and keep them warm.

        Each is started, initialized and has made one session (opencode's first is slow)
        before this returns. At most ``sharing.max_processes`` are started.

        Raises:
            ProviderCapabilityError: the transport does not share processes.
        """
        if self.sharing is None:
            raise ProviderCapabilityError(
                "warm processes are kept by a transport that shares them; pass "
                "share_processes=ProcessSharing(...)"
            )
        warm_up(lambda: self.open(spec), min(count, self.sharing.max_processes))

    def release_warm(self) -> None:
        """End the warm processes no conversation is on."""
        pool = self.pool()
        if pool is not None:
            pool.cool()

    def created(self, session_id: str) -> float | None:
        """When (on ``wall_clock``) a conversation of this transport created ``session_id``."""
        with self._lock:
            return self._created.get(session_id)

    def note_created(self, session_id: str) -> None:
        """Record that ``session_id`` was created now."""
        with self._lock:
            self._created[session_id] = self.wall_clock()

    @property
    def profile(self) -> ProviderProfile:
        """The agent's capabilities."""
        return self.dialect.profile

    def open(self, spec: ConversationSpec) -> AcpConversation:
        """Open a conversation; its process starts with its first turn.

        Raises:
            ProviderCapabilityError: the agent cannot honour the spec's permissions, fork,
                or MCP servers (stdio ones, for an agent that drops them).
            InvalidSessionIdError: the resume id is not safe to pass.
        """
        dialect = self.dialect
        name = dialect.profile.display_name
        if spec.fork:
            raise ProviderCapabilityError(
                f"{name} over ACP cannot fork a conversation; run the fork on "
                "TransportKind.ONE_SHOT or start a fresh conversation"
            )
        if not dialect.stdio_mcp and any(
            not isinstance(server, HttpMcpServer) for server in spec.mcp_servers
        ):
            raise ProviderCapabilityError(
                f"{name} over ACP ignores stdio MCP servers; pass HTTP ones (HttpMcpServer) "
                "or run on TransportKind.ONE_SHOT"
            )
        if spec.tools and not dialect.stdio_mcp:
            raise ProviderCapabilityError(
                f"{name} over ACP ignores stdio MCP servers, and tools are served as one; "
                "run on TransportKind.ONE_SHOT"
            )
        if spec.hooks is not None:
            raise ProviderCapabilityError(
                f"{name} over ACP has no hook callbacks; drop hooks (Claude Code's stream "
                "transport has them)"
            )
        dialect.argv(AcpArgv(binary_path="", model=None, permissions=spec.permissions))
        return AcpConversation(self, spec)


class _Turn(LiveTurn):
    """What the reader knows about the turn in flight."""

    __slots__ = ("prompt_id", "reader", "response")

    def __init__(self, reader: UpdateReader, emit: Emit, watch: TurnWatch) -> None:
        super().__init__(emit, watch)
        self.reader = reader
        self.prompt_id = ""
        self.response: Response | None = None

    @property
    def over(self) -> bool:
        """The agent answered the turn's ``session/prompt``."""
        return self.response is not None


class AcpConversation(ProcessConversation[_Turn]):
    """One ACP session on one long-lived agent process.

    A Conversation, not a SteerableConversation: ACP has no message that adds to a running
    turn, so ``Session.steer`` raises ProviderCapabilityError. An interrupt is
    ``session/cancel``. Besides the failures every long-lived conversation has, a turn raises
    ProviderCapabilityError for a model other than the process's, SessionResumeError when
    the agent no longer has the session to load, CliExitError when it answered the prompt
    with an error (classified kind), and ApprovalRequiredError when a permission request met
    ApprovalPolicy.FAIL_TURN.
    """

    _unanswered = "no prompt response {grace:g} s after session/cancel; killing the process"

    def __init__(self, transport: AcpTransport, spec: ConversationSpec) -> None:
        super().__init__(transport, spec, name=transport.dialect.profile.display_name)
        self._transport = transport
        self._dialect = transport.dialect
        self._early: list[Mapping[str, Any]] = []
        # The last usage the process reported, for an agent whose reports add up.
        self._reported: TokenUsage | None = None
        # The conversation's tools, served to the process as a local MCP server while it runs.
        self._serving: LocalToolServer | None = None

    def warm(self) -> None:
        """Join (or start) a shared process and open the conversation's session on it now.

        The process stays running, warm, when the conversation closes.
        """
        channel = self._ensure_process(lambda _: None)
        if isinstance(channel, SharedChannel):
            channel.keep_warm()

    def _refuse(self, request: TurnRequest) -> None:
        switched = request.model is not None and request.model != self._model
        refuse_fixed_changes(self._name, request, self._spec, also=("model",) if switched else ())

    # -- the turn ------------------------------------------------------------------------

    def _run(self, request: TurnRequest, emit: Emit, stop: TurnStop) -> TurnResult:
        started = self._clock()
        resumed = self._session_id is not None
        dialect = self._dialect
        reader = UpdateReader(
            emit, dialect.notice, failed=dialect.failed, superseded=dialect.superseded_messages
        )
        turn = _Turn(reader, emit, self._watch(request, started))
        channel = self._ensure_process(emit)
        if self._serving is not None:
            self._serving.host.emit = emit
        early, self._early = self._early, []
        for update in early:
            turn.reader.read(update)
        session_id = self._session_id
        assert session_id is not None
        pending = self._issue("session/prompt", None)
        turn.prompt_id = pending.request_id
        prompt = [{"type": "text", "text": request.prompt}]
        frame = request_frame(
            pending.request_id, "session/prompt", sessionId=session_id, prompt=prompt
        )
        self._send_and_read(channel, turn, frame, stop)
        return self._conclude(channel, turn, resumed, started)

    # -- starting a session ----------------------------------------------------------------

    def _ensure_process(self, emit: Emit) -> Channel:
        channel = self._live_channel()
        if channel is not None:
            return channel
        context, spec = self._context, self._spec
        args = AcpArgv(
            binary_path=context.binary_path, model=self._model, permissions=spec.permissions
        )
        argv = self._dialect.argv(args)
        if spec.tools:
            refuse_remote_executor(context.executor)
            self._serving = serve_tools(spec.tools, emit=emit)
        env = {**context.env, **self._dialect.env(args)}
        pool = None if spec.tools else self._transport.pool()
        try:
            if pool is not None:
                channel = join_shared(pool, argv, env, emit)
                self._adopt_channel(channel)
            else:
                channel = self._start_process(argv, env, emit, side=self._serving)
        except BaseException:
            self._release_process()
            raise
        self._reported = None
        try:
            self._handshake(channel, emit)
        except BaseException:
            self._release_process()
            raise
        return channel

    def _handshake(self, channel: Channel, emit: Emit) -> None:
        deadline = self._clock() + self._transport.handshake_timeout
        once_per_process(channel, lambda: self._initialize(channel, emit, deadline))
        self._open_session(channel, emit, deadline)

    def _initialize(self, channel: Channel, emit: Emit, deadline: float) -> None:
        capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        init = self._call(
            channel,
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": capabilities,
                "clientInfo": _CLIENT_INFO,
            },
            deadline,
            replay=False,
        )
        if init.error is not None:
            raise self._failure(channel, init.error, "initialize")
        info = as_mapping((init.result or {}).get("agentInfo")) or {}
        version = as_str(info.get("version"))
        emit(
            Lifecycle(
                "acp_initialized", f"{as_str(info.get('name')) or '?'} {version or ''}".strip()
            )
        )

    def _open_session(self, channel: Channel, emit: Emit, deadline: float) -> None:
        cwd = os.path.abspath(self._spec.cwd) if self._spec.cwd else os.getcwd()
        served = () if self._serving is None else (self._serving.server,)
        servers = mcp_servers_param((*self._spec.mcp_servers, *served))
        if self._session_id is None:
            with opening_session(channel):
                response = self._call(
                    channel,
                    "session/new",
                    {"cwd": cwd, "mcpServers": servers},
                    deadline,
                    replay=False,
                )
            if response.error is not None:
                raise self._failure(channel, response.error, "session/new")
            session_id = as_str((response.result or {}).get("sessionId"))
            if session_id is None or not is_valid_session_id(session_id):
                raise CliExitError(
                    channel.argv,
                    1,
                    kind=FailureKind.OTHER,
                    detail=f"session/new named no usable session id ({session_id!r:.80})",
                )
            self._session_id = session_id
            bind_session(channel, session_id)
            self._transport.note_created(session_id)
            emit(SessionStarted(session_id))
            return
        session_id = self._session_id
        bind_session(channel, session_id)
        self._defer_load(session_id, emit)
        attach = self._dialect.attach
        with opening_session(channel):
            response = self._call(
                channel,
                attach,
                {"sessionId": session_id, "cwd": cwd, "mcpServers": servers},
                deadline,
                replay=True,
            )
        if response.error is None and self._dialect.replay_settle > 0:
            self._drain_replay(channel, self._dialect.replay_settle, deadline)
        replayed, self._early = len(self._early), []
        if replayed:
            emit(Lifecycle("replay_suppressed", f"{replayed} updates of the loaded history"))
        if response.error is not None:
            if self._dialect.session_lost(response.error):
                raise SessionResumeError(
                    channel.argv,
                    1,
                    stderr="".join(self._stderr),
                    session_id=session_id,
                    detail=response.error.describe(),
                )
            raise self._failure(channel, response.error, attach)

    def _drain_replay(self, channel: Channel, settle: float, deadline: float) -> None:
        """Keep reading the replay that goes on after the load response, until it goes quiet.

        Nothing of the session's own comes before our first prompt, so every update read
        here is history; it is counted with the rest and dropped.
        """
        while True:
            output = channel.read(min(self._clock() + settle, deadline))
            if output is None or isinstance(output, ProcessExited):
                return  # quiet, or gone: the turn's read meets the exit
            if isinstance(output, StderrLine):
                self._stderr.append(output.text)
                continue
            self._set_aside(channel, _message_of(output.text))

    def _defer_load(self, session_id: str, emit: Emit) -> None:
        """Wait for the next wall-clock minute before loading a session made in this one."""
        if not self._dialect.load_in_a_later_minute:
            return
        created = self._transport.created(session_id)
        if created is None:
            return
        now = self._transport.wall_clock()
        if int(now // 60) != int(created // 60):
            return
        wait = 60.0 - (now % 60.0) + 1.0
        emit(
            Lifecycle(
                "load_deferred",
                f"waiting {wait:.0f} s: {self._name} loses a session loaded in the minute it "
                "was created",
            )
        )
        self._transport.sleep(wait)

    def _call(
        self,
        channel: Channel,
        method: str,
        params: Mapping[str, Any],
        deadline: float,
        *,
        replay: bool,
    ) -> Response:
        """Send ``method`` and read until its response; updates meanwhile are kept aside."""
        pending = self._issue(method, deadline)
        self._send(channel, request(pending.request_id, method, params))
        while True:
            output = channel.read(deadline)
            if output is None:
                raise CliTimeoutError(
                    channel.argv,
                    self._transport.handshake_timeout,
                    message=f"{self._name} ({shown_argv(channel.argv)}) did not answer {method} "
                    f"within {self._transport.handshake_timeout:g} s; check the CLI's auth and "
                    "settings, and that the command starts by hand",
                )
            if isinstance(output, ProcessExited):
                raise self._start_died(channel, output, method)
            if isinstance(output, StderrLine):
                self._stderr.append(output.text)
                continue
            message = _message_of(output.text)
            if isinstance(message, Response):
                with self._lock:
                    answered = self._requests.resolve(message.request_id)
                if answered is not None and answered.request_id == pending.request_id:
                    return message
            else:
                self._set_aside(channel, message)

    def _set_aside(
        self, channel: Channel, message: Notification | Request | Response | None
    ) -> None:
        """Keep an update read before the turn's prompt for it; refuse a request meanwhile.

        Anything else (a response nobody waits for, a line that is no message) is dropped.

        Before session/new answers, an agent may already speak of the session; during
        session/load this is the replayed history.
        """
        if isinstance(message, Notification):
            update = _update_of(message)
            if update is not None:
                self._early.append(update)
        elif isinstance(message, Request):
            self._refuse_request(channel, message)

    def _start_died(self, channel: Channel, exited: ProcessExited, method: str) -> AgentShimError:
        stderr = "".join(self._stderr)
        return CliExitError(
            channel.argv,
            exited.returncode,
            stderr=stderr,
            kind=kind_from_text(stderr) or FailureKind.OTHER,
            detail=f"{self._name} exited before answering {method}",
        )

    def _failure(self, channel: Channel, error: RpcError, method: str) -> CliExitError:
        return self._refused(
            channel, f"{method}: {error.describe()}", self._dialect.classify(error)
        )

    def _refuse_request(self, channel: Channel, message: Request) -> None:
        if message.method == "session/request_permission":
            frame = result_response(message.request_id, _CANCELLED)
        else:
            text = f"agentshim does not offer {message.method}"
            frame = error_response(message.request_id, METHOD_NOT_FOUND, text)
        try:
            channel.send(frame)
        except (ProcessClosedError, InvalidRequestError):
            pass

    # -- reading a turn --------------------------------------------------------------------

    def _on_line(self, channel: Channel, turn: _Turn, line: str) -> None:
        message = _message_of(line)
        if message is None:
            turn.emit(Lifecycle("malformed_frame", line.strip()[:200]))
        elif isinstance(message, Response):
            with self._lock:
                answered = self._requests.resolve(message.request_id)
            if answered is not None and answered.request_id == turn.prompt_id:
                turn.response = message
        elif isinstance(message, Notification):
            update = _update_of(message)
            if update is not None:
                turn.reader.read(update)
        elif message.method == "session/request_permission":
            self._on_permission(channel, turn, message)
        else:
            self._refuse_request(channel, message)

    def _on_permission(self, channel: Channel, turn: _Turn, message: Request) -> None:
        params = message.params
        tool_call = as_mapping(params.get("toolCall")) or {}
        call = turn.reader.announce(tool_call)
        # What is asked about is the request's own toolCall: an agent may have announced the
        # call earlier under a vaguer title (opencode: "bash", then the command).
        tool = as_str(tool_call.get("title")) or call.tool
        raw = as_mapping(tool_call.get("rawInput"))
        args: dict[str, Any] = dict(raw) if raw else {"title": tool}
        request_ = ApprovalRequest(
            tool=tool, args=args, kind=call.kind, tool_id=call.tool_id, description=tool
        )
        answer = self._decide(turn, request_)
        if turn.interrupted:
            # A cancel that came while the handler ran wins: the agent waits for this answer.
            cancelled = ApprovalDecision.deny("the turn was cancelled")
            answer = dataclasses.replace(answer, decision=cancelled, decided_by="interrupted")
            outcome: Mapping[str, Any] = _CANCELLED
        else:
            decision, outcome = _outcome(answer.decision, request_, params)
            answer = dataclasses.replace(answer, decision=decision)
        frame = result_response(message.request_id, outcome)
        self._answer_approval(channel, turn, request_, answer, frame)

    def _interrupt_frame(self, turn: _Turn) -> Mapping[str, Any]:
        return notification("session/cancel", {"sessionId": self._session_id})

    # -- the result ------------------------------------------------------------------------

    def _conclude(self, channel: Channel, turn: _Turn, resumed: bool, started: float) -> TurnResult:
        response = turn.response
        exit_status = channel.exit
        stderr = "".join(self._stderr)
        if exit_status is not None and response is None:
            turn.emit(RunFinished(exit_status.returncode))
        self._raise_for_reading(turn, channel.argv)
        if response is None and not turn.interrupted:
            assert exit_status is not None
            raise self._died(exit_status, kind_from_text(stderr) or FailureKind.OTHER)
        if response is not None and response.error is not None and turn.interrupted:
            # The error answers our cancel (opencode cancelling a model call that has not
            # started to answer says "Internal service failure"): the turn was interrupted.
            turn.emit(Lifecycle("cancel_answered_with_error", response.error.describe()))
            response = Response(response.request_id, {"stopReason": "cancelled"}, None)
        if response is not None and response.error is not None:
            error = response.error
            if self._dialect.session_lost(error):
                raise SessionResumeError(
                    channel.argv,
                    1,
                    stderr=stderr,
                    session_id=self._session_id,
                    detail=f"session/prompt: {error.describe()}",
                )
            raise self._failure(channel, error, "session/prompt")
        result = response.result if response is not None else None
        stop_reason = as_str((result or {}).get("stopReason")) or "cancelled"
        interrupted = turn.interrupted or stop_reason == "cancelled"
        if interrupted:
            for call in turn.reader.open_calls():
                # Agents send no end for a call the cancel stopped; the caller still sees one.
                turn.emit(
                    ToolResult(
                        call.tool_id, call.tool, stderr="cancelled with the turn", kind=call.kind
                    )
                )
            turn.emit(TurnInterrupted("interrupted on request"))
        elif stop_reason != "end_turn":
            turn.emit(Lifecycle("stop_reason", stop_reason))
        usage = self._turn_usage(result, several_calls=bool(turn.reader.calls))
        failure = turn.reader.failure
        if failure is not None and not interrupted:
            kind, text = failure
            raise CliExitError(
                channel.argv,
                1,
                stderr=stderr,
                kind=kind,
                detail=f"{self._name} ended the turn with a failure: {text[:500]}",
            )
        if usage is not None:
            turn.emit(UsageReport(usage, cost_usd=usage.total_cost_usd))
        return self._turn_result(
            turn.reader.text, usage, started=started, resumed=resumed, interrupted=interrupted
        )

    def _turn_usage(
        self, result: Mapping[str, Any] | None, *, several_calls: bool
    ) -> ProviderUsage | None:
        """The turn's usage; for an agent whose reports add up, this turn's share of them."""
        usage = self._dialect.usage(result) if result is not None else None
        if usage is not None and several_calls and self._dialect.usage_of_last_call:
            # The report is the last model call's; the calls before the tool's are not in it.
            return dataclasses.replace(usage, increment_known=False)
        if usage is None or not self._dialect.cumulative_usage:
            return usage
        baseline, self._reported = self._reported, usage.tokens
        share = usage.tokens.minus(baseline) if baseline is not None else usage.tokens
        if share is None:
            # Less than before: not a report of this process's running total.
            return dataclasses.replace(usage, tokens=TokenUsage(), increment_known=False)
        return dataclasses.replace(usage, tokens=dataclasses.replace(share, turns=1))


def _message_of(line: str) -> Notification | Request | Response | None:
    """The JSON-RPC message on ``line``; None for a line that is not one."""
    frame = parse_json_object(line)
    return read_message(frame) if frame is not None else None


def request_frame(request_id: str, method: str, **params: Any) -> dict[str, Any]:
    """Our request ``method`` with ``params`` given as keywords."""
    return request(request_id, method, params)


def _update_of(message: Notification) -> Mapping[str, Any] | None:
    if message.method != "session/update":
        return None
    return as_mapping(message.params.get("update"))


def _outcome(
    decision: ApprovalDecision, request_: ApprovalRequest, params: Mapping[str, Any]
) -> tuple[ApprovalDecision, Mapping[str, Any]]:
    """The option that carries ``decision``, and the decision as it will be reported.

    ACP answers by choosing one of the agent's options: an allow takes ``allow_once`` (else
    ``allow_always``), a deny ``reject_once`` (else ``reject_always``). An allow that
    rewrites the arguments cannot be carried (ACP has no such answer), so it is denied.
    """
    if (
        decision.allowed
        and decision.args is not None
        and dict(decision.args) != dict(request_.args)
    ):
        decision = ApprovalDecision.deny(
            "denied: ACP cannot run a tool with rewritten arguments; allow it as asked or deny it"
        )
    wanted = (
        ("allow_once", "allow_always") if decision.allowed else ("reject_once", "reject_always")
    )
    options = [as_mapping(option) or {} for option in list_or_empty(params.get("options"))]
    for kind in wanted:
        for option in options:
            option_id = as_str(option.get("optionId"))
            if option.get("kind") == kind and option_id is not None:
                return decision, {"outcome": {"outcome": "selected", "optionId": option_id}}
    if decision.allowed:
        decision = ApprovalDecision.deny("denied: the agent offered no option to allow it")
    return decision, _CANCELLED
