"""ClaudeStreamTransport: one long-lived ``claude -p`` process per conversation, stream-json both ways.

Every turn of a conversation is a user message written to the same process; its events are
the one-shot parser's, read from the same stdout, and it ends at the turn's ``result``
frame. The process starts with the first turn (with ``--resume`` when the conversation has
an id) and stays until the conversation is closed; when it dies, the turn fails with
CliDiedError and the next turn starts a new process that resumes the conversation.

Threading: a turn runs on the thread that calls :meth:`ClaudeStreamConversation.turn`, which
is the only thread that reads the process and the only one that sends events or calls the
approval handler. ``interrupt``, ``steer`` and ``close`` may come from any thread: they write
their frame to stdin and wake the reader, so no helper thread exists and no read polls.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentshim.core import lifecycle_kinds as lk
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import (
    CliExitError,
    FailureKind,
    InvalidRequestError,
    ProcessClosedError,
    SessionResumeError,
    TurnFailedError,
)
from agentshim.core.events import (
    AgentEvent,
    Emit,
    Lifecycle,
    RunFinished,
    TurnInterrupted,
    UsageReport,
    UsageScope,
)
from agentshim.core.frames import UNKNOWN_DETAIL_CHARS
from agentshim.core.ids import is_valid_session_id
from agentshim.core.jsonvalues import as_mapping, as_str
from agentshim.core.provider import ParserContext
from agentshim.core.stream import parse_json_object
from agentshim.core.turn import ParsedTurn, TurnRequest, TurnResult
from agentshim.core.usage import CostSource, ProviderUsage
from agentshim.providers.warm_transport import WarmConversation, WarmTransport
from agentshim.tools.host import ToolHost
from agentshim.transport.channel import Channel
from agentshim.transport.conversation import (
    LiveTurn,
)
from agentshim.transport.correlator import PendingRequest
from agentshim.transport.warm import WarmIdle, greet
from agentshim.transport.watch import TurnWatch

from .parser import ClaudeStreamParser
from .provider import PROFILE, TOOL_SEARCH_ENV, ClaudeProvider
from .stream_argv import stream_argv
from .stream_callbacks import hook_answer, initialize_fields, mcp_answer, sdk_mcp_argv
from .stream_protocol import (
    approval_request,
    control_error,
    control_request,
    control_success,
    decision_response,
    user_message,
)

if TYPE_CHECKING:
    pass

__all__ = ["ClaudeStreamConversation", "ClaudeStreamTransport"]

_BETWEEN_TURNS_WAIT = 30.0
"""How long a turn waits for a turn the CLI began on its own (between ours) to finish."""


class ClaudeStreamTransport(WarmTransport):
    """A Transport whose conversations each keep one ``claude -p`` stream-json process.

    The constructor's keywords are :class:`~agentshim.transport.conversation.ProcessTransport`'s.
    :meth:`prewarm` starts processes ahead of new conversations (``warm`` keeps them).
    """

    profile = PROFILE
    """Claude Code's capabilities."""

    def prewarm(self, count: int, spec: ConversationSpec, idle: WarmIdle | None = None) -> None:
        """Start ``count`` processes for new conversations like ``spec``, kept until one opens.

        A new conversation (one with no id to resume) that starts exactly like one of them
        (the same argv, cwd and environment) runs its first turn on it instead of starting
        the CLI. A resumed conversation never does: Claude Code resumes only with ``--resume``
        on its command line.

        Each is asked ``initialize`` and answers before this returns, so it is ready. With
        ``idle``, one still untaken after ``idle.after`` seconds is ended.

        Raises:
            ProviderCapabilityError: the CLI's provider is not Claude Code.
            CliDiedError / CliTimeoutError: a process ended or did not answer in time.
        """
        conversation = self.open(spec)
        try:
            launch = conversation.launch()
        finally:
            conversation.close()
        self._start_warm(count, launch, spec.cwd, _say_hello, idle)

    def open(self, spec: ConversationSpec) -> ClaudeStreamConversation:
        """Open a conversation; its process starts with its first turn.

        Raises:
            ProviderCapabilityError: the CLI's provider is not Claude Code.
        """
        provider = self._provider(ClaudeProvider, "Claude Code's stream-json")
        return ClaudeStreamConversation(self, provider, spec)


_HELLO_ID = "agentshim_warm"


