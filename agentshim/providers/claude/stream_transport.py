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
import threading
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from agentshim.core.conversation import (
    ConversationSpec,
    TransportKind,
    TurnSlot,
    TurnStop,
)
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
    ProviderCapabilityError,
    SessionResumeError,
    TurnCancelledError,
    TurnFailedError,
    TurnStalledError,
    TurnTimeoutError,
)
from agentshim.core.events import (
    AgentEvent,
    Lifecycle,
    RunFinished,
    RunStarted,
    TurnInterrupted,
    UsageReport,
    UsageScope,
)
from agentshim.core.frames import UNKNOWN_DETAIL_CHARS
from agentshim.core.ids import is_valid_session_id, validate_session_id
from agentshim.core.jsonvalues import as_mapping, as_str
from agentshim.core.profile import ProviderProfile
from agentshim.core.provider import (
    ArgvContext,
    McpInstallation,
    ParsedTurn,
    ParserContext,
    mcp_env,
    mcp_env_defaults,
)
from agentshim.core.stream import parse_json_object
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.core.usage import CostSource, ProviderUsage
from agentshim.execution.process import ProcessExited, SpawnRequest, StderrLine, StdoutLine
from agentshim.tools.host import ToolHost
from agentshim.transport.approvals import answered, decide_for_turn, requested
from agentshim.transport.channel import Channel
from agentshim.transport.context import ContextSource, TransportContext
from agentshim.transport.correlator import Correlator
from agentshim.transport.fixed import refuse_fixed_changes
from agentshim.transport.watch import Due, TurnWatch

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

__all__ = ["ClaudeStreamConversation", "ClaudeStreamTransport"]

_BETWEEN_TURNS_WAIT = 30.0
"""How long a turn waits for a turn the CLI began on its own (between ours) to finish."""

_CONTROL_TIMEOUT = 30.0
"""How long a control request of ours (``set_model``) may go unanswered."""


class ClaudeStreamTransport:
    """A Transport whose conversations each keep one ``claude -p`` stream-json process.

    ``context`` resolves the installed CLI (binary, env, executor) on first use.
    ``turn_timeout`` is the budget of a turn whose request sets none; ``interrupt_grace`` how
    long an interrupted turn may take to end before its process is killed; ``close_grace``
    how long each step of closing a process (stdin EOF, SIGTERM) is given.
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
        """Claude Code's capabilities."""
        return PROFILE

    @property
    def context(self) -> TransportContext:
        """The resolved CLI (found and checked on first use)."""
        return self._source.get()

    def open(self, spec: ConversationSpec) -> ClaudeStreamConversation:
        """Open a conversation; its process starts with its first turn.

        Raises:
            ProviderCapabilityError: the CLI's provider is not Claude Code.
        """
        context = self.context
        provider = context.provider
        if not isinstance(provider, ClaudeProvider):
            raise ProviderCapabilityError(
                f"the stream transport speaks Claude Code's protocol, not {provider.profile.display_name}'s"
            )
        return ClaudeStreamConversation(
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
        "emit",
        "fail",
        "interrupted",
        "parser",
        "result_seen",
        "steered",
        "usage",
        "watch",
    )

    def __init__(
        self,
        parser: ClaudeStreamParser,
        emit: Callable[[AgentEvent], None],
        watch: TurnWatch,
        usage: list[ProviderUsage],
    ) -> None:
        self.parser = parser
        self.emit = emit
        self.watch = watch
        self.interrupted = False
        self.result_seen = False
        self.fail: AgentShimError | None = None
        self.steered: deque[str] = deque()
        self.usage = usage
        """The turn's own usage, once its result reported it (a list of at most one)."""


