"""Session: one logical conversation with an agent, kept alive across failures and restarts.

A :class:`Session` is the interpreter of the pure :class:`~agentshim.core.session_policy.SessionPolicy`:
it feeds the policy what happened (with clock readings from the injected clock) and carries
out the commands it gets back: open a conversation on the transport, run the turn, wait before
a retry, save or clear the checkpoint. All recovery decisions live in the policy.

Threading: a session runs one turn at a time, on the thread that calls :meth:`Session.turn`,
and delivers every event on that thread. :meth:`Session.interrupt`, :meth:`Session.steer` and
:meth:`Session.close` may be called from any thread; everything else belongs to the thread
that owns the session.
"""

from __future__ import annotations

import hashlib
import random
import threading
from collections import deque
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from agentshim.core._checks import instance, seconds
from agentshim.core.clock import Clock, SystemClock
from agentshim.core.conversation import (
    ConfigurableConversation,
    Conversation,
    ConversationSpec,
    SteerableConversation,
    Transport,
    TransportKind,
    TurnStop,
)
from agentshim.core.errors import (
    AgentShimError,
    ContinuityError,
    InvalidRequestError,
    LeaseLostError,
    NoRunningTurnError,
    ProviderCapabilityError,
    SessionStateError,
    SpendingLimitError,
    TurnCancelledError,
    TurnFailedError,
    UnknownProviderError,
)
from agentshim.core.events import (
    AgentEvent,
    Emit,
    EventSink,
    Lifecycle,
    UsageReport,
    event_callback,
    event_callbacks,
)
from agentshim.core.ids import IdAllocator, RandomIds, validate_session_id
from agentshim.core.limits import Crossing, Spend, SpendingLimits, SpendingMeter
from agentshim.core.portability import ConversationPorter
from agentshim.core.pricing import PricingTable
from agentshim.core.session_policy import (
    Abort,
    Adopt,
    Cancelled,
    ClearCheckpoint,
    Close,
    CloseConversation,
    Command,
    Continuity,
    Event,
    ExecuteTurn,
    Failed,
    FailTurn,
    FinishTurn,
    Notify,
    OpenConversation,
    Opened,
    Phase,
    PolicyState,
    Prepare,
    Refusal,
    RefuseTurn,
    Release,
    Resync,
    SaveCheckpoint,
    SessionPolicy,
    Start,
    Succeeded,
    WaitBeforeRetry,
    Waited,
    classify_failure,
)
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.core.usage import ProviderUsage
from agentshim.idle import IdleHousekeeper
from agentshim.otel import Tracing, TurnTrace
from agentshim.pricing import pricing_table
from agentshim.state.checkpoints import (
    Checkpoint,
    CheckpointStore,
    ConversationBlobs,
    validate_checkpoint_key,
)
from agentshim.state.leases import (
    ConversationLeases,
    LeaseHolder,
    LeaseKeeper,
    TurnLease,
    conversation_key,
    kept_leases,
)
from agentshim.transport.installed import ignore_log_line

__all__ = ["Continuity", "Session", "Turn", "TurnTicket"]

_IN_TURN = (Phase.OPENING, Phase.EXECUTING, Phase.WAITING)
_REQUEST_HINT = "a TurnRequest or a prompt string"


@dataclass(frozen=True, slots=True, eq=False)
class TurnTicket:
    """A reserved, named turn: journal ``turn_id`` before running it with ``Session.turn``.

    A ticket runs at most once, and only while it is the session's newest ticket.
    """

    turn_id: str
    request: TurnRequest
    expect_session_id: str | None = None
    pin: bool = False


@dataclass(frozen=True, slots=True)
class Turn:
    """A completed turn: its result, how it relates to the session's conversation, its ids.

    ``session_id`` is the provider conversation the turn ran in (after a renewal retired
    it, the session itself no longer holds it).
    """

    result: TurnResult
    continuity: Continuity
    turn_id: str
    session_id: str | None


