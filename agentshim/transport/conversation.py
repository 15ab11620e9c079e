"""The skeleton every conversation on one long-lived CLI process shares.

:class:`LongLivedConversation` is the part that does not depend on how the process is read:
one turn at a time; a stop before anything is sent is a TurnCancelledError with nothing run;
an interrupt marked once per turn and delivered in band; the turn's clock, the approvals it
answers and the failures its deadlines raise; shutting the process down when the
conversation closes, from whichever thread gets there last. A conversation read through a
terminal builds on it directly.

A transport whose process speaks lines on stdout subclasses :class:`ProcessConversation`
and supplies what its protocol says: how a turn goes out (``_run``), what a line of output
means (``_on_line``), which frame stops the running turn in band (``_interrupt_frame``) and,
through its :class:`LiveTurn`, when the turn is over. That skeleton adds the read loop on the
turn's own thread with its budget, stall window and kill after an unanswered interrupt;
steers reported on that thread; closing the process (stdin EOF, SIGTERM, SIGKILL).
"""

from __future__ import annotations

import shlex
import threading
from collections import deque
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypedDict, TypeVar

from agentshim.core import events
from agentshim.core import lifecycle_kinds as lk
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import ConversationSpec, TransportKind, TurnSlot, TurnStop
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
    TurnCancelledError,
    TurnStalledError,
)
from agentshim.core.events import AgentEvent, Emit, Lifecycle, RunStarted
from agentshim.core.failures import kind_from_text
from agentshim.core.ids import validate_session_id
from agentshim.core.mcp import McpServer
from agentshim.core.permissions import ApprovalPolicy
from agentshim.core.provider import (
    ArgvContext,
    McpInstallation,
    Provider,
    mcp_env,
    mcp_env_defaults,
)
from agentshim.core.sharing import ProcessSharing
from agentshim.core.turn import ParsedTurn, TurnRequest, TurnResult
from agentshim.core.usage import ProviderUsage
from agentshim.execution.executor import SideChannel
from agentshim.execution.process import (
    ProcessExited,
    ProcessOutput,
    SpawnRequest,
    StderrLine,
    StdoutLine,
)

from .approvals import Answer, answered, decide, decide_for_turn, requested
from .channel import Channel
from .correlator import Correlator, PendingRequest
from .fixed import refuse_fixed_changes
from .installed import InstalledCli, LazyCli
from .leftovers import TurnLeftovers
from .shared import PoolSlot, ProcessPool, SessionKey, prewarm_pool
from .warm import WarmIdle, WarmProcess
from .watch import Due, TurnWatch

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "LiveTurn",
    "LongLivedConversation",
    "ProcessConversation",
    "ProcessOptions",
    "ProcessTransport",
    "ServedSide",
    "SharingTransport",
    "shown_argv",
]

ProviderT = TypeVar("ProviderT", bound=Provider)

_NEVER = threading.Event()
"""The start-phase stop outside a turn's start: never set (nothing else may set it)."""


class ProcessOptions(TypedDict, total=False):
    """The keywords every long-lived transport takes, as :class:`ProcessTransport` has them.

    A transport with options of its own takes these as ``**options`` and passes them on, so
    their defaults are stated once.
    """

    turn_timeout: float | None
    start_timeout: float
    interrupt_grace: float
    close_grace: float


class ProcessTransport:
    """What every long-lived transport keeps: its CLI, a turn's default budget and its graces.

    ``context`` resolves the installed CLI (binary, env, executor) on first use.
    ``turn_timeout`` is the budget of a turn whose request sets none; ``start_timeout`` how
    long a request of a new process's start phase (its handshake, opening its session) may
    go unanswered before the process is killed; ``interrupt_grace`` how long an interrupted
    turn may take to end before its process is killed; ``close_grace`` how long each step of
    closing a process (stdin EOF, SIGTERM) is given.
    """

    kind = TransportKind.LONG_LIVED

    def __init__(
        self,
        context: InstalledCli | Callable[[], InstalledCli],
        *,
        turn_timeout: float | None = None,
        start_timeout: float = 60.0,
        interrupt_grace: float = 10.0,
        close_grace: float = 5.0,
    ) -> None:
        self._source = LazyCli(context)
        self.turn_timeout = turn_timeout
        self.start_timeout = start_timeout
        self.interrupt_grace = interrupt_grace
        self.close_grace = close_grace

    @property
    def context(self) -> InstalledCli:
        """The resolved CLI (found and checked on first use)."""
        return self._source.get()

    def _provider(self, expected: type[ProviderT], protocol: str) -> ProviderT:
        """The resolved CLI's provider, which must be an ``expected``: the CLI of ``protocol``.

        Raises:
            ProviderCapabilityError: it is another CLI.
        """
        provider = self.context.provider
        if not isinstance(provider, expected):
            name = provider.profile.display_name
            raise ProviderCapabilityError(
                f"this transport speaks {protocol}, which {name} does not; open it on an "
                "Agent of that CLI"
            )
        return provider