def _say_hello(channel: Channel, monotonic: Callable[[], float]) -> None:
    """Ask a new process ``initialize`` and read until it answers: then it is ready.

    Raises:
        CliExitError / CliTimeoutError: it ended first, or did not answer in time.
    """

    def answers(frame: Mapping[str, Any]) -> bool:
        body = as_mapping(frame.get("response")) or {}
        return frame.get("type") == "control_response" and body.get("request_id") == _HELLO_ID

    greet(channel, control_request(_HELLO_ID, "initialize"), answers, monotonic, cli="claude")


class _Turn(LiveTurn):
    """What the reader knows about the turn in flight."""

    __slots__ = ("parser", "result_seen", "usage")

    def __init__(
        self,
        parser: ClaudeStreamParser,
        emit: Emit,
        watch: TurnWatch,
        usage: list[ProviderUsage],
    ) -> None:
        super().__init__(emit, watch)
        self.parser = parser
        self.result_seen = False
        self.usage = usage
        """The turn's own usage, once its result reported it (a list of at most one)."""

    @property
    def over(self) -> bool:
        """The turn's ``result`` frame came."""
        return self.result_seen

    def feed_stderr(self, text: str) -> None:
        """The one-shot parser reads stderr too."""
        self.parser.feed_stderr(text)