class Session:
    """One logical conversation with an agent, kept alive by the recovery policy.

    ``spec`` fixes the conversation's cwd, model, permissions and approvals. Given a
    ``checkpoints`` store and a ``checkpoint_key``, the session resumes the conversation saved
    under the key (an explicit ``spec.resume_session_id`` wins) and saves the conversation it
    holds after every change. ``leases`` (which an Agent shares among its sessions) keeps
    two turns from running in one conversation at the same time, in this process or, with a
    shared implementation such as ``SqliteStore``, in any: a session with a checkpoint key
    leases the key for the whole turn and first reads the checkpoint again, so it continues
    wherever another process left the conversation; one without leases the provider
    conversation for each attempt (None: turns are not serialized; an Agent always gives its
    own in-process leases at least). A lease lives ``lease_ttl`` seconds
    and is renewed while the turn runs; a turn that cannot get it within ``lease_timeout``
    seconds (None: waits until it comes free) raises LeaseTimeoutError with nothing run. Each
    of ``event_handlers`` is an AgentEventHandler or a plain function of one event.

    ``limits`` bound what each turn and the whole session may spend (``docs/sessions.md``):
    a turn whose live usage crosses a limit is interrupted and raises SpendingLimitError, and
    a session at a session limit refuses the next turn before it starts. ``tracing`` (from
    :mod:`agentshim.otel`) traces every turn as an OpenTelemetry span.
    With a ``porter`` and a store that keeps blobs (``ConversationBlobs``) the conversation
    moves between hosts: after each turn (and when the conversation is closed or released)
    its CLI files are exported and saved beside the checkpoint, and before a turn the saved
    files are imported when they are not the ones this session left, so the CLI resumes on
    any host; such a turn reports ``Continuity.IMPORTED``. A worker that lost its lease
    mid-turn has its turn stopped and its writes refused: the turn raises LeaseLostError.
    Given an ``idle_housekeeper`` (an Agent shares one among its sessions), a policy's
    ``idle_release_after`` closes the conversation's process as soon as it is due, not when
    the next turn is prepared.
    """

    def __init__(
        self,
        transport: Transport,
        spec: ConversationSpec,
        *,
        policy: SessionPolicy | None = None,
        clock: Clock | None = None,
        ids: IdAllocator | None = None,
        event_handlers: EventSink | Sequence[EventSink] = (),
        checkpoints: CheckpointStore | None = None,
        checkpoint_key: str | None = None,
        leases: ConversationLeases | None = None,
        lease_ttl: float = 30.0,
        lease_timeout: float | None = None,
        log: Callable[[str], None] | None = None,
        limits: SpendingLimits | None = None,
        tracing: Tracing | None = None,
        porter: ConversationPorter | None = None,
        idle_housekeeper: IdleHousekeeper | None = None,
    ) -> None:
        if (checkpoints is None) != (checkpoint_key is None):
            missing, given = (
                ("checkpoint_key", "checkpoints")
                if checkpoint_key is None
                else ("checkpoints", "checkpoint_key")
            )
            raise InvalidRequestError(
                missing,
                f"missing while {given} is given",
                f"{given} is given without {missing}; pass checkpoints and checkpoint_key "
                "together, or neither",
            )
        if checkpoint_key is not None:
            validate_checkpoint_key(checkpoint_key)
        if policy is not None and not isinstance(policy, SessionPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "policy",
                f"{policy!r} is not a SessionPolicy",
                f"Session policy must be a SessionPolicy or None, not {policy!r}",
            )
        self._transport = transport
        self._profile = transport.profile
        self._spec = spec
        self._policy = policy if policy is not None else SessionPolicy()
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._ids: IdAllocator = ids if ids is not None else RandomIds()
        self._handlers = event_callbacks("Session", "event_handlers", event_handlers)
        self._store = checkpoints
        self._key = checkpoint_key
        self._log: Callable[[str], None] = log or ignore_log_line
        self._leases = kept_leases("Session", leases, self._log)
        self._lease_ttl = seconds("Session", "lease_ttl", lease_ttl, positive=True)
        self._lease_timeout = (
            None if lease_timeout is None else seconds("Session", "lease_timeout", lease_timeout)
        )
        # The sequence of the last checkpoint seen under the key; each save is one more.
        self._sequence = 0
        # The fencing token of the lease the running turn holds on the key (0: none), and
        # why its writes were refused once it lost that lease.
        self._fence = 0
        self._lost: LeaseLostError | None = None
        self._lease_gone = False
        # Conversation portability: the porter, and the digest of the blob this session
        # last saved or imported (what the CLI's files here hold).
        self._porter = porter if isinstance(checkpoints, ConversationBlobs) else None
        self._blob_digest: str | None = None
        self._random = random.Random(self._policy.retry.seed)

        # Re-entrant: commands are carried out both with the lock held (between turns) and
        # without it (during a turn), and closing the conversation always takes it.
        self._lock = threading.RLock()
        self._state: PolicyState = self._initial_state()
        self._conversation: Conversation | None = None
        # Modes and settings asked for before the first conversation opened.
        self._settings: list[tuple[str, tuple[Any, ...]]] = []
        self._executing: Conversation | None = None
        self._running = False
        self._close_requested = False
        self._pending: TurnTicket | None = None
        self._pending_cancelled = False
        # What the policy decided while a turn was prepared, reported when the turn runs.
        self._notices: list[Notify] = []
        self._idle = idle_housekeeper
        self._stop = TurnStop()
        self._last_error: BaseException | None = None
        self._last_result: TurnResult | None = None
        self._last_turn_session_id: str | None = None
        self._limits = (
            SpendingLimits()
            if limits is None
            else instance("Session", "limits", limits, SpendingLimits, "a SpendingLimits")
        )
        self._spent = Spend()
        self._meter: SpendingMeter | None = None
        self._crossing: Crossing | None = None
        self._prices: PricingTable | None = None
        self._tracing = (
            None
            if tracing is None
            else instance("Session", "tracing", tracing, Tracing, "an agentshim.otel.Tracing")
        )
        self._trace: TurnTrace | None = None

    def _initial_state(self) -> PolicyState:
        spec = self._spec
        saved = None
        if spec.resume_session_id is not None:
            validate_session_id(spec.resume_session_id)
            if not self._profile.supports_resume:
                raise ProviderCapabilityError(
                    f"{self._profile.display_name} cannot resume a conversation; drop resume_session_id"
                )
        if self._store is not None and self._key is not None:
            saved = self._store.load(self._key)
            self._sequence = saved.sequence if saved is not None else 0
        if spec.resume_session_id is not None:
            self._save(Checkpoint(spec.resume_session_id, spec.previous_usage, 0))
            return self._policy.initial(spec.resume_session_id, spec.previous_usage)
        if saved is None:
            return self._policy.initial()
        if not self._profile.supports_resume:
            self._log(
                f"ignoring checkpoint {self._key!r}: {self._profile.display_name} cannot resume"
            )
            return self._policy.initial()
        return self._policy.initial(saved.session_id, saved.usage, saved.turns)

    # -- what the session holds ---------------------------------------------------------

    @property
    def session_id(self) -> str | None:
        """The provider conversation the next turn continues (None: it starts fresh)."""
        with self._lock:
            return self._state.session_id

    @property
    def last_turn_session_id(self) -> str | None:
        """The conversation the last finished turn (completed or failed) ran in."""
        with self._lock:
            return self._last_turn_session_id

    @property
    def closed(self) -> bool:
        """True once ``close`` was called."""
        with self._lock:
            return self._closing()

    @property
    def spent(self) -> Spend:
        """What this session's turns have spent since it was opened (tokens and priced cost)."""
        with self._lock:
            return self._spent

    @property
    def limits(self) -> SpendingLimits:
        """The spending limits every turn of this session runs under."""
        return self._limits

    @property
    def spec(self) -> ConversationSpec:
        """The conversation settings this session opens conversations with."""
        return self._spec

    def _closing(self) -> bool:
        return self._state.closed or self._close_requested

    # -- turns --------------------------------------------------------------------------

    def prepare_turn(
        self,
        request: TurnRequest | str,
        *,
        expect_session_id: str | None = None,
        pin: bool = False,
    ) -> TurnTicket:
        """Reserve and name the next turn before anything runs.

        ``expect_session_id`` makes the turn strict: unless the session holds exactly that
        conversation, ContinuityError is raised and nothing runs. A strict or ``pin``-ned turn
        never loses its conversation: no replacement, no forgetting, no renewal. A new ticket
        supersedes any earlier one that has not run.

        Raises:
            SessionStateError: the session is closed.
            ContinuityError: the session does not hold ``expect_session_id``.
        """
        if isinstance(request, str):
            request = TurnRequest(prompt=request)
        request = instance("Session", "request", request, TurnRequest, _REQUEST_HINT)
        with self._lock:
            if self._closing():
                raise _closed_error()
            if not self._running:
                commands = self._step(Prepare(self._clock.monotonic(), expect_session_id))
                for command in commands:
                    if isinstance(command, RefuseTurn):
                        raise _refusal_error(command)
                    if isinstance(command, Notify):
                        self._notices.append(command)
                    else:
                        self._bookkeep(command)
            elif expect_session_id is not None and (expect_session_id != self._state.session_id):
                raise ContinuityError(expect_session_id, self._state.session_id)
            ticket = TurnTicket(self._ids.new_id("turn"), request, expect_session_id, pin)
            self._pending = ticket
            self._pending_cancelled = False
            return ticket

    def turn(
        self,
        request: TurnRequest | str | TurnTicket,
        *,
        on_event: EventSink | None = None,
        expect_session_id: str | None = None,
        pin: bool = False,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
    ) -> Turn:
        """Run one turn; events go to the agent's handlers, then ``on_event``.

        ``request`` is a TurnRequest or a prompt string (the turn is prepared and run in one
        call, with ``expect_session_id`` and ``pin`` as in ``prepare_turn``), or a TurnTicket
        from ``prepare_turn`` for a caller who journals the turn id first. ``on_event`` is an
        AgentEventHandler or a plain function of one event.

        Recovery happens inside: transient failures are retried after the policy's delays, a
        lost conversation is replaced once, and so on (see ``docs/sessions.md``).

        ``max_cost_usd`` and ``max_tokens`` replace the session's per-turn limits for this turn.

        Raises:
            InvalidRequestError: ``expect_session_id`` or ``pin`` given with a ticket (they
                belong to ``prepare_turn``), or a request of the wrong type.
            SessionStateError: closed session, a turn already running, a stale or reused ticket.
            TurnCancelledError: ``interrupt()`` arrived after ``prepare_turn`` and before the
                turn started.
            ContinuityError: a strict turn whose conversation the session no longer holds, or a
                strict or pinned turn the provider answered in another conversation.
            SpendingLimitError: the turn crossed a spending limit and was stopped (the
                conversation is kept), or the session is at a session limit (nothing ran).
            AgentShimError: the turn failed for good (the last attempt's error).
        """
        # Checked first: a refused handler must not spend the ticket prepared below.
        callback = event_callback("on_event", on_event) if on_event is not None else None
        limits = self._limits.overridden(max_cost_usd=max_cost_usd, max_tokens=max_tokens)
        if isinstance(request, TurnTicket):
            if expect_session_id is not None or pin:
                field = "expect_session_id" if expect_session_id is not None else "pin"
                raise InvalidRequestError(
                    field,
                    "given with a TurnTicket",
                    f"{field} belongs to prepare_turn(...): a ticket already carries it; pass "
                    "it there, or pass the request itself to turn()",
                )
            ticket = request
        else:
            ticket = self.prepare_turn(request, expect_session_id=expect_session_id, pin=pin)
        with self._lock:
            if self._closing():
                raise _closed_error()
            if self._running:
                raise SessionStateError(
                    "a turn is already running in this session; wait for it or interrupt() it"
                )
            if ticket is not self._pending:
                raise SessionStateError(
                    f"ticket {ticket.turn_id} is stale or was already run; prepare a new turn"
                )
            self._pending = None
            if self._pending_cancelled:
                self._pending_cancelled = False
                raise _cancelled_error(ticket)
            refused = limits.refusal(self._spent)
            if refused is not None:
                raise _spending_error(refused, self._state.session_id, None)
            self._running = True
            if self._idle is not None:
                self._idle.forget(self)
            self._stop = TurnStop()
            self._last_error = None
            self._last_result = None
            self._crossing = None
            self._meter = (
                SpendingMeter(limits, self._spent, self._price) if limits.limited else None
            )
            self._trace = self._start_trace(ticket)
        try:
            return self._traced(ticket, callback)
        finally:
            with self._lock:
                self._running = False
                self._executing = None
                if self._meter is not None:
                    self._spent = self._spent + self._meter.spent
                    self._meter = None
                if self._state.phase in _IN_TURN:
                    # Something outside the policy's events broke the turn (a clock or a
                    # store that raised); end it so the session stays usable.
                    for command in self._step(Abort(self._clock.monotonic())):
                        self._bookkeep(command)
                if self._close_requested and not self._state.closed:
                    for command in self._step(Close()):
                        self._bookkeep(command)
                    self._close_requested = False
                self._schedule_idle()

    def release_if_idle(self) -> bool:
        """Close the live conversation if it has been idle ``idle_release_after`` seconds.

        What the Agent's idle housekeeper calls when the session is due; thread-safe. The
        conversation's id is kept and the next turn reopens it, its first event being
        ``Lifecycle("conversation_released")``. Nothing happens while a turn runs, once the
        session is closed, or when it has not been idle long enough. Whether it released.
        """
        with self._lock:
            if self._closing() or self._running:
                return False
            released = False
            for command in self._step(Prepare(self._clock.monotonic(), None)):
                if isinstance(command, Notify):
                    self._notices.append(command)
                elif not isinstance(command, RefuseTurn):
                    self._bookkeep(command)
                    released = True
            return released

    def _schedule_idle(self) -> None:
        """Ask the housekeeper to look at the session once it has been idle long enough."""
        limit, state = self._policy.idle_release_after, self._state
        if self._idle is None or limit is None or self._closing():
            return
        if state.live and state.last_active is not None:
            self._idle.schedule(self, state.last_active + limit)

    def _start_trace(self, ticket: TurnTicket) -> TurnTrace | None:
        """The turn's span, child of the caller's current one; None without tracing."""
        if self._tracing is None:
            return None
        return self._tracing.turn(
            provider=self._profile.name,
            model=self._spec.model,
            turn_id=ticket.turn_id,
            session_id=self._state.session_id,
            prompt=ticket.request.prompt,
        )

    def _traced(self, ticket: TurnTicket, on_event: Emit | None) -> Turn:
        trace = self._trace
        if trace is None:
            return self._leased(ticket, on_event)
        try:
            turn = self._leased(ticket, on_event)
        except BaseException as error:
            trace.finish(self._last_result, self._last_turn_session_id, error)
            raise
        finally:
            self._trace = None
        trace.finish(turn.result, turn.session_id, None)
        return turn

    def interrupt(self) -> None:
        """Cut the running turn short; thread-safe.

        A turn whose CLI is running (or exiting on its own) returns its Turn with
        ``result.interrupted`` True, and the session keeps its conversation. A turn that has
        not started a CLI yet (opening its conversation, or waiting for another session's turn
        in it) raises TurnCancelledError with nothing run; so does a turn prepared with
        ``prepare_turn`` and not yet run. A retry wait ends and the turn fails with the error it
        was retrying. With nothing prepared or running it does nothing: the next turn is not
        affected. ``docs/sessions.md`` has the table.
        """
        with self._lock:
            stop = self._stop if self._running else None
            if stop is None and self._pending is not None:
                self._pending_cancelled = True
        if stop is not None:
            # The conversation acts on it whenever it can, even before its turn began.
            stop.request()

    def steer(self, text: str) -> None:
        """Send ``text`` into the running turn; thread-safe.

        Raises:
            ProviderCapabilityError: the transport cannot take messages mid-turn.
            NoRunningTurnError: no turn is running.
        """
        with self._lock:
            executing = self._executing
            known = executing or self._conversation
        one_shot = getattr(self._transport, "kind", None) is TransportKind.ONE_SHOT
        if one_shot or (known is not None and not isinstance(known, SteerableConversation)):
            raise ProviderCapabilityError(
                f"{self._profile.display_name} conversations on this transport cannot take "
                "messages while a turn runs; send the text as the next turn's prompt"
            )
        # A running conversation passed the check above, so only "none is running" is left.
        if not isinstance(executing, SteerableConversation):
            raise NoRunningTurnError("no turn is running; send the text as a new turn")
        executing.steer(text)

    def set_mode(self, mode_id: str) -> None:
        """Put the conversation in the agent's mode ``mode_id`` from the next turn on.

        For agents with session modes (ACP agents: ``plan``, ``default``, ...). Asked before
        the first turn, it applies from the first.

        Raises:
            ProviderCapabilityError: the conversation has no modes.
            InvalidRequestError: a mode the agent has said it does not offer.
        """
        self._configure("set_mode", mode_id)

    def set_config_option(self, option_id: str, value: str | bool) -> None:
        """Set the agent's session setting ``option_id`` to ``value`` from the next turn on.

        For agents with session settings (ACP agents' ``configOptions``); a bool for a
        boolean setting, a value id otherwise.

        Raises:
            ProviderCapabilityError: the conversation has no settings.
            InvalidRequestError: a setting or value the agent has said it does not have.
        """
        self._configure("set_config_option", option_id, value)

    def _configure(self, method: str, *args: Any) -> None:
        with self._lock:
            conversation = self._conversation
            if conversation is None:
                # Applied by _open to the conversation the first turn opens.
                self._settings.append((method, args))
                return
        if not isinstance(conversation, ConfigurableConversation):
            raise ProviderCapabilityError(
                f"{self._profile.display_name} conversations on this transport have no modes "
                "or settings"
            )
        getattr(conversation, method)(*args)

    def fork(self) -> Session:
        """A new session whose first turn starts a new conversation from this one's history.

        This session and its conversation are unchanged; the fork shares its transport,
        policy, clock, ids and handlers, and keeps no checkpoint (pass a key to
        ``Agent.start_session(session_id=..., fork=True)`` for one).

        Raises:
            SessionStateError: this session holds no conversation yet.
            ProviderCapabilityError: the provider cannot fork a conversation.
        """
        session_id = self.session_id
        if session_id is None:
            raise SessionStateError("there is no conversation to fork yet; run a turn first")
        if not self._profile.supports_fork:
            raise ProviderCapabilityError(
                f"{self._profile.display_name} cannot fork a conversation; start a new one"
            )
        spec = replace(self._spec, resume_session_id=session_id, previous_usage=None, fork=True)
        return Session(
            self._transport,
            spec,
            policy=self._policy,
            clock=self._clock,
            ids=self._ids,
            event_handlers=self._handlers,
            leases=self._leases,
            lease_ttl=self._lease_ttl,
            lease_timeout=self._lease_timeout,
            log=self._log,
            limits=self._limits,
            tracing=self._tracing,
        )

    # -- the conversation between turns ---------------------------------------------------

    def adopt(self, session_id: str, previous_usage: ProviderUsage | None = None) -> bool:
        """Continue ``session_id`` from the next turn on, replacing what the session holds.

        Returns False (changing nothing) when a turn is running, the session is closed, or the
        provider cannot resume. Raises InvalidSessionIdError for an unsafe id.
        """
        validate_session_id(session_id)
        if not self._profile.supports_resume:
            return False
        with self._lock:
            if self._running or self._closing():
                return False
            for command in self._step(Adopt(session_id, previous_usage)):
                self._bookkeep(command)
            return True

    def release(self) -> None:
        """Close the live conversation but keep its id; the next turn reopens it by id.

        Raises:
            SessionStateError: a turn is running.
        """
        with self._lock:
            if self._closing():
                return
            if self._running:
                raise SessionStateError("cannot release the conversation while a turn runs")
            for command in self._step(Release()):
                self._bookkeep(command)

    def close(self) -> None:
        """Close the session for good; idempotent, callable from any thread.

        A running turn is interrupted and the conversation closed when it ends. The
        checkpoint is kept, so a new session with the same key continues the conversation.
        """
        with self._lock:
            if self._closing():
                return
            self._pending = None
            if self._idle is not None:
                self._idle.forget(self)
            if self._running:
                self._close_requested = True
                stop = self._stop
            else:
                for command in self._step(Close()):
                    self._bookkeep(command)
                stop = None
        if stop is not None:
            stop.request()

    def __enter__(self) -> Session:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the interpreter ----------------------------------------------------------------

    def _step(self, event: Event) -> tuple[Command, ...]:
        """Apply ``event``; the caller holds ``self._lock``."""
        self._state, commands = self._policy.step(self._state, event)
        return commands

    def _feed(self, event: Event) -> tuple[Command, ...]:
        with self._lock:
            return self._step(event)

    def _leased(self, ticket: TurnTicket, on_event: Emit | None) -> Turn:
        """Run the turn holding its checkpoint key's lease, when the session has both."""
        if self._leases is None or self._store is None or self._key is None:
            return self._imported(self._carry_in(), self._drive(ticket, on_event))
        lease = TurnLease(
            self._leases, self._lease_ttl, self._lease_timeout, on_lost=self._on_lease_lost
        )
        if not lease.wait(self._key, self._stop):
            raise _cancelled_error(ticket)
        self._fence, self._lost, self._lease_gone = lease.fence, None, False
        try:
            self._resync(self._store, self._key)
            imported = self._carry_in()
            turn = self._imported(imported, self._drive(ticket, on_event))
        finally:
            lease.release()
            fence, self._fence = self._fence, 0
        lost = self._lost
        if lost is None and self._lease_gone:
            now = self._leases.holder(self._key) if isinstance(self._leases, LeaseKeeper) else None
            lost = (
                LeaseLostError(self._key, fence)
                if now is None
                else LeaseLostError(self._key, fence, now.pid, now.host, now.since, now.fence)
            )
        if lost is not None:
            # Another worker holds the conversation now; this turn's result must not count.
            raise lost
        return turn

    @staticmethod
    def _imported(imported: bool, turn: Turn) -> Turn:
        if imported and turn.continuity is Continuity.CONTINUED:
            return replace(turn, continuity=Continuity.IMPORTED)
        return turn

    def _carry_in(self) -> bool:
        """Import the saved CLI files of the conversation when they are not what is here.

        True when they were imported. A failure is logged: the turn then resumes what this
        host has, or the policy replaces a conversation the CLI cannot find.
        """
        store, key, porter = self._store, self._key, self._porter
        session_id = self._state.session_id
        if porter is None or key is None or session_id is None:
            return False
        assert isinstance(store, ConversationBlobs)
        try:
            blob = store.load_blob(key)
        except (OSError, ValueError) as error:
            self._log(f"could not read the saved conversation {key!r}: {error}")
            return False
        if blob is None:
            return False
        digest = hashlib.sha256(blob).hexdigest()
        if digest == self._blob_digest:
            return False  # the files here are the ones this session saved
        with self._lock:
            # A live CLI holds the history it had before another worker moved on, and may
            # write its files as it exits: close it first; the turn reopens it by id.
            if self._state.live:
                for command in self._step(Release()):
                    self._bookkeep(command)
        try:
            imported = porter.import_blob(blob, self._spec.cwd)
        except (AgentShimError, OSError, ValueError) as error:
            self._log(f"could not import the saved conversation {key!r}: {error}")
            return False
        self._blob_digest = digest
        return imported == session_id

    def _carry_out(self, session_id: str | None) -> None:
        """Export the conversation's CLI files and save them beside the checkpoint (fenced)."""
        store, key, porter = self._store, self._key, self._porter
        if porter is None or key is None or session_id is None:
            return
        assert isinstance(store, ConversationBlobs)
        try:
            blob = porter.export_blob(session_id, self._spec.cwd)
            if blob is None:
                return
            store.save_blob(key, blob, fence=self._fence)
        except LeaseLostError as error:
            self._lost = error
            self._log(f"conversation {key!r} not saved: {error}")
            return
        except (AgentShimError, OSError, ValueError) as error:
            # The turn's work is done; a conversation that cannot travel stays on this host.
            self._log(f"could not save conversation {key!r} for other hosts: {error}")
            return
        self._blob_digest = hashlib.sha256(blob).hexdigest()

    def _carry_out_between_turns(self, session_id: str | None) -> None:
        """Save the closed conversation's files, under a lease when the session takes them."""
        leases, key = self._leases, self._key
        if self._porter is None or key is None or session_id is None:
            return
        if leases is None:
            if self._saved_last(key, session_id):
                self._carry_out(session_id)
            return
        holder = LeaseHolder.here()
        try:
            granted = leases.acquire(key, holder, self._lease_ttl)
        except (OSError, ValueError) as error:
            self._log(f"could not lease {key!r} to save the conversation: {error}")
            return
        if granted.token != holder.token:
            return  # another worker runs a turn in it and saves what it leaves
        self._fence = granted.fence
        try:
            if self._saved_last(key, session_id):
                self._carry_out(session_id)
        finally:
            self._fence = 0
            leases.release(key, holder)

    def _saved_last(self, key: str, session_id: str) -> bool:
        """Whether the checkpoint is still the one this session saved last, for ``session_id``.

        Only then are this host's files the newest: another worker may have run a turn
        since, and files from before it must not replace what it saved.
        """
        store = self._store
        assert store is not None
        try:
            saved = store.load(key)
        except (OSError, ValueError) as error:
            self._log(f"could not read checkpoint {key!r} again: {error}")
            return False
        return (
            saved is not None
            and saved.session_id == session_id
            and saved.sequence == self._sequence
        )

    def _on_lease_lost(self) -> None:
        """The renewal found this turn's lease taken by another worker: stop the turn."""
        with self._lock:
            self._lease_gone = True
            stop = self._stop
        stop.request()

    def _resync(self, store: CheckpointStore, key: str) -> None:
        """Continue what the store holds now: another process may have moved the conversation on."""
        try:
            saved = store.load(key)
        except (OSError, ValueError) as error:
            self._log(f"could not read checkpoint {key!r} again, going on with it: {error}")
            return
        if saved is not None and not self._profile.supports_resume:
            return
        event = (
            Resync(None) if saved is None else Resync(saved.session_id, saved.usage, saved.turns)
        )
        with self._lock:
            if saved is not None:
                self._sequence = saved.sequence
            for command in self._step(event):
                self._bookkeep(command)

    def _drive(self, ticket: TurnTicket, on_event: Emit | None) -> Turn:
        emit = self._emitter(on_event)
        with self._lock:
            notices, self._notices = self._notices, []
        start = Start(ticket.turn_id, self._clock.monotonic(), ticket.expect_session_id, ticket.pin)
        pending: deque[Command] = deque((*notices, *self._feed(start)))
        handler_error: BaseException | None = None
        while pending:
            command = pending.popleft()
            if isinstance(command, FinishTurn):
                return self._finish(ticket, command, handler_error)
            if isinstance(command, FailTurn):
                raise self._failure(ticket, command, handler_error)
            if isinstance(command, RefuseTurn):
                raise _refusal_error(command)
            if isinstance(command, Notify):
                self._log(f"{command.kind}: {command.detail}")
                try:
                    emit(Lifecycle(command.kind, command.detail))
                except Exception as error:
                    handler_error = handler_error or error
                    with self._lock:
                        in_turn = self._state.phase in _IN_TURN
                    if in_turn:
                        pending = deque(c for c in pending if not _awaits_result(c))
                        pending.extend(self._feed(Abort(self._clock.monotonic())))
                continue
            event = self._perform(command, ticket.request, emit)
            if event is not None:
                pending.extend(self._feed(event))
        raise SessionStateError(  # pragma: no cover - the policy always ends a turn
            "internal error: the session policy ended a turn without finishing or failing it"
        )

    def _finish(
        self, ticket: TurnTicket, command: FinishTurn, handler_error: BaseException | None
    ) -> Turn:
        with self._lock:
            self._last_turn_session_id = command.session_id
        if handler_error is not None:
            raise handler_error
        result = self._last_result
        if result is None:  # pragma: no cover - the policy finishes only after a result
            raise SessionStateError("internal error: the turn finished without a result")
        if self._crossing is not None:
            raise _spending_error(self._crossing, command.session_id, result)
        return Turn(result, command.continuity, ticket.turn_id, command.session_id)

    def _failure(
        self, ticket: TurnTicket, command: FailTurn, handler_error: BaseException | None
    ) -> BaseException:
        if handler_error is not None:
            return handler_error
        if self._crossing is not None:
            with self._lock:
                held = self._state.session_id
            return _spending_error(self._crossing, held, self._last_result)
        if command.cancelled or self._last_error is None:
            return _cancelled_error(ticket)
        return self._last_error

    def _perform(self, command: Command, request: TurnRequest, emit: Emit) -> Event | None:
        """Carry out one command; return the event that reports its result, if it has one."""
        if isinstance(command, OpenConversation):
            return self._open(command)
        if isinstance(command, ExecuteTurn):
            return self._execute(request, emit)
        if isinstance(command, WaitBeforeRetry):
            stopped = self._clock.wait(command.seconds, self._stop)
            return Waited(self._clock.monotonic(), stopped)
        self._bookkeep(command)
        return None

    def _open(self, command: OpenConversation) -> Event:
        if self._stop.is_set():
            return Cancelled(self._clock.monotonic())
        spec = replace(
            self._spec,
            resume_session_id=command.resume_session_id,
            previous_usage=command.previous_usage,
        )
        try:
            conversation = self._transport.open(spec)
        except BaseException as error:
            self._last_error = error
            return Failed(self._clock.monotonic(), classify_failure(error), None)
        with self._lock:
            settings, self._settings = self._settings, []
        try:
            if settings and not isinstance(conversation, ConfigurableConversation):
                raise ProviderCapabilityError(
                    f"{self._profile.display_name} conversations on this transport have no "
                    "modes or settings; drop set_mode / set_config_option"
                )
            for method, args in settings:
                getattr(conversation, method)(*args)
        except AgentShimError as error:
            conversation.close()
            self._last_error = error
            return Failed(self._clock.monotonic(), classify_failure(error), None)
        with self._lock:
            self._conversation = conversation
        return Opened(conversation.session_id)

    def _execute(self, request: TurnRequest, emit: Emit) -> Event:
        conversation = self._conversation
        if conversation is None:  # pragma: no cover - the policy never executes without one
            raise SessionStateError("internal error: no live conversation to run the turn in")
        # Without a checkpoint key, the lease is on the provider conversation, per attempt.
        lock = (
            TurnLease(self._leases, self._lease_ttl, self._lease_timeout)
            if self._leases is not None and self._key is None
            else None
        )
        if lock is not None:
            session_id = self._state.session_id or conversation.session_id
            if session_id is None:
                emit = lock.watching(emit, self._conversation_key)
            else:
                try:
                    if not lock.wait(self._conversation_key(session_id), self._stop):
                        return Cancelled(self._clock.monotonic())
                except Exception as error:  # LeaseTimeoutError, or a store that failed
                    self._last_error = error
                    return Failed(self._clock.monotonic(), classify_failure(error), None)
        trace = self._trace
        if trace is not None and getattr(self._transport, "kind", None) is TransportKind.ONE_SHOT:
            # A fresh CLI process per turn: its env can name the turn's span.
            context = trace.env()
            if context:
                request = replace(request, env={**(request.env or {}), **context})
        try:
            with self._lock:
                if self._stop.is_set():
                    return Cancelled(self._clock.monotonic())
                self._executing = conversation
            try:
                result = conversation.turn(request, emit, self._stop)
            except BaseException as error:
                self._last_error = error
                named = conversation.session_id
                with self._lock:
                    self._last_turn_session_id = named or self._state.session_id
                return Failed(
                    self._clock.monotonic(),
                    classify_failure(error),
                    named,
                    retry_after=_retry_after(error),
                    sample=self._random.random() if self._policy.retry.jitter else 0.5,
                )
            finally:
                with self._lock:
                    self._executing = None
        finally:
            if lock is not None:
                lock.release()
        self._last_result = result
        return Succeeded(
            self._clock.monotonic(),
            result.session_id or conversation.session_id,
            result.usage,
            result.interrupted,
            result.usage.tokens.input_tokens,
            result.duration_ms / 1000.0,
            respawned=result.respawned,
        )

    def _conversation_key(self, session_id: str) -> str:
        return conversation_key(self._profile.name, session_id)

    def _bookkeep(self, command: Command) -> None:
        """Carry out a command that reports nothing back (close, save, clear)."""
        if isinstance(command, CloseConversation):
            with self._lock:  # steer() reads it from other threads
                conversation, self._conversation = self._conversation, None
                between_turns = not self._running
            if conversation is not None:
                try:
                    conversation.close()
                except Exception as error:
                    self._log(f"closing the conversation failed: {error!r}")
                if between_turns:
                    # A long-lived CLI may write its last files as it exits.
                    self._carry_out_between_turns(
                        conversation.session_id or self._last_turn_session_id
                    )
        elif isinstance(command, SaveCheckpoint):
            try:
                checkpoint = Checkpoint(command.session_id, command.usage, command.turns)
            except ValueError as error:
                self._log(f"not saving a checkpoint: {error}")
            else:
                if self._running:
                    # The files first: a checkpoint never names a conversation whose
                    # saved files are older than it.
                    self._carry_out(command.session_id)
                self._save(checkpoint)
        elif isinstance(command, ClearCheckpoint):
            self._clear()

    def _save(self, checkpoint: Checkpoint) -> None:
        if self._store is None or self._key is None:
            return
        self._sequence += 1
        try:
            self._store.save(
                self._key, replace(checkpoint, sequence=self._sequence, fence=self._fence)
            )
        except LeaseLostError as error:
            self._lost = error
            self._log(f"checkpoint {self._key!r} not saved: {error}")
        except (OSError, ValueError) as error:
            # The turn's work is done; losing durability is logged rather than undoing it.
            self._log(f"could not save checkpoint {self._key!r}: {error}")

    def _clear(self) -> None:
        if self._store is None or self._key is None:
            return
        try:
            self._store.clear(self._key)
        except (OSError, ValueError) as error:
            # As with a failed save: logged, never undoing the turn's work.
            self._log(f"could not clear checkpoint {self._key!r}: {error}")

    def _emitter(self, on_event: Emit | None) -> Emit:
        handlers = self._handlers
        meter = self._meter
        trace = self._trace

        def emit(event: AgentEvent) -> None:
            if trace is not None:
                trace.event(event)
            if meter is not None and isinstance(event, UsageReport):
                self._watch(meter, event)
            for handler in handlers:
                handler(event)
            if on_event is not None:
                on_event(event)

        return emit

    def _watch(self, meter: SpendingMeter, report: UsageReport) -> None:
        """Count a live usage report; stop the turn at once when it crosses a limit."""
        crossing = meter.observe(report)
        if crossing is not None and self._crossing is None:
            self._crossing = crossing
            self._log(f"spending limit {crossing.limit_name} crossed; interrupting the turn")
            self._stop.request()

    def _price(self, usage: ProviderUsage) -> float | None:
        """What ``usage`` costs by the provider's price table, or None when unknown."""
        if self._prices is None:
            try:
                self._prices = pricing_table(self._profile.name)
            except UnknownProviderError:
                self._prices = PricingTable("none", "")
        return self._prices.cost(usage.model or self._spec.model, usage.tokens)