class SharingTransport(ProcessTransport):
    """A long-lived transport whose conversations may share processes (``sharing``).

    ``session_key`` finds the conversation a frame of its protocol names. :meth:`prewarm`
    starts processes ahead of conversations and :meth:`release_warm` ends them; a subclass
    supplies ``open``.
    """

    def __init__(
        self,
        context: InstalledCli | Callable[[], InstalledCli],
        *,
        sharing: ProcessSharing | None,
        session_key: SessionKey,
        **options: Unpack[ProcessOptions],
    ) -> None:
        super().__init__(context, **options)
        self.sharing = sharing
        self._pools = PoolSlot(session_key)

    def open(self, spec: ConversationSpec) -> Any:
        """Open a conversation on this transport."""
        raise NotImplementedError

    def pool(self) -> ProcessPool | None:
        """The processes its conversations share; None when they do not share."""
        return self._pools.get(self.sharing, self.context, close_grace=self.close_grace)

    def prewarm(self, count: int, spec: ConversationSpec, idle: WarmIdle | None = None) -> None:
        """Start ``count`` processes for conversations like ``spec`` and keep them warm.

        Each is started, handshaken and has opened one session (left for later ones) before
        this returns, so a new conversation's first turn starts without spawning. At most
        ``sharing.max_processes`` are started. With ``idle``, one that serves no conversation
        for ``idle.after`` seconds is ended.

        Raises:
            ProviderCapabilityError: the transport does not share processes.
            CliExitError / CliTimeoutError: a process could not be started.
        """
        prewarm_pool(self.pool(), lambda: self.open(spec), count, idle)

    def release_warm(self) -> None:
        """End the warm processes no conversation is on."""
        pool = self.pool()
        if pool is not None:
            pool.cool()


class ServedSide(SideChannel, Protocol):
    """What a conversation serves beside its process (its tools), closed with the process."""

    def close(self) -> None:
        """Stop serving and release what serving holds (a socket, say)."""
        ...


class LiveTurn:
    """What the reader knows of the turn in flight; each transport adds its protocol's state.

    ``emit`` delivers the turn's events (on the turn's thread only), ``watch`` is its clock,
    ``interrupted`` says an in-band stop went out (or is due), ``fail`` is a failure decided
    while reading that ends the turn once it is over, and ``steered`` holds the events of
    what other threads added to the turn, reported on the turn's thread at its next read.
    For a CLI that drops a stop sent before the turn's run begins, ``started`` says the run
    began and ``stop_due`` that a stop waits for it.
    """

    __slots__ = ("emit", "fail", "interrupted", "started", "steered", "stop_due", "watch")

    def __init__(self, emit: Emit, watch: TurnWatch) -> None:
        self.emit = emit
        self.watch = watch
        self.interrupted = False
        self.fail: AgentShimError | None = None
        self.steered: deque[AgentEvent] = deque()
        self.started = False
        self.stop_due = False

    @property
    def over(self) -> bool:
        """Nothing more of the turn's run is coming: no interrupt or steer can reach it."""
        raise NotImplementedError

    @property
    def done(self) -> bool:
        """The reader may stop reading (by default once the turn is over)."""
        return self.over

    def feed_stderr(self, text: str) -> None:
        """Hand a stderr line to whatever reads the turn (nothing, unless a transport says)."""


TurnT = TypeVar("TurnT", bound=LiveTurn)