class ClaudeStreamConversation:
    """One Claude Code conversation on one long-lived process (a SteerableConversation)."""

    def __init__(
        self,
        context: TransportContext,
        provider: ClaudeProvider,
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
        self._slot = TurnSlot("this Claude Code conversation")
        # Guards what other threads touch: the channel, the control ids, the turn in flight.
        self._lock = threading.Lock()
        self._channel: Channel | None = None
        self._control = Correlator("agentshim")
        self._turn: _Turn | None = None
        self._session_id = spec.resume_session_id
        self._fork = spec.fork
        self._model = spec.model or context.model
        self._process_cost = 0.0
        self._mcp: McpInstallation | None = None
        self._stderr: deque[str] = deque(maxlen=200)
        # The conversation's tools, answered in band (mcp_message) on the turn's thread.
        self._tools = ToolHost(spec.tools) if spec.tools else None

    # -- the Conversation protocol -------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        """The conversation's id; None until the CLI names it."""
        return self._session_id

    def turn(
        self,
        request: TurnRequest,
        emit: Callable[[AgentEvent], None],
        stop: TurnStop | None = None,
    ) -> TurnResult:
        """Run one turn on the conversation's process; events go to ``emit`` on this thread.

        A stop requested before the turn is written raises TurnCancelledError with nothing
        sent; one requested later sends the in-band interrupt, and the turn returns its
        result marked ``interrupted`` (the process and the conversation stay).

        Raises:
            SessionStateError: the conversation is closed, or a turn is already running.
            ProviderCapabilityError: the request asks for what a running process cannot
                change (an output schema, its own env, argv, cwd or MCP servers).
            TurnCancelledError: stopped before the turn was sent.
            CliDiedError: the process ended mid-turn (the conversation is kept).
            SessionResumeError: the CLI no longer has the conversation to resume.
            CliExitError: the turn's result reported a failure (kind as on one-shot).
            CliTimeoutError / TurnStalledError: the turn overran its budget, or went silent.
            ApprovalRequiredError: a permission request met ApprovalPolicy.FAIL_TURN.
            TurnFailedError: the CLI refused the request's model (kind MODEL); nothing sent.
        """
        turn_stop = self._slot.begin(stop)
        try:
            refuse_fixed_changes("Claude Code", request, self._spec)
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
        """Write ``text`` into the running turn; Claude Code folds it into that turn.

        Raises:
            NoRunningTurnError: no turn is running.
            InvalidRequestError: ``text`` is empty.
        """
        if not isinstance(text, str) or not text.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "steer.text", f"{text!r:.40} is empty", "steer() needs some text"
            )
        with self._lock:
            turn, channel = self._turn, self._channel
            if turn is None or channel is None or turn.result_seen:
                raise NoRunningTurnError("no turn is running; send the text as a new turn")
            try:
                channel.send(user_message(text))
            except ProcessClosedError:
                raise NoRunningTurnError(
                    "the turn's process has ended; send the text as a new turn"
                ) from None
            turn.steered.append(text)
            channel.wake()

    def close(self) -> None:
        """End the process (stdin EOF, then SIGTERM, then SIGKILL) and restore MCP files."""
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
        resumed = self._session_id is not None and not self._fork
        channel = self._ensure_process(emit)
        self._drain_between_turns(channel, emit, started)
        if request.model is not None and request.model != self._model:
            self._switch_model(channel, request.model, emit)
        timeout = request.timeout if request.timeout is not None else self._turn_timeout
        watch = TurnWatch(started, timeout=timeout, stall_timeout=self._spec.stall_timeout)
        usage: list[ProviderUsage] = []
        parser = self._provider.new_parser(
            self._per_turn_usage(emit, usage), expect_structured=False
        )
        parser.configure(ParserContext(model=self._model, resumed=resumed))
        turn = _Turn(parser, emit, watch, usage)
        with self._lock:
            self._turn = turn
        try:
            channel.send(user_message(request.prompt))
        except ProcessClosedError:
            pass  # the read below meets the exit and reports it
        detach = stop.attach(lambda: self._interrupt_turn(None))
        try:
            self._read_turn(channel, turn)
        finally:
            detach()
        return self._conclude(turn, resumed, started, timeout)

    def _ensure_process(self, emit: Callable[[AgentEvent], None]) -> Channel:
        channel = self._channel
        if channel is not None and channel.exit is None:
            return channel
        if channel is not None:
            self._release_process()
        context, spec = self._context, self._spec
        if self._mcp is None and spec.mcp_servers:
            workspace = Path(spec.cwd) if spec.cwd is not None else None
            self._mcp = self._provider.install_mcp(workspace, spec.mcp_servers)
        mcp_argv = tuple(self._mcp.argv) if self._mcp is not None else ()
        if self._tools is not None:
            mcp_argv += sdk_mcp_argv(self._tools.server_name)
        ctx = ArgvContext(
            binary_path=context.binary_path,
            model=self._model,
            env=context.env,
            resume_session_id=self._session_id,
            reasoning_effort=spec.reasoning_effort,
            mcp_argv=mcp_argv,
            cwd=spec.cwd,
        )
        argv = stream_argv(self._provider, ctx, spec.permissions, fork=self._fork)
        env = dict(context.env)
        if self._mcp is not None:
            for name, value in mcp_env_defaults(self._mcp).items():
                env.setdefault(name, value)
            env.update(mcp_env(self._mcp))
        if self._tools is not None:
            # Offered up front, as on one-shot: a deferred tool needs a ToolSearch first.
            for name, value in TOOL_SEARCH_ENV.items():
                env.setdefault(name, value)
        emit(RunStarted(tuple(argv)))
        process = context.executor.spawn(SpawnRequest(argv, cwd=spec.cwd, env=env))
        channel = Channel(process, argv, clock=self._clock)
        with self._lock:
            self._channel = channel
            self._control.clear()
        self._process_cost = 0.0
        self._stderr.clear()
        self._initialize(channel)
        return channel

    def _initialize(self, channel: Channel) -> None:
        """Register the tools and hooks; the answer is read with the turn's output.

        Not waited for: the CLI holds its answer until it has asked the in-process MCP
        server its ``initialize``, which only the turn's read loop answers.
        """
        fields = initialize_fields(self._tools, self._spec.hooks)
        if not fields:
            return
        with self._lock:
            pending = self._control.issue("initialize", None)
        try:
            channel.send(control_request(pending.request_id, "initialize", **fields))
        except ProcessClosedError:
            pass  # the turn's read meets the exit and reports it

    def _drain_between_turns(
        self, channel: Channel, emit: Callable[[AgentEvent], None], started: float
    ) -> None:
        """Report what the CLI printed since the last turn, and let a turn it began finish.

        Claude Code's background tasks can wake a turn of their own after a result. Its
        frames are never this turn's output: each becomes ``Lifecycle("between_turns", line)``
        here, before this turn's message goes out, and when such a turn is still running
        this waits for its result (within the turn's budget) so the two never mix.
        """
        in_turn = False
        while True:
            now = self._clock()
            output = channel.read(now + _BETWEEN_TURNS_WAIT if in_turn else now)
            if output is None or isinstance(output, ProcessExited):
                return
            if isinstance(output, StderrLine):
                self._stderr.append(output.text)
                continue
            line = output.text
            emit(Lifecycle("between_turns", line.strip()[:UNKNOWN_DETAIL_CHARS]))
            frame = parse_json_object(line)
            kind = frame.get("type") if frame is not None else None
            if kind == "control_request" and frame is not None:
                self._answer_callback(channel, frame, emit)
            elif kind == "result":
                in_turn = False
            elif kind in ("system", "assistant", "user", "stream_event"):
                in_turn = True

    def _switch_model(
        self, channel: Channel, model: str, emit: Callable[[AgentEvent], None]
    ) -> None:
        with self._lock:
            pending = self._control.issue("set_model", self._clock() + _CONTROL_TIMEOUT)
        channel.send(control_request(pending.request_id, "set_model", model=model))
        deadline = pending.deadline
        assert deadline is not None
        while True:
            output = channel.read(deadline)
            if output is None:
                if self._clock() < deadline:
                    continue  # woken early: nothing this switch waits on came
                raise TurnTimeoutError(
                    _CONTROL_TIMEOUT,
                    f"Claude Code did not confirm the switch to model {model!r} within "
                    f"{_CONTROL_TIMEOUT:g} s; the turn was not sent, the conversation is kept",
                )
            if isinstance(output, ProcessExited):
                return  # the turn's read meets the exit and reports it
            if isinstance(output, StderrLine):
                self._stderr.append(output.text)
                continue
            frame = parse_json_object(output.text)
            if frame is None or frame.get("type") != "control_response":
                if frame is not None and frame.get("type") == "control_request":
                    self._answer_callback(channel, frame, emit)
                continue
            body = as_mapping(frame.get("response")) or {}
            with self._lock:
                answered = self._control.resolve(body.get("request_id"))
            if answered is None or answered.request_id != pending.request_id:
                continue
            if body.get("subtype") != "success":
                reason = as_str(body.get("error")) or "no reason given"
                raise TurnFailedError(
                    f"Claude Code refused to switch to model {model!r}: {reason}; the turn was "
                    "not sent; name another model",
                    kind=FailureKind.MODEL,
                    detail=reason,
                )
            self._model = model
            emit(Lifecycle("model_switched", model))
            return

    def _read_turn(self, channel: Channel, turn: _Turn) -> None:
        parser, watch, clock = turn.parser, turn.watch, self._clock
        while not turn.result_seen:
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
            texts = list(turn.steered)
            turn.steered.clear()
        for text in texts:
            turn.emit(Lifecycle("steered", text))

    def _on_quiet(self, channel: Channel, turn: _Turn, now: float) -> None:
        due = turn.watch.due(now)
        if due is Due.TIMEOUT or due is Due.STALL:
            self._interrupt_turn(due)
        elif due is Due.KILL:
            turn.emit(
                Lifecycle(
                    "interrupt_unanswered",
                    f"no result {self._interrupt_grace:g} s after the interrupt; killing the process",
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
        frame = parse_json_object(line)
        if frame is None:
            turn.parser.feed_stdout(line)
            return
        kind = frame.get("type")
        if kind == "control_request":
            self._on_cli_request(channel, turn, frame)
        elif kind == "control_response":
            self._on_control_response(turn, frame)
        elif kind == "control_cancel_request":
            turn.emit(Lifecycle("control_cancel_request", as_str(frame.get("request_id")) or ""))
        else:
            turn.parser.dispatch(frame, line)
            if kind == "result":
                turn.result_seen = True

    def _on_control_response(self, turn: _Turn, frame: Mapping[str, Any]) -> None:
        body = as_mapping(frame.get("response")) or {}
        with self._lock:
            answered = self._control.resolve(body.get("request_id"))
        subtype = as_str(body.get("subtype")) or "?"
        name = answered.subtype if answered is not None else "unknown request"
        turn.emit(Lifecycle("control_response", f"{name}: {subtype}"))

    def _on_cli_request(self, channel: Channel, turn: _Turn, frame: Mapping[str, Any]) -> None:
        request_id = as_str(frame.get("request_id"))
        body = as_mapping(frame.get("request")) or {}
        if request_id is None:
            turn.emit(Lifecycle("malformed_frame", "control_request: no request_id"))
            return
        if body.get("subtype") != "can_use_tool":
            self._answer_callback(channel, frame, turn.emit)
            return
        request = approval_request(body)
        turn.emit(requested(request))
        answer = decide_for_turn(
            self._spec.approvals,
            self._spec.permissions,
            request,
            interrupted=turn.interrupted,
            timeout=self._spec.approval_timeout,
            clock=self._clock,
        )
        decision, fail = answer.decision, answer.fail_turn
        try:
            channel.send(control_success(request_id, decision_response(decision, request)))
        except (ProcessClosedError, InvalidRequestError) as error:
            turn.emit(Lifecycle("approval_not_sent", str(error)))
        turn.emit(answered(request, decision, answer.decided_by))
        if fail and turn.fail is None:
            turn.fail = ApprovalRequiredError(request.tool, request.tool_id)
            self._interrupt_turn(None)

    def _answer_callback(
        self, channel: Channel, frame: Mapping[str, Any], emit: Callable[[AgentEvent], None]
    ) -> None:
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
            emit(Lifecycle("callback_not_sent", f"{subtype}: {error}"))

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

    def _interrupt_turn(self, reason: Due | None) -> None:
        """Send the in-band interrupt for the running turn (any thread; once per turn)."""
        with self._lock:
            turn, channel = self._turn, self._channel
            if turn is None or channel is None or turn.result_seen:
                return
            if turn.interrupted:
                if reason is not None and turn.watch.reason is None:
                    turn.watch.reason = reason
                return
            turn.interrupted = True
            now = self._clock()
            turn.watch.interrupted(now, self._interrupt_grace, reason)
            pending = self._control.issue("interrupt", None)
        try:
            channel.send(control_request(pending.request_id, "interrupt"))
        except ProcessClosedError:
            pass  # the reader meets the exit
        channel.wake()

    # -- the result ------------------------------------------------------------------------

    def _conclude(
        self, turn: _Turn, resumed: bool, started: float, timeout: float | None
    ) -> TurnResult:
        channel = self._channel
        assert channel is not None
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
        reason = turn.watch.reason
        if reason is Due.STALL:
            raise TurnStalledError(self._spec.stall_timeout, turn.watch.stalled_for)
        if reason is Due.TIMEOUT:
            raise CliTimeoutError(argv, timeout, parsed)
        if turn.fail is not None:
            raise turn.fail
        if exit_status is not None and not turn.result_seen and not turn.interrupted:
            raise CliDiedError(
                session_id=self._session_id,
                returncode=exit_status.returncode,
                stderr="".join(self._stderr),
            )
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
        usage = turn.usage[0] if turn.usage else parsed.usage
        if usage is None:
            usage = ProviderUsage(provider=PROFILE.name, increment_known=False)
        return TurnResult(
            text=parsed.text,
            structured_output=None,
            session_id=self._session_id,
            resumed=resumed and parsed.session_id in (None, self._session_id),
            usage=usage,
            cost_usd=usage.total_cost_usd,
            duration_ms=int((self._clock() - started) * 1000),
            exit_code=0,
            interrupted=turn.interrupted,
            context_tokens=parsed.context_tokens,
            context_window=parsed.context_window,
            background_tasks=parsed.background_tasks,
        )

    def _finish(self, turn: _Turn) -> ParsedTurn:
        parsed = turn.parser.finish()
        if parsed.session_id is not None and not is_valid_session_id(parsed.session_id):
            turn.emit(
                Lifecycle(
                    "session_id_refused",
                    f"the CLI named its session {parsed.session_id[:200]!r}, which is not a safe id",
                )
            )
            parsed = dataclasses.replace(parsed, session_id=None)
        return parsed

    def _per_turn_usage(
        self, emit: Callable[[AgentEvent], None], usage: list[ProviderUsage]
    ) -> Callable[[AgentEvent], None]:
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

    # -- closing ---------------------------------------------------------------------------

    def _release_process(self) -> None:
        with self._lock:
            channel, self._channel = self._channel, None
            self._control.clear()
        if channel is not None:
            channel.close(self._close_grace)

    def _shut_down(self) -> None:
        self._release_process()
        with self._lock:  # close() and the turn's own thread may both get here
            installation, self._mcp = self._mcp, None
        if installation is not None:
            note = installation.restore()
            if note:
                self._context.log(note)