class ClaudeStreamConversation(WarmConversation[_Turn]):
    """One Claude Code conversation on one long-lived process (a SteerableConversation).

    Besides the failures every long-lived conversation has, a turn raises
    SessionResumeError when the CLI no longer has the conversation to resume, CliExitError
    when its result reported a failure (kind as on one-shot), ApprovalRequiredError when a
    permission request met ApprovalPolicy.FAIL_TURN, and TurnFailedError (kind MODEL) when
    the CLI refused the request's model (nothing sent). Closing also restores MCP files.
    """

    def __init__(
        self, transport: ClaudeStreamTransport, provider: ClaudeProvider, spec: ConversationSpec
    ) -> None:
        super().__init__(transport, spec, name="Claude Code")
        self._provider = provider
        self._process_cost = 0.0
        # The conversation's tools, answered in band (mcp_message) on the turn's thread.
        self._tools = ToolHost(spec.tools) if spec.tools else None
        # A turn of the CLI's own (woken by a background task) is running between ours.
        self._background_turn = False

    def steer(self, text: str) -> None:
        """Write ``text`` into the running turn; Claude Code folds it into that turn.

        Raises:
            NoRunningTurnError: no turn is running.
            InvalidRequestError: ``text`` is empty.
        """
        self._add_to_turn("steer", text, lk.STEERED, lambda turn: user_message(text))

    # -- the turn ------------------------------------------------------------------------

    def _before_turn(self, channel: Channel, request: TurnRequest, emit: Emit) -> None:
        self._background_turn = False
        super()._before_turn(channel, request, emit)

    def _new_turn(self, request: TurnRequest, emit: Emit, watch: TurnWatch, resumed: bool) -> _Turn:
        usage: list[ProviderUsage] = []
        parser = self._provider.new_parser(
            self._per_turn_usage(emit, usage), expect_structured=False
        )
        parser.configure(ParserContext(model=self._model, resumed=resumed))
        return _Turn(parser, emit, watch, usage)

    def _turn_frame(self, turn: _Turn, request: TurnRequest) -> Mapping[str, Any]:
        return user_message(request.prompt)

    def launch(self) -> tuple[list[str], dict[str, str]]:
        """The argv and environment the conversation's next process starts with.

        Installs the conversation's MCP servers first, when it has any (restored on close).
        """
        spec = self._spec
        mcp_argv = self._install_mcp(spec.mcp_servers)
        if self._tools is not None:
            mcp_argv += sdk_mcp_argv(self._tools.server_name)
        ctx = self._argv_context(mcp_argv)
        argv = stream_argv(self._provider, ctx, spec.permissions, fork=self._fork)
        env = dict(self._context.env)
        self._add_mcp_env(env)
        if self._tools is not None:
            # Offered up front, as on one-shot: a deferred tool needs a ToolSearch first.
            for name, value in TOOL_SEARCH_ENV.items():
                env.setdefault(name, value)
        return argv, env

    def _open_process(self, emit: Emit) -> Channel:
        argv, env = self.launch()
        # A new conversation may take a process started ahead of it (a resumed one cannot:
        # --resume is on the command line).
        channel = None if self._session_id is not None else self._adopt_warm_like(argv, env, emit)
        if channel is None:
            channel = self._start_process(argv, env, emit)
        self._process_cost = 0.0
        self._handshake(channel)
        return channel

    def _handshake(self, channel: Channel) -> None:
        """Register the tools and hooks; the answer is read with the turn's output.

        Not waited for: the CLI holds its answer until it has asked the in-process MCP
        server its ``initialize``, which only the turn's read loop answers.
        """
        fields = initialize_fields(self._tools, self._spec.hooks)
        if not fields:
            return
        pending = self._issue("initialize", None)
        self._send(channel, control_request(pending.request_id, "initialize", **fields))

    def _between_turns(self, channel: Channel, line: str, emit: Emit) -> float:
        """Report a line the CLI printed since the last turn; wait on while a turn of its own runs.

        Claude Code's background tasks can wake a turn of their own after a result. Its
        frames are never this turn's output: each becomes ``Lifecycle("between_turns", line)``
        here, before this turn's message goes out, and when such a turn is still running
        the drain waits for its result (within the turn's budget) so the two never mix.
        """
        emit(Lifecycle(lk.BETWEEN_TURNS, line.strip()[:UNKNOWN_DETAIL_CHARS]))
        frame = parse_json_object(line)
        kind = frame.get("type") if frame is not None else None
        if kind == "control_request" and frame is not None:
            self._answer_callback(channel, frame, emit)
        elif kind == "result":
            self._background_turn = False
        elif kind in ("system", "assistant", "user", "stream_event"):
            self._background_turn = True
        return _BETWEEN_TURNS_WAIT if self._background_turn else 0.0

    def _answer_of(
        self, channel: Channel, pending: PendingRequest, line: str, emit: Emit
    ) -> Mapping[str, Any] | None:
        frame = parse_json_object(line)
        if frame is None or frame.get("type") != "control_response":
            self._between_turns(channel, line, emit)
            return None
        body = as_mapping(frame.get("response")) or {}
        with self._lock:
            answered = self._requests.resolve(body.get("request_id"))
        return body if answered is not None and answered.request_id == pending.request_id else None

    def _switch_model(self, channel: Channel, model: str, emit: Emit) -> None:
        body: Mapping[str, Any] = self._call(
            channel,
            "set_model",
            lambda pending: control_request(pending.request_id, "set_model", model=model),
            emit,
        )
        if body.get("subtype") != "success":
            reason = as_str(body.get("error")) or "no reason given"
            raise TurnFailedError(
                f"Claude Code refused to switch to model {model!r}: {reason}; the turn was "
                "not sent; name another model",
                kind=FailureKind.MODEL,
                detail=reason,
            )
        self._model = model
        emit(Lifecycle(lk.MODEL_SWITCHED, model))

    def _on_line(self, channel: Channel, turn: _Turn, line: str) -> None:
        frame = turn.parser.frame_or_feed(line)
        if frame is None:
            return
        kind = frame.get("type")
        if kind == "control_request":
            self._on_cli_request(channel, turn, frame)
        elif kind == "control_response":
            self._on_control_response(turn, frame)
        elif kind == "control_cancel_request":
            turn.emit(Lifecycle(lk.CONTROL_CANCEL_REQUEST, as_str(frame.get("request_id")) or ""))
        else:
            turn.parser.dispatch(frame, line)
            if kind == "result":
                turn.result_seen = True

    def _on_control_response(self, turn: _Turn, frame: Mapping[str, Any]) -> None:
        body = as_mapping(frame.get("response")) or {}
        with self._lock:
            answered = self._requests.resolve(body.get("request_id"))
        subtype = as_str(body.get("subtype")) or "?"
        name = answered.subtype if answered is not None else "unknown request"
        turn.emit(Lifecycle(lk.CONTROL_RESPONSE, f"{name}: {subtype}"))

    def _on_cli_request(self, channel: Channel, turn: _Turn, frame: Mapping[str, Any]) -> None:
        request_id = as_str(frame.get("request_id"))
        body = as_mapping(frame.get("request")) or {}
        if request_id is None:
            turn.emit(Lifecycle(lk.MALFORMED_FRAME, "control_request: no request_id"))
            return
        if body.get("subtype") != "can_use_tool":
            self._answer_callback(channel, frame, turn.emit)
            return
        request = approval_request(body)
        answer = self._decide(turn, request)
        frame = control_success(request_id, decision_response(answer.decision, request))
        self._answer_approval(channel, turn, request, answer, frame)

    def _answer_callback(self, channel: Channel, frame: Mapping[str, Any], emit: Emit) -> None:
        """Answer an ``mcp_message`` or ``hook_callback`` here, on the reading thread.

        Anything else (or one for a server or hook this conversation never registered) is
        refused as unsupported.
        """
        request_id = as_str(frame.get("request_id"))
        body = as_mapping(frame.get("request")) or {}
        subtype = body.get("subtype")
        response: dict[str, Any] | None = None
        if subtype == "mcp_message":
            if self._tools is not None:
                self._tools.emit = emit
            response = mcp_answer(self._tools, body)
        elif subtype == "hook_callback":
            response = hook_answer(self._spec.hooks, body, emit)
        if response is None or request_id is None:
            self._answer_unsupported(channel, frame)
            return
        try:
            channel.send(control_success(request_id, response))
        except (ProcessClosedError, InvalidRequestError) as error:
            emit(Lifecycle(lk.CALLBACK_NOT_SENT, f"{subtype}: {error}"))

    def _answer_unsupported(self, channel: Channel, frame: Mapping[str, Any]) -> None:
        request_id = as_str(frame.get("request_id"))
        body = as_mapping(frame.get("request")) or {}
        if request_id is None:
            return
        subtype = as_str(body.get("subtype")) or "?"
        try:
            channel.send(control_error(request_id, f"agentshim does not handle {subtype} requests"))
        except ProcessClosedError:
            pass

    def _interrupt_frame(self, turn: _Turn) -> Mapping[str, Any]:
        pending = self._issue("interrupt", None)
        return control_request(pending.request_id, "interrupt")

    # -- the result ------------------------------------------------------------------------

    def _conclude(
        self, channel: Channel, turn: _Turn, request: TurnRequest, resumed: bool, started: float
    ) -> TurnResult:
        parsed = self._finish(turn)
        if parsed.session_id:
            self._session_id = parsed.session_id
            self._fork = False
        argv = channel.argv
        exit_status = channel.exit
        if exit_status is not None and not turn.result_seen:
            turn.emit(RunFinished(exit_status.returncode))
            error = CliExitError(
                argv,
                exit_status.returncode,
                stderr="".join(self._stderr),
                kind=parsed.error_kind or FailureKind.OTHER,
                detail=parsed.error or "",
            )
            classified = self._provider.classify_exit(error, resumed=False)
            if isinstance(classified, SessionResumeError):
                raise classified
        self._raise_for_reading(turn, argv, parsed)
        if exit_status is not None and not turn.result_seen and not turn.interrupted:
            raise self._died(exit_status)
        if turn.interrupted:
            turn.emit(TurnInterrupted("interrupted on request"))
        elif parsed.error is not None:
            error = CliExitError(
                argv,
                1,
                stderr="".join(self._stderr),
                kind=parsed.error_kind or FailureKind.OTHER,
                detail=parsed.error,
            )
            raise self._provider.classify_exit(error, resumed=False)
        return self._turn_result(
            parsed.text,
            turn.usage[0] if turn.usage else parsed.usage,
            started=started,
            resumed=resumed and parsed.session_id in (None, self._session_id),
            interrupted=turn.interrupted,
            context_tokens=parsed.context_tokens,
            context_window=parsed.context_window,
            background_tasks=parsed.background_tasks,
            notices=parsed.notes,
        )

    def _finish(self, turn: _Turn) -> ParsedTurn:
        parsed = turn.parser.finish()
        if parsed.session_id is not None and not is_valid_session_id(parsed.session_id):
            turn.emit(
                Lifecycle(
                    lk.SESSION_ID_REFUSED,
                    f"the CLI named its session {parsed.session_id[:200]!r}, which is not a safe id",
                )
            )
            parsed = dataclasses.replace(parsed, session_id=None)
        return parsed

    def _per_turn_usage(self, emit: Emit, usage: list[ProviderUsage]) -> Emit:
        """Turn the result's process-wide cost into this turn's share, on the event too.

        ``total_cost_usd`` in a result is cumulative over the process; the token counts in
        its ``usage`` are the turn's own.
        """

        def per_turn(event: AgentEvent) -> None:
            # Call reports carry no cost and are parts of the turn's: passed on as they are.
            if isinstance(event, UsageReport) and event.scope is UsageScope.TURN:
                share = self._turn_share(event.usage)
                usage[:] = [share]
                event = dataclasses.replace(event, usage=share, cost_usd=share.total_cost_usd)
            emit(event)

        return per_turn

    def _turn_share(self, usage: ProviderUsage) -> ProviderUsage:
        total = usage.total_cost_usd
        if total is None or usage.cost_source is not CostSource.REPORTED:
            return usage
        share = max(total - self._process_cost, 0.0)
        self._process_cost = total
        return dataclasses.replace(usage, total_cost_usd=share)