class LongLivedConversation(Generic[TurnT]):
    """One conversation on one long-lived CLI process, however that process is read.

    ``transport`` gives the CLI, the default turn budget and the graces; ``name`` is what
    messages call the CLI. A subclass supplies ``_run`` (start the process when none runs,
    send the turn, read it to its end), ``_stop_in_band`` (how an interrupt reaches the
    process) and ``_shut_down``, and keeps ``_turn`` (under ``_lock``) while a turn is read.
    ``_unanswered`` is what the ``interrupt_unanswered`` event says before an interrupted
    turn's process is killed (``{grace}`` is its grace).
    """

    _unanswered = "no result {grace:g} s after the interrupt; killing the process"

    _start_waits_for_ready = False
    """Whether a stop during start-up first gives the CLI the interrupt grace to get ready
    (then it is stopped in band) before its process is killed: for a CLI whose start has no
    request to cut short (a terminal), where a kill costs a whole new start."""

    def __init__(self, transport: ProcessTransport, spec: ConversationSpec, *, name: str) -> None:
        if spec.resume_session_id is not None:
            validate_session_id(spec.resume_session_id)
        context = transport.context
        self._context = context
        self._spec = spec
        self._name = name
        self._clock = context.monotonic
        self._turn_timeout = transport.turn_timeout
        self._interrupt_grace = transport.interrupt_grace
        self._close_grace = transport.close_grace
        self._slot = TurnSlot(f"this {name} conversation")
        # Guards what other threads touch: the process, the request ids, the turn in flight.
        self._lock = threading.Lock()
        self._turn: TurnT | None = None
        self._session_id: str | None = spec.resume_session_id
        self._model = spec.model or context.model
        self._mcp: McpInstallation | None = None
        # The next process forks the resumed conversation: the spec's fork, until it exists.
        self._fork = spec.fork
        # The turn's stop or budget ended its start-up: a process spawned now is killed at once.
        self._start_ended = False
        # Set when the turn's stop or budget ends its start-up: what a start-phase wait stops on.
        self._start_stop: threading.Event = _NEVER
        # The start phase's stop or budget killed the starting process: the turn ends by it.
        self._start_killed = False
        # How the conversation's previous process ended, when a turn found it gone; the
        # turn that starts the next one resumes the conversation in it and says so.
        self._ended: str | None = None
        self._respawned = False
        # What a turn starts beside the CLI, ended when the turn is interrupted or fails.
        self._leftovers = TurnLeftovers()

    # -- the Conversation protocol -------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        """The conversation's id; None until the CLI names it."""
        return self._session_id

    def turn(self, request: TurnRequest, emit: Emit, stop: TurnStop | None = None) -> TurnResult:
        """Run one turn on the conversation's process; events go to ``emit`` on this thread.

        A stop requested before the turn begins raises TurnCancelledError with nothing sent.
        One requested while the CLI starts kills the starting process and the turn returns
        its result marked ``interrupted``, with nothing sent; one requested later stops the
        turn in band, and the turn returns its result marked ``interrupted`` (the process
        and the conversation stay). Each transport's class docstring lists the failures its
        protocol adds.

        Raises:
            SessionStateError: the conversation is closed, or a turn is already running.
            ProviderCapabilityError: the request asks for what a running process cannot
                change (an output schema, its own env, argv, cwd or MCP servers, ...).
            TurnCancelledError: stopped before the turn began.
            CliExitError: the process ended before it was ready (its exit code, stderr and
                the provider's kind for that stderr); SessionResumeError when it refused to
                resume or load the conversation.
            CliDiedError: the process ended mid-turn (the conversation is kept).
            CliTimeoutError / TurnStalledError: the turn overran its budget, or went silent.
        """
        turn_stop = self._slot.begin(stop)
        self._respawned = False
        self._leftovers.turn_begins()
        try:
            self._refuse(request)
            if turn_stop.is_set():
                raise TurnCancelledError(
                    "the turn was cancelled before it was sent; nothing ran and the "
                    "conversation is intact"
                )
            result = self._run_bounded(request, emit, turn_stop)
        except BaseException:
            self._end_leftovers(emit)
            raise
        else:
            if result.interrupted:
                self._end_leftovers(emit)
            return result
        finally:
            with self._lock:
                self._turn = None
            self._slot.end()
            if self._slot.closed:
                self._shut_down()

    def interrupt(self) -> None:
        """Stop the running turn in band (the process stays); nothing when idle."""
        self._slot.interrupt()

    def close(self) -> None:
        """End the process and release what the conversation installed for it."""
        self._slot.close()
        self._slot.interrupt()
        if self._slot.running:
            return  # the turn's own thread closes the process when its turn ends
        self._shut_down()

    # -- what a subclass supplies ----------------------------------------------------------

    def _refuse(self, request: TurnRequest) -> None:
        """Raise for what ``request`` asks that the running process cannot change."""
        refuse_fixed_changes(self._name, request, self._spec)

    def _run(self, request: TurnRequest, emit: Emit, stop: TurnStop) -> TurnResult:
        """Send the turn and read it to its end."""
        raise NotImplementedError

    def _stop_in_band(self, turn: TurnT, now: float) -> Callable[[], None] | None:
        """What stops ``turn``, interrupted at ``now``, once the lock is released.

        Called under the lock; None when no process runs (nothing is marked then).
        """
        raise NotImplementedError

    def _release_process(self) -> None:
        """End the running process, if one runs (any thread)."""
        raise NotImplementedError

    def _starting_process(self) -> tuple[tuple[str, ...], Callable[[], None]] | None:
        """The argv of the process that is starting, and what kills it (any thread).

        Used when the turn's stop or budget comes while no turn is in flight yet; once it is
        killed, the start-up's own read meets the exit. None when no process was started yet.
        """
        raise NotImplementedError

    # -- starting ----------------------------------------------------------------------------

    def _run_bounded(self, request: TurnRequest, emit: Emit, stop: TurnStop) -> TurnResult:
        """Run the turn; until it is in flight, its stop and its budget end a CLI that starts.

        The start phase (spawn, handshake, session open or load, a model switch) is cut
        short by the turn's stop at once (after the interrupt grace, for a CLI that
        :attr:`_start_waits_for_ready`): the starting process is killed and the turn returns
        its result marked ``interrupted``, as a turn stopped in flight does (nothing was
        sent). The turn's timeout kills it too (CliTimeoutError naming the command that
        was run). Either sets :attr:`_start_stop`, which a wait of the start phase that reads
        no process (a deferred load) waits on, and which a request of the start phase not
        yet sent meets (:meth:`ProcessConversation._call`). A process that is ready and
        waits for nothing is left alone: the turn's own watch takes the stop or the budget
        once the turn is in flight. Timers, not polling: each fires once, and does nothing
        once the turn is in flight.
        """
        started, resumed = self._clock(), self._resumes
        why: list[str] = []
        argv: list[tuple[str, ...]] = []
        timers: list[threading.Timer] = []
        over = threading.Event()  # the run is left: no timer may act any more
        start_stop = threading.Event()

        def end(reason: str) -> None:
            with self._lock:
                if self._turn is not None or why or over.is_set():
                    return
                why.append(reason)
                self._start_ended = True
            start_stop.set()
            starting = self._starting_process()
            if starting is not None:
                argv.append(starting[0])  # before the kill: the turn's thread then reads it
                self._start_killed = True
                starting[1]()

        def after(seconds: float, reason: str) -> None:
            timer = threading.Timer(seconds, end, args=(reason,))
            timer.daemon = True
            with self._lock:
                if over.is_set():
                    return
                timers.append(timer)
            timer.start()

        timeout = self._timeout(request)
        if timeout is not None:
            after(timeout, "timeout")
        self._start_stop, self._start_killed = start_stop, False
        # On a timer of its own: the kill waits for the process, the caller of interrupt() not.
        grace = self._interrupt_grace if self._start_waits_for_ready else 0.0
        detach = stop.attach(lambda: after(grace, "stop"))
        try:
            return self._run(request, emit, stop)
        except AgentShimError as error:
            if not (why and self._start_killed):
                raise
            self._release_process()
            if why[0] == "stop":
                emit(events.TurnInterrupted("interrupted while the CLI was starting"))
                return self._turn_result(
                    "", None, started=started, resumed=resumed, interrupted=True
                )
            ran = shown_argv(argv[0]) if argv else f"the {self._name} CLI"
            raise CliTimeoutError(
                argv[0] if argv else (),
                timeout,
                message=f"{ran} was not ready within the turn's timeout of {timeout:g} s and "
                "was killed; raise the timeout, or check that the command starts by hand",
            ) from error
        finally:
            detach()
            with self._lock:
                over.set()
                self._start_ended = False
            self._start_stop, self._start_killed = _NEVER, False
            for timer in timers:
                timer.cancel()

    # -- what a process starts with ---------------------------------------------------------

    @property
    def _resumes(self) -> bool:
        """Whether the next turn continues a conversation the CLI already has (not a fork)."""
        return self._session_id is not None and not self._fork

    def _argv_context(
        self, mcp_argv: Sequence[str], *, cwd: str | None = None, fork_session: bool = False
    ) -> ArgvContext:
        """The conversation as its next process starts it (in ``cwd``, default the spec's)."""
        context, spec = self._context, self._spec
        return ArgvContext(
            binary_path=context.binary_path,
            model=self._model,
            env=context.env,
            resume_session_id=self._session_id,
            reasoning_effort=spec.reasoning_effort,
            mcp_argv=tuple(mcp_argv),
            cwd=spec.cwd if cwd is None else cwd,
            fork_session=fork_session,
        )

    def _install_mcp(self, servers: Sequence[McpServer]) -> tuple[str, ...]:
        """Install ``servers`` for the conversation once (restored when it closes); the argv.

        The argv is what the CLI is started with to find them (empty without servers).
        """
        if self._mcp is None and servers:
            workspace = Path(self._spec.cwd) if self._spec.cwd is not None else None
            self._mcp = self._context.provider.install_mcp(workspace, servers)
        return tuple(self._mcp.argv) if self._mcp is not None else ()

    def _add_mcp_env(self, env: dict[str, str]) -> None:
        """Put what the installed MCP servers need into ``env`` (their defaults where unset)."""
        if self._mcp is None:
            return
        for name, value in mcp_env_defaults(self._mcp).items():
            env.setdefault(name, value)
        env.update(mcp_env(self._mcp))

    def _end_leftovers(self, emit: Emit) -> None:
        """End what the turn started beside the CLI and left running (interrupted, failed)."""
        ended = self._leftovers.end()
        if ended:
            emit(
                Lifecycle(
                    lk.COMMANDS_ENDED, f"{ended} process(es) the turn started were still running"
                )
            )

    def _process_ended(self, exit_status: ProcessExited | None) -> None:
        """A turn found the conversation's process gone (``exit_status``: how, if read).

        The next process resumes the conversation by id, and :meth:`_announce_respawn`
        reports it when it starts.
        """
        code = "" if exit_status is None else f" (exit status {exit_status.returncode})"
        self._ended = f"the {self._name} process had ended{code}"

    def _announce_respawn(self, emit: Emit) -> None:
        """Report that the starting process replaces one that ended, if it does."""
        ended, self._ended = self._ended, None
        if ended is None or self._session_id is None or self._fork:
            return
        self._respawned = True
        emit(
            Lifecycle(
                lk.PROCESS_RESPAWNED,
                f"{ended}; a new one resumes conversation {self._session_id}",
            )
        )

    def _shut_down(self) -> None:
        """Release the process and restore what the conversation installed for it."""
        self._release_process()
        with self._lock:  # close() and the turn's own thread may both get here
            installation, self._mcp = self._mcp, None
        if installation is not None:
            note = installation.restore()
            if note:
                self._context.log(note)

    # -- the turn --------------------------------------------------------------------------

    def _watch(self, request: TurnRequest, started: float) -> TurnWatch:
        """The clock of a turn begun at ``started``: its own budget, else the transport's."""
        return TurnWatch(
            started, timeout=self._timeout(request), stall_timeout=self._spec.stall_timeout
        )

    def _timeout(self, request: TurnRequest) -> float | None:
        return request.timeout if request.timeout is not None else self._turn_timeout

    @contextmanager
    def _stoppable(self, stop: TurnStop) -> Generator[None, None, None]:
        """While the block reads the turn in flight, ``stop`` interrupts it from any thread."""
        detach = stop.attach(lambda: self._interrupt_turn(None))
        try:
            yield
        finally:
            detach()

    def _act_on_due(self, turn: TurnT, now: float) -> bool:
        """Interrupt ``turn`` when its budget or stall window ran out at ``now``.

        True when its interrupt went unanswered past the grace: the ``interrupt_unanswered``
        event is out and the caller kills the process.
        """
        due = turn.watch.due(now)
        if due is Due.TIMEOUT or due is Due.STALL:
            self._interrupt_turn(due)
        elif due is Due.KILL:
            note = self._unanswered.format(grace=self._interrupt_grace)
            turn.emit(Lifecycle(lk.INTERRUPT_UNANSWERED, note))
            return True
        return False

    def _interrupt_turn(self, reason: Due | None) -> None:
        """Stop the running turn in band (any thread; once per turn).

        ``reason`` is the deadline that asked for it (None: the caller did).
        """
        with self._lock:
            turn = self._turn
            if turn is None or turn.over:
                return
            if turn.interrupted:
                if reason is not None and turn.watch.reason is None:
                    turn.watch.reason = reason
                return
            now = self._clock()
            deliver = self._stop_in_band(turn, now)
            if deliver is None:
                return
            turn.interrupted = True
            turn.watch.interrupted(now, self._interrupt_grace, reason)
        deliver()

    # -- approvals ---------------------------------------------------------------------------

    def _decide(self, turn: TurnT, request: ApprovalRequest) -> Answer:
        """Report ``request`` and decide it from the conversation's approvals, fail closed."""
        turn.emit(requested(request))
        return decide_for_turn(
            self._spec.approvals,
            self._spec.permissions,
            request,
            interrupted=turn.interrupted,
            timeout=self._spec.approval_timeout,
            monotonic=self._clock,
        )

    def _tool_approvals(self, turn: TurnT) -> Callable[[ApprovalRequest], ApprovalDecision] | None:
        """How the tools' socket asks ``turn``'s approvals before a Python tool runs.

        None when the approvals are an ApprovalPolicy: a policy answers the CLI's own
        permission requests, and Python tools run as they always have. With a handler, every
        call that reaches the socket, from the CLI or around it, is asked and reported; a turn
        being interrupted denies without asking. Read-only permissions do not deny it.
        """
        approvals = self._spec.approvals
        if isinstance(approvals, ApprovalPolicy):
            return None

        def approve(request: ApprovalRequest) -> ApprovalDecision:
            turn.emit(requested(request))
            if turn.interrupted:
                answer = Answer(
                    ApprovalDecision.deny("the turn is being interrupted"), "interrupted"
                )
            else:
                # Not decide_for_turn: read-only permissions bound the CLI's own tools; a Python
                # tool is the caller's code, and the handler decides it.
                answer = decide(
                    approvals, request, timeout=self._spec.approval_timeout, monotonic=self._clock
                )
            self._approval_sent(turn, request, answer)
            return answer.decision

        return approve

    def _approval_sent(self, turn: TurnT, request: ApprovalRequest, answer: Answer) -> None:
        """Report the answer sent for ``request``; one that fails the turn interrupts it."""
        turn.emit(answered(request, answer.decision, answer.decided_by))
        if answer.fail_turn and turn.fail is None:
            turn.fail = ApprovalRequiredError(request.tool, request.tool_id)
            self._interrupt_turn(None)

    # -- the result ------------------------------------------------------------------------

    def _raise_for_reading(
        self, turn: TurnT, argv: tuple[str, ...], partial: ParsedTurn | None = None
    ) -> None:
        """Raise what ended the turn while it was read: its budget, its silence, or ``fail``.

        ``fail`` is a failure decided while reading (an approval that fails the turn).
        """
        reason = turn.watch.reason
        if reason is Due.STALL:
            raise TurnStalledError(self._spec.stall_timeout, turn.watch.stalled_for)
        if reason is Due.TIMEOUT:
            raise CliTimeoutError(argv, turn.watch.timeout, partial)
        if turn.fail is not None:
            raise turn.fail

    def _turn_result(
        self,
        text: str,
        usage: ProviderUsage | None,
        *,
        started: float,
        resumed: bool,
        interrupted: bool,
        **more: Any,
    ) -> TurnResult:
        """The result of a turn that ended; usage it did not report is marked unknown."""
        if usage is None:
            usage = ProviderUsage(
                provider=self._context.provider.profile.name, increment_known=False
            )
        if more.get("context_window") is None:
            # What the CLI did not report, the catalogue may know (never a guess).
            more["context_window"] = self._context.context_window(usage.model or self._model)
        return TurnResult(
            text=text,
            structured_output=None,
            session_id=self._session_id,
            resumed=resumed,
            usage=usage,
            cost_usd=usage.total_cost_usd,
            duration_ms=int((self._clock() - started) * 1000),
            exit_code=0,
            interrupted=interrupted,
            respawned=self._respawned,
            **more,
        )