def _awaits_result(command: Command) -> bool:
    return isinstance(command, OpenConversation | ExecuteTurn | WaitBeforeRetry)


def _retry_after(error: BaseException) -> float | None:
    """The provider's own "retry after" hint, where a failure carries one (seconds)."""
    return error.retry_after if isinstance(error, TurnFailedError) else None


def _cancelled_error(ticket: TurnTicket) -> TurnCancelledError:
    return TurnCancelledError(
        f"turn {ticket.turn_id} was interrupted before it started; nothing ran"
    )


def _spending_error(
    crossing: Crossing, session_id: str | None, result: TurnResult | None
) -> SpendingLimitError:
    return SpendingLimitError(
        limit_name=crossing.limit_name,
        limit=crossing.limit,
        spent=crossing.spent,
        session_id=session_id,
        result=result,
    )


def _closed_error() -> SessionStateError:
    return SessionStateError("the session is closed; open a new one to run more turns")


def _refusal_error(command: RefuseTurn) -> Exception:
    if command.reason is Refusal.CLOSED:
        return _closed_error()
    if command.reason is Refusal.CONVERSATION_LOST:
        return ContinuityError(
            command.expected,
            command.actual,
            f"the turn ran, but the provider answered in a new conversation {command.actual!r} "
            f"instead of continuing {command.expected!r} (it may no longer exist); the session "
            "keeps the conversation this strict or pinned turn required. Adopt the new "
            "conversation to continue there, or forget this one and start fresh",
        )
    return ContinuityError(command.expected, command.actual)