class ProcessConversation(LongLivedConversation[TurnT]):
    """One conversation on one long-lived CLI process read through a :class:`Channel`.

    The process starts with the first turn (the subclass's ``_run`` calls
    :meth:`_start_process`) and is kept across turns; a turn that finds it dead starts
    another.
    """

    def __init__(self, transport: ProcessTransport, spec: ConversationSpec, *, name: str) -> None:
        super().__init__(transport, spec, name=name)
        self._channel: Channel | None = None
        self._side: ServedSide | None = None
        self._requests = Correlator("agentshim")
        self._stderr: deque[str] = deque(maxlen=200)
        # How long a request of the start phase may go unanswered (the transport's).
        self._start_timeout = transport.start_timeout
        # A request of the start phase waits for its answer: the turn's stop or budget kills
        # the process then (see _run_bounded).
        self._calling = False

    # -- what a transport supplies ---------------------------------------------------------

    def _on_line(self, channel: Channel, turn: TurnT, line: str) -> None:
        """Act on one line of the CLI's stdout during ``turn``."""
        raise NotImplementedError

    def _interrupt_frame(self, turn: TurnT) -> Mapping[str, Any]:
        """The frame that stops ``turn`` in band (called without the lock held)."""
        raise NotImplementedError

    def _answer_of(self, channel: Channel, pending: PendingRequest, line: str, emit: Emit) -> Any:
        """What ``line`` answers ``pending`` with (start phase); None after setting it aside.

        A line that is no answer to ``pending`` (a notice, a late answer, a request of the
        CLI's) is handled as :meth:`_between_turns` would.
        """
        raise NotImplementedError

    def _between_turns(self, channel: Channel, line: str, emit: Emit) -> float:
        """Act on a line the CLI printed while no turn was in flight.

        Returns how many seconds more the drain before a turn waits for the CLI's next line
        (0: only what is already there).
        """
        raise NotImplementedError

    def _before_turn(self, channel: Channel, request: TurnRequest, emit: Emit) -> None:
        """What the start phase does on a ready process before the turn goes out.

        By default: drain what the CLI said since the last turn, then switch to the
        request's model when it names another (:meth:`_switch_model`).
        """
        self._drain_between_turns(channel, emit)
        if request.model is not None and request.model != self._model:
            self._switch_model(channel, request.model, emit)

    def _switch_model(self, channel: Channel, model: str, emit: Emit) -> None:
        """Switch the running process to ``model`` (a :meth:`_call`), before the turn."""
        raise NotImplementedError

    def _new_turn(self, request: TurnRequest, emit: Emit, watch: TurnWatch, resumed: bool) -> TurnT:
        """The state of the turn about to go out (its parser, its reader)."""
        raise NotImplementedError

    def _turn_frame(self, turn: TurnT, request: TurnRequest) -> Mapping[str, Any]:
        """The frame that sends ``request``'s prompt as ``turn``."""
        raise NotImplementedError

    def _conclude(
        self, channel: Channel, turn: TurnT, request: TurnRequest, resumed: bool, started: float
    ) -> TurnResult:
        """The result of ``turn`` once it was read to its end (or the failure that ended it)."""
        raise NotImplementedError

    _forks_count_as_resumed = False
    """Whether the first turn of a fork reports ``resumed`` (the conversation it forks)."""

    _start_command = "the CLI"
    """What messages call the command when the channel has no argv to show."""

    _stop_waits_for_start = False
    """Whether a stop that comes before the turn's run began waits for :meth:`_run_began`
    (for a CLI that would drop it then)."""

    # -- the turn --------------------------------------------------------------------------

    def _run(self, request: TurnRequest, emit: Emit, stop: TurnStop) -> TurnResult:
        """One turn: the process made ready, the start phase's last steps, the turn read.

        The transport supplies the steps: :meth:`_before_turn`, :meth:`_new_turn`,
        :meth:`_turn_frame` and :meth:`_conclude`.
        """
        started = self._clock()
        resumed = self._session_id is not None if self._forks_count_as_resumed else self._resumes
        channel = self._ensure_process(emit)
        self._before_turn(channel, request, emit)
        turn = self._new_turn(request, emit, self._watch(request, started), resumed)
        self._send_and_read(channel, turn, self._turn_frame(turn, request), stop)
        return self._conclude(channel, turn, request, resumed, started)

    def _add_to_turn(
        self, kind: str, text: str, event: str, frame: Callable[[TurnT], Mapping[str, Any] | None]
    ) -> None:
        """Send ``text`` into the running turn (``kind`` is the caller's verb, ``steer``).

        ``frame`` builds what goes out, under the lock, from the running turn (None: the
        turn cannot take it now); ``Lifecycle(event, text)`` reports it on the turn's thread.

        Raises:
            NoRunningTurnError: no turn is running (or it cannot take the text now).
            InvalidRequestError: ``text`` is empty.
        """
        if not isinstance(text, str) or not text.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                f"{kind}.text", f"{text!r:.40} is empty", f"{kind}() needs some text"
            )
        with self._lock:
            turn, channel = self._turn, self._channel
            out = None if turn is None or channel is None or turn.over else frame(turn)
            if turn is None or channel is None or out is None:
                raise NoRunningTurnError("no turn is running; send the text as a new turn")
            try:
                channel.send(out)
            except ProcessClosedError:
                raise NoRunningTurnError(
                    "the turn's process has ended; send the text as a new turn"
                ) from None
            turn.steered.append(Lifecycle(event, text))
            channel.wake()

    def _send_and_read(
        self, channel: Channel, turn: TurnT, frame: Mapping[str, Any], stop: TurnStop
    ) -> None:
        """Make ``turn`` the one in flight, send ``frame`` and read until the turn is done.

        ``stop`` interrupts the turn in band from any thread while it is read.
        """
        with self._lock:
            self._turn = turn
        self._leftovers.turn_sent()
        self._send(channel, frame)
        with self._stoppable(stop):
            self._read_turn(channel, turn)

    def _call(
        self,
        channel: Channel,
        subtype: str,
        frame: Callable[[PendingRequest], Mapping[str, Any]],
        emit: Emit,
        *,
        deadline: float | None = None,
    ) -> Any:
        """Send our request ``subtype`` (``frame`` builds it) and read until it is answered.

        Every line is handed to :meth:`_answer_of`, which sets aside (or refuses) what is
        not the answer. ``deadline`` (default: the transport's ``start_timeout`` from now)
        bounds the wait; the turn's stop, budget and stall window end it sooner.

        Raises:
            CliTimeoutError: no answer by ``deadline`` (the process is killed).
            CliExitError / SessionResumeError: the process ended first (:meth:`_start_died`).
            TurnStalledError: the CLI was silent for the conversation's stall window.
        """
        sent = self._clock()
        if deadline is None:
            deadline = sent + self._start_timeout
        pending = self._issue(subtype, deadline)
        with self._lock:
            self._calling = True
        try:
            if self._start_stop.is_set():
                # The turn was stopped (or ran out) while the process was ready: it goes now.
                self._start_killed = True
                channel.kill()
            self._send(channel, frame(pending))
            heard = sent
            while True:
                output = self._start_read(channel, deadline, heard)
                if output is None:
                    # A caller's deadline is the start timeout from when its process started.
                    raise self._start_unanswered(
                        channel, self._start_timeout, subtype, self._start_command
                    )
                if isinstance(output, ProcessExited):
                    raise self._start_died(channel, output, subtype, emit)
                heard = self._clock()
                if isinstance(output, StderrLine):
                    self._stderr.append(output.text)
                    continue
                answer = self._answer_of(channel, pending, output.text, emit)
                if answer is not None:
                    return answer
        finally:
            with self._lock:
                self._calling = False

    def _start_read(self, channel: Channel, deadline: float, heard: float) -> ProcessOutput | None:
        """The next output of a process that is starting; None at ``deadline``.

        A wake (another thread's) does not end the wait; the turn's stop and budget end it by
        killing the process, whose exit is read next. The CLI silent for the stall window
        since ``heard`` kills it and raises TurnStalledError.
        """
        stall = self._spec.stall_timeout
        while True:
            stalls_at = None if stall is None else heard + stall
            until = deadline if stalls_at is None else min(deadline, stalls_at)
            output = channel.read(until)
            if output is not None:
                return output
            now = self._clock()
            if stalls_at is not None and now >= stalls_at and stalls_at <= deadline:
                channel.kill()
                self._release_process()
                raise TurnStalledError(stall, now - heard)
            if now >= deadline:
                return None

    def _drain_between_turns(
        self,
        channel: Channel,
        emit: Emit,
        *,
        settle: float = 0.0,
        deadline: float | None = None,
        until: Callable[[], bool] | None = None,
    ) -> None:
        """Take what the CLI printed since the last turn, before this one goes out.

        Each line goes to :meth:`_between_turns`; the drain ends when nothing more comes
        within ``settle`` seconds (or the time the last line asked for), at ``deadline``, as
        soon as ``until()`` holds, or at the process's exit (which the turn's read meets and
        reports).
        """
        wait = settle
        while until is None or not until():
            quiet_at = self._clock() + wait
            output = channel.read(quiet_at if deadline is None else min(quiet_at, deadline))
            if output is None or isinstance(output, ProcessExited):
                return
            if isinstance(output, StderrLine):
                self._stderr.append(output.text)
                continue
            wait = max(settle, self._between_turns(channel, output.text, emit))

    def _issue(self, subtype: str, deadline: float | None) -> PendingRequest:
        """A new id for our request ``subtype``, to be answered by ``deadline`` (any thread)."""
        with self._lock:
            return self._requests.issue(subtype, deadline)

    def _run_began(self, channel: Channel, turn: TurnT) -> None:
        """The CLI began ``turn``'s run: a stop that waited for it goes out now."""
        with self._lock:
            turn.started = True
            due, turn.stop_due = turn.stop_due, False
        if due:
            self._send(channel, self._interrupt_frame(turn))

    def _send(self, channel: Channel, frame: Mapping[str, Any]) -> None:
        """Write ``frame``; a process that has ended is met and reported by the reader."""
        try:
            channel.send(frame)
        except ProcessClosedError:
            pass

    def _read_turn(self, channel: Channel, turn: TurnT) -> None:
        watch, clock = turn.watch, self._clock
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
                turn.feed_stderr(output.text)
            else:
                return

    def _report_steers(self, turn: TurnT) -> None:
        with self._lock:
            steered = list(turn.steered)
            turn.steered.clear()
        for event in steered:
            turn.emit(event)

    def _on_quiet(self, channel: Channel, turn: TurnT, now: float) -> None:
        if self._act_on_due(turn, now):
            channel.kill()
            self._drain_exit(channel, turn)

    def _drain_exit(self, channel: Channel, turn: TurnT) -> None:
        """Read what a killed process still printed, up to its exit."""
        while True:
            output = channel.read(self._clock() + self._close_grace)
            if output is None or isinstance(output, ProcessExited):
                return
            if isinstance(output, StdoutLine):
                self._on_line(channel, turn, output.text)
            else:
                self._stderr.append(output.text)
                turn.feed_stderr(output.text)

    def _answer_approval(
        self, channel: Channel, turn: TurnT, request: ApprovalRequest, answer: Answer, frame: Any
    ) -> None:
        """Send ``frame``, the CLI's answer to ``request``, and report it as sent.

        An answer that cannot go out costs an ``approval_not_sent`` notice, not the turn.
        """
        try:
            channel.send(frame)
        except (ProcessClosedError, InvalidRequestError) as error:
            turn.emit(Lifecycle(lk.APPROVAL_NOT_SENT, str(error)))
        self._approval_sent(turn, request, answer)

    def _stop_in_band(self, turn: TurnT, now: float) -> Callable[[], None] | None:
        channel = self._channel
        if channel is None:
            return None
        deferred = self._stop_waits_for_start and not turn.started
        if deferred:
            turn.stop_due = True

        def deliver() -> None:
            if not deferred:
                self._send(channel, self._interrupt_frame(turn))
            channel.wake()

        return deliver

    # -- the result ------------------------------------------------------------------------

    def _died(
        self, exit_status: ProcessExited, kind: FailureKind = FailureKind.OTHER
    ) -> CliDiedError:
        """The failure of a turn whose process ended before the turn did."""
        return CliDiedError(
            session_id=self._session_id,
            returncode=exit_status.returncode,
            stderr="".join(self._stderr),
            kind=kind,
        )

    def _refused(
        self, channel: Channel, detail: str, kind: FailureKind = FailureKind.OTHER
    ) -> CliExitError:
        """The failure of something the CLI refused (``detail`` says what and why)."""
        return CliExitError(channel.argv, 1, stderr="".join(self._stderr), kind=kind, detail=detail)

    def _start_died(
        self, channel: Channel, exit_status: ProcessExited, what: str, emit: Emit
    ) -> AgentShimError:
        """The failure of a process that ended before it answered ``what``; it is released.

        A CliExitError with its exit code and stderr tail, of the kind the provider's own
        classifier gives that stderr (as the one-shot door does); SessionResumeError when
        the provider reads it as a refusal to resume the conversation.
        """
        emit(events.RunFinished(exit_status.returncode))
        self._release_process()
        stderr = "".join(self._stderr)
        error = CliExitError(
            channel.argv,
            exit_status.returncode,
            stderr=stderr,
            kind=kind_from_text(stderr) or FailureKind.OTHER,
            detail=f"{self._name} exited before answering {what}",
        )
        # A fork names the session it forks: a refusal of that id is a refused resume too.
        resumed = self._session_id is not None
        return self._context.provider.classify_exit(error, resumed=resumed)

    def _start_unanswered(
        self, channel: Channel, seconds: float, what: str, command: str
    ) -> CliTimeoutError:
        """Kill a new process that left ``what`` unanswered for ``seconds``; the failure says so.

        The failure names the command that was actually run (a wrapper, a stand-in), which
        is how a user checks by hand that it starts; ``command`` is what the CLI is called.
        """
        channel.kill()
        self._release_process()
        ran = shown_argv(channel.argv) if channel.argv else command
        return CliTimeoutError(
            channel.argv,
            seconds,
            message=f"{ran} did not answer {what} within {seconds:g} s of starting; it was "
            f"killed (check that it starts by hand)",
        )

    # -- the process -----------------------------------------------------------------------

    def _live_channel(self) -> Channel | None:
        """The running process's channel; None (after releasing a dead one) when it ended.

        Looked at before anything of the turn is written, so a process that died while the
        conversation was idle is replaced, and the conversation resumed in the new one,
        rather than failing a turn that never reached it.
        """
        channel = self._channel
        if channel is None:
            return None
        ended = channel.ended()
        if ended is None:
            return channel
        self._process_ended(ended)
        self._release_process()
        return None

    def _ensure_process(self, emit: Emit) -> Channel:
        """The conversation's process, ready: the running one, else one opened now.

        A process that died while the conversation was idle is replaced (the conversation
        resumed in the new one). A process that fails to open is released.
        """
        channel = self._live_channel()
        if channel is not None:
            return channel
        try:
            return self._open_process(emit)
        except BaseException:
            self._release_process()
            raise

    def _open_process(self, emit: Emit) -> Channel:
        """Start (or join) a process and make it ready: the handshake, the session open.

        Each transport supplies it from :meth:`_start_process` (or :meth:`_adopt_channel`)
        and :meth:`_call`.
        """
        raise NotImplementedError

    def _start_process(
        self,
        argv: list[str],
        env: dict[str, str],
        emit: Emit,
        *,
        side: ServedSide | None = None,
    ) -> Channel:
        """Spawn ``argv`` in the conversation's cwd and make it the conversation's process.

        ``side`` (the conversation's tools) is served by every read of its channel and
        closed with the process (also when it cannot be spawned: release it then).
        """
        self._side = side
        self._announce_respawn(emit)
        served = getattr(side, "server", None)
        self._leftovers.mark(
            env, (*self._spec.mcp_servers, *([served] if isinstance(served, McpServer) else []))
        )
        emit(RunStarted(tuple(argv)))
        process = self._context.executor.spawn(SpawnRequest(argv, cwd=self._spec.cwd, env=env))
        self._leftovers.started(getattr(process, "pid", None))
        channel = Channel(process, argv, monotonic=self._clock, side=side)
        with self._lock:
            self._channel = channel
            self._requests.clear()
            ended = self._start_ended
        self._stderr.clear()
        if ended:  # the turn was stopped, or ran out of time, while the process was spawned
            self._start_killed = True
            channel.kill()
        return channel

    def _starting_process(self) -> tuple[tuple[str, ...], Callable[[], None]] | None:
        """The channel's process while a request of the start phase waits for its answer.

        None otherwise: a process being spawned is killed as the spawn returns, the next
        request of the start phase meets the stop before it is sent (:meth:`_call`), and a
        process that is ready gets the stop in band once the turn is in flight.
        """
        with self._lock:
            channel = self._channel
            waiting = self._calling
        return None if channel is None or not waiting else (channel.argv, channel.kill)

    def _adopt_warm(self, warm: WarmProcess, argv: list[str], emit: Emit) -> Channel:
        """Make ``warm``, a process started ahead for it, the conversation's process.

        Its leftovers marker becomes the conversation's (its tools' processes carry it).
        """
        self._announce_respawn(emit)
        emit(RunStarted(tuple(argv)))
        self._leftovers.adopt(warm.marker, getattr(warm.process, "pid", None))
        channel = Channel(warm.process, argv, monotonic=self._clock)
        self._adopt_channel(channel)
        return channel

    def _adopt_channel(self, channel: Channel) -> None:
        """Make ``channel`` (on a process shared with other conversations) the conversation's."""
        with self._lock:
            self._channel = channel
            self._requests.clear()
        self._stderr.clear()

    def _release_process(self) -> None:
        """Close the channel's process: stdin EOF, then SIGTERM, then SIGKILL to its group.

        What it served beside the process stops then too (its socket goes with it).
        """
        with self._lock:
            channel, self._channel = self._channel, None
            self._requests.clear()
        try:
            if channel is not None:
                channel.close(self._close_grace)
        finally:
            side, self._side = self._side, None
            if side is not None:
                side.close()


def shown_argv(argv: Sequence[str], limit: int = 300) -> str:
    """``argv`` as a shell would take it, cut to ``limit`` characters: how messages name a command."""
    text = shlex.join(argv)
    return text if len(text) <= limit else text[: limit - 3] + "..."
