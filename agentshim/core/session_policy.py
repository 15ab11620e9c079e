"""The recovery policy of a session, as a pure step function.

``SessionPolicy.step(state, event) -> (new_state, commands)`` decides what a session does
about every turn: open or reopen a conversation, execute the turn, wait and retry, replace a
lost conversation, forget or retire one, save or clear the checkpoint, finish or fail. It does
no I/O, reads no clock and starts no thread: clock readings and random samples arrive inside
events, and every effect leaves as a command that ``Session`` carries out. An event that
cannot happen in a state raises ``ValueError`` (a bug in the interpreter, never the caller's).

The rules, per turn:

* transient failure: wait each delay of ``RetryPolicy.delays`` in turn and retry in place; a
  stop signal ends the wait and fails the turn;
* resume refused on a turn that resumed: drop the conversation, clear the checkpoint and run
  the turn once more in a fresh conversation (continuity REPLACED), unless the turn is strict
  or pinned (then fail, keeping it);
* resume refused on a turn that opened its own conversation: forget it and fail, no replay;
* an unclassified failure of a resumed turn, and a context overflow: forget the conversation
  (unless strict or pinned) and fail;
* usage limit, auth, schema, timeout, interrupted, any other error: fail, keeping the
  conversation and its checkpoint;
* success: keep the conversation, save the checkpoint, and retire the conversation (the next
  turn starts cold, continuity RESET) once the renewal budget is reached, unless the turn is
  strict or pinned; an interrupted success counts no turn toward renewal;
* idle longer than ``idle_release_after`` when a turn is prepared: close the live
  conversation but keep its id, so the next turn reopens it by id;
* a failure that names a new session id adopts it first (except a refused resume);
* the checkpoint store naming another conversation when a turn takes its lease (another
  process moved it on): close the live conversation and continue the stored one, counting
  its turns; no stored conversation means the next turn starts cold;
* a resumed attempt the provider answers in another conversation (Codex starts a new thread
  when ``resume`` matches nothing, and exits 0) is not a continuation: the new conversation is
  adopted and a success reports continuity REPLACED; a strict or pinned turn instead keeps
  its conversation and fails with ``RefuseTurn(Refusal.CONVERSATION_LOST)``.
"""

from __future__ import annotations

import enum
from dataclasses import field, replace

from agentshim.core import lifecycle_kinds as lk
from agentshim.core._checks import instance, seconds
from agentshim.core._slots import fast_value
from agentshim.core.errors import (
    CliDiedError,
    FailureKind,
    SessionResumeError,
    TurnCancelledError,
    TurnFailedError,
    TurnTimeoutError,
)
from agentshim.core.profile import RenewalBudget
from agentshim.core.retry import RetryPolicy
from agentshim.core.usage import ProviderUsage

__all__ = [
    "Abort",
    "Adopt",
    "Cancelled",
    "ClearCheckpoint",
    "Close",
    "CloseConversation",
    "Command",
    "Continuity",
    "Event",
    "ExecuteTurn",
    "FailTurn",
    "Failed",
    "FailureOutcome",
    "FinishTurn",
    "Notify",
    "OpenConversation",
    "Opened",
    "Phase",
    "PolicyState",
    "Prepare",
    "Refusal",
    "RefuseTurn",
    "Release",
    "Resync",
    "SaveCheckpoint",
    "SessionPolicy",
    "Start",
    "Succeeded",
    "TurnProgress",
    "WaitBeforeRetry",
    "Waited",
    "classify_failure",
]


class Continuity(enum.Enum):
    """How the conversation a completed turn ran in relates to the one the session held."""

    CONTINUED = "continued"
    """The turn continued the session's conversation (or started the session's first one)."""
    RESET = "reset"
    """The session had retired or forgotten its conversation, so the turn started cold."""
    REPLACED = "replaced"
    """The session's conversation was gone; the turn was replayed in a fresh one."""
    IMPORTED = "imported"
    """The turn continued the conversation after importing its CLI files from a portable
    store: another host (or process) ran its last turn. Set by the Session, not the policy."""
    RESUMED = "resumed"
    """The turn continued the session's conversation in a new CLI process: the long-lived
    one it ran in had ended (killed while the conversation was idle, or dead in the last
    turn), so the turn started another and resumed the conversation there by id."""


class FailureOutcome(enum.Enum):
    """What a failed turn attempt means to the policy when the CLI did not say why.

    A TurnFailedError's own ``FailureKind`` is the outcome when there is one; these are the
    failures read from the error's base type alone.
    """

    RESUME_REFUSED = "resume_refused"
    """The provider refused to resume the conversation (SessionResumeError)."""
    TIMEOUT = "timeout"
    """The attempt ran out of time (TurnTimeoutError)."""
    INTERRUPTED = "interrupted"
    """The attempt was cancelled or interrupted (TurnCancelledError)."""
    ERROR = "error"
    """Anything else: a bad request, a broken transport, a bug."""


def classify_failure(error: BaseException) -> FailureKind | FailureOutcome:
    """Say what ``error`` means to the policy, from its base type only.

    SessionResumeError is a refused resume, CliDiedError an error that keeps the conversation,
    TurnFailedError's ``kind`` is the outcome, TurnTimeoutError is a timeout,
    TurnCancelledError an interrupt, anything else an error.
    """
    if isinstance(error, SessionResumeError):
        return FailureOutcome.RESUME_REFUSED
    if isinstance(error, CliDiedError):
        # The process died, not the conversation: fail this turn and keep its id.
        return FailureOutcome.ERROR
    if isinstance(error, TurnFailedError):
        return error.kind
    if isinstance(error, TurnTimeoutError):
        return FailureOutcome.TIMEOUT
    if isinstance(error, TurnCancelledError):
        return FailureOutcome.INTERRUPTED
    return FailureOutcome.ERROR


class Phase(enum.Enum):
    """Where a session is; every phase but IDLE and CLOSED awaits one result."""

    IDLE = "idle"
    OPENING = "opening"
    """An OpenConversation command awaits ``Opened``, ``Failed`` or ``Cancelled``."""
    EXECUTING = "executing"
    """An ExecuteTurn command awaits ``Succeeded``, ``Failed`` or ``Cancelled``."""
    WAITING = "waiting"
    """A WaitBeforeRetry command awaits ``Waited``."""
    CLOSED = "closed"


@fast_value
class TurnProgress:
    """The running turn: its id, its guarantees, and what has happened to it so far."""

    turn_id: str
    strict: bool
    pinned: bool
    started_at: float
    cold_start: bool
    """The session had dropped a conversation before this turn (continuity RESET)."""
    resumed: bool = False
    """The current attempt continues a conversation the session already named."""
    retries: int = 0
    replaced: bool = False
    switched: bool = False
    """The provider answered a resumed attempt in another conversation (continuity REPLACED)."""
    attempted: bool = False
    """Some attempt has already reported a result (so a cancel fails with its error)."""

    @property
    def holds_conversation(self) -> bool:
        """A strict or pinned turn never loses its conversation."""
        return self.strict or self.pinned


@fast_value
class PolicyState:
    """Everything the policy knows; ``session_id`` is what the checkpoint names."""

    phase: Phase = Phase.IDLE
    session_id: str | None = None
    usage: ProviderUsage | None = None
    turns: int = 0
    live: bool = False
    """A conversation is open (reopened by id on the next turn when not)."""
    last_active: float | None = None
    reset_pending: bool = False
    turn: TurnProgress | None = None

    @property
    def closed(self) -> bool:
        """True once the session is closed."""
        return self.phase is Phase.CLOSED


# -- events ---------------------------------------------------------------------------------


@fast_value
class Prepare:
    """A turn is being prepared at clock reading ``now``; ``expect_session_id`` makes it strict."""

    now: float
    expect_session_id: str | None = None


@fast_value
class Start:
    """The prepared turn ``turn_id`` starts running."""

    turn_id: str
    now: float
    expect_session_id: str | None = None
    pin: bool = False


@fast_value
class Opened:
    """The conversation asked for is open; ``session_id`` as the transport names it."""

    session_id: str | None = None


@fast_value
class Succeeded:
    """The attempt returned a result."""

    now: float
    session_id: str | None = None
    usage: ProviderUsage | None = None
    interrupted: bool = False
    input_tokens: int = 0
    duration_s: float = 0.0
    respawned: bool = False
    """The turn resumed the conversation in a new process (the last one had ended)."""


@fast_value
class Failed:
    """Opening the conversation or running the attempt failed.

    ``session_id`` is the id the conversation reported after the failure. ``sample`` is a
    uniform random number for retry jitter; ``retry_after`` the provider's own wait hint.
    """

    now: float
    outcome: FailureKind | FailureOutcome
    session_id: str | None = None
    retry_after: float | None = None
    sample: float = 0.5


@fast_value
class Cancelled:
    """A stop arrived before the awaited open or attempt could be dispatched."""

    now: float


@fast_value
class Waited:
    """The retry wait ended; ``stopped`` when a stop signal cut it short."""

    now: float
    stopped: bool = False


@fast_value
class Abort:
    """The interpreter hit an error of its own (a handler that raised) mid-turn."""

    now: float


@fast_value
class Adopt:
    """The caller hands the session an existing conversation to continue."""

    session_id: str
    usage: ProviderUsage | None = None


@fast_value
class Resync:
    """The checkpoint store holds this conversation now (None: none), read under the turn's lease."""

    session_id: str | None
    usage: ProviderUsage | None = None
    turns: int = 0


@fast_value
class Release:
    """The caller releases the live conversation, keeping its id."""


@fast_value
class Close:
    """The session closes for good."""


Event = (
    Prepare
    | Start
    | Opened
    | Succeeded
    | Failed
    | Cancelled
    | Waited
    | Abort
    | Adopt
    | Resync
    | Release
    | Close
)
"""Everything the policy reacts to."""


# -- commands -------------------------------------------------------------------------------


@fast_value
class OpenConversation:
    """Open a conversation, resuming ``resume_session_id`` when set; report ``Opened`` or ``Failed``."""

    resume_session_id: str | None
    previous_usage: ProviderUsage | None = None


@fast_value
class ExecuteTurn:
    """Run the turn in the live conversation; report ``Succeeded`` or ``Failed``."""

    resumed: bool
    attempt: int


@fast_value
class WaitBeforeRetry:
    """Wait ``seconds`` (stoppable) before retry ``retry`` of ``of``; report ``Waited``."""

    seconds: float
    retry: int
    of: int


@fast_value
class CloseConversation:
    """Close the live conversation."""


@fast_value
class SaveCheckpoint:
    """Save the checkpoint naming the retained conversation."""

    session_id: str
    usage: ProviderUsage | None = None
    turns: int = 0


@fast_value
class ClearCheckpoint:
    """Remove the checkpoint: the session retains no conversation."""


@fast_value
class Notify:
    """Tell the caller what the policy did (a Lifecycle event during a turn)."""

    kind: str
    detail: str = ""


@fast_value
class FinishTurn:
    """The turn completed; ``session_id`` is the conversation it ran in."""

    continuity: Continuity
    session_id: str | None


@fast_value
class FailTurn:
    """The turn failed with the last attempt's error, or ``cancelled`` before any attempt."""

    outcome: FailureKind | FailureOutcome
    cancelled: bool = False


class Refusal(enum.Enum):
    """Why a turn was refused before anything ran."""

    CLOSED = "closed"
    CONTINUITY = "continuity"
    CONVERSATION_LOST = "conversation_lost"
    """A strict or pinned turn ran, but the provider answered in another conversation."""


@fast_value
class RefuseTurn:
    """The turn is refused.

    CLOSED and CONTINUITY come before anything runs. CONVERSATION_LOST ends a strict or pinned
    turn that ran but was answered in ``actual`` instead of the ``expected`` conversation,
    which the session keeps.
    """

    reason: Refusal
    expected: str | None = None
    actual: str | None = None


Command = (
    OpenConversation
    | ExecuteTurn
    | WaitBeforeRetry
    | CloseConversation
    | SaveCheckpoint
    | ClearCheckpoint
    | Notify
    | FinishTurn
    | FailTurn
    | RefuseTurn
)
"""Every effect the policy asks for."""

Step = tuple[PolicyState, tuple[Command, ...]]
"""What ``SessionPolicy.step`` returns: the next state and the commands to carry out, in order."""


def _no_budget() -> RenewalBudget | None:
    return None


@fast_value
class SessionPolicy:
    """The pure recovery policy (see the module docstring for its rules).

    ``renewal`` retires a conversation once it has served enough; ``idle_release_after``
    (seconds) closes a conversation left idle that long when the next turn is prepared (or,
    in a session given an idle housekeeper, as soon as it is due).

    Raises:
        InvalidRequestError: ``retry`` or ``renewal`` of the wrong type, or an
            ``idle_release_after`` that is not a finite number of seconds >= 0.
    """

    retry: RetryPolicy = field(default_factory=RetryPolicy)
    renewal: RenewalBudget | None = field(default_factory=_no_budget)
    idle_release_after: float | None = None

    def __post_init__(self) -> None:
        instance(
            "SessionPolicy",
            "retry",
            self.retry,
            RetryPolicy,
            "a RetryPolicy (RetryPolicy.never() for no retries)",
        )
        if self.renewal is not None:
            hint = "a RenewalBudget or None"
            instance("SessionPolicy", "renewal", self.renewal, RenewalBudget, hint)
        if self.idle_release_after is not None:
            seconds("SessionPolicy", "idle_release_after", self.idle_release_after)

    def initial(
        self, session_id: str | None = None, usage: ProviderUsage | None = None, turns: int = 0
    ) -> PolicyState:
        """The state of a new session, continuing ``session_id`` if given."""
        return PolicyState(session_id=session_id, usage=usage, turns=turns)

    def step(self, state: PolicyState, event: Event) -> Step:
        """Apply ``event`` to ``state``: the next state and the commands to carry out, in order."""
        match event:
            case Prepare():
                return self._prepare(state, event)
            case Start():
                return self._start(state, event)
            case Opened():
                return self._opened(state, event)
            case Succeeded():
                return self._succeeded(state, event)
            case Failed():
                return self._failed(state, event)
            case Cancelled():
                return self._cancelled(state, event)
            case Waited():
                return self._waited(state, event)
            case Abort():
                return self._abort(state, event)
            case Adopt():
                return self._adopt(state, event)
            case Resync():
                return self._resync(state, event)
            case Release():
                return self._release(state)
            case Close():
                return self._close(state)

    # -- before a turn ----------------------------------------------------------------

    def _prepare(self, state: PolicyState, event: Prepare) -> Step:
        _expect(state, event, Phase.IDLE, Phase.CLOSED)
        refusal = _refusal(state, event.expect_session_id)
        if refusal is not None:
            return state, (refusal,)
        limit = self.idle_release_after
        if (
            limit is not None
            and state.live
            and state.last_active is not None
            and event.now - state.last_active >= limit
        ):
            return replace(state, live=False), (
                CloseConversation(),
                Notify(lk.CONVERSATION_RELEASED, f"idle for {limit:g} s or more"),
            )
        return state, ()

    def _start(self, state: PolicyState, event: Start) -> Step:
        _expect(state, event, Phase.IDLE, Phase.CLOSED)
        refusal = _refusal(state, event.expect_session_id)
        if refusal is not None:
            return state, (refusal,)
        turn = TurnProgress(
            turn_id=event.turn_id,
            strict=event.expect_session_id is not None,
            pinned=event.pin,
            started_at=event.now,
            cold_start=state.reset_pending,
        )
        return _attempt(replace(state, turn=turn))

    # -- an attempt -------------------------------------------------------------------

    def _opened(self, state: PolicyState, event: Opened) -> Step:
        _expect(state, event, Phase.OPENING)
        commands: list[Command] = []
        state = replace(state, live=True)
        named = event.session_id
        if named is not None and named != state.session_id:
            if _must_keep(state):
                return _lost(state, state.last_active, named)
            state = _answered_elsewhere(state, named, commands)
        turn = _turn(state)
        state = replace(state, phase=Phase.EXECUTING)
        commands.append(ExecuteTurn(resumed=turn.resumed, attempt=turn.retries + 1))
        return state, tuple(commands)

    def _succeeded(self, state: PolicyState, event: Succeeded) -> Step:
        _expect(state, event, Phase.EXECUTING)
        turn = _turn(state)
        named = event.session_id
        commands: list[Command] = []
        if named is not None and named != state.session_id:
            if _must_keep(state):
                return _lost(state, event.now, named)
            state = _answered_elsewhere(state, named, commands)
            turn = _turn(state)
        session_id = named or state.session_id
        same = session_id == state.session_id
        turns = state.turns if same else 0
        if not event.interrupted:
            turns += 1
        usage = event.usage if event.usage is not None else (state.usage if same else None)
        if turn.replaced or turn.switched:
            continuity = Continuity.REPLACED
        elif turn.cold_start:
            continuity = Continuity.RESET
        elif event.respawned:
            continuity = Continuity.RESUMED
        else:
            continuity = Continuity.CONTINUED
        state = replace(
            state,
            phase=Phase.IDLE,
            turn=None,
            session_id=session_id,
            usage=usage,
            turns=turns,
            last_active=event.now,
            reset_pending=False,
        )
        retire = (
            not event.interrupted
            and not turn.holds_conversation
            and self._budget_reached(turns, event)
        )
        if retire:
            state = _forget(state, commands, lk.CONVERSATION_RETIRED, "renewal budget reached")
        elif session_id is not None:
            commands.append(SaveCheckpoint(session_id, usage, turns))
        else:
            commands.append(ClearCheckpoint())
        commands.append(FinishTurn(continuity, session_id))
        return state, tuple(commands)

    def _budget_reached(self, turns: int, event: Succeeded) -> bool:
        budget = self.renewal
        if budget is None:
            return False
        return (
            (budget.max_turns is not None and turns >= budget.max_turns)
            or (
                budget.max_turn_input_tokens is not None
                and event.input_tokens >= budget.max_turn_input_tokens
            )
            or (
                budget.max_turn_duration is not None
                and event.duration_s >= budget.max_turn_duration
            )
        )

    def _failed(self, state: PolicyState, event: Failed) -> Step:
        _expect(state, event, Phase.OPENING, Phase.EXECUTING)
        outcome = event.outcome
        commands: list[Command] = []
        if (
            outcome is not FailureOutcome.RESUME_REFUSED
            and event.session_id is not None
            and event.session_id != state.session_id
        ):
            state = _answered_elsewhere(state, event.session_id, commands)
        turn = replace(_turn(state), attempted=True)
        state = replace(state, turn=turn)
        holds = turn.holds_conversation

        if outcome is FailureKind.TRANSIENT:
            wait = self.retry.delay(
                turn.retries, sample=event.sample, retry_after=event.retry_after
            )
            if wait is None:
                return _fail(state, event.now, outcome, commands)
            retry = turn.retries + 1
            state = replace(state, phase=Phase.WAITING, turn=replace(turn, retries=retry))
            commands.append(
                Notify(
                    lk.RETRY_SCHEDULED,
                    f"transient failure; retry {retry} of {self.retry.max_retries} in {wait:g} s",
                )
            )
            commands.append(WaitBeforeRetry(wait, retry, self.retry.max_retries))
            return state, tuple(commands)

        if outcome is FailureOutcome.RESUME_REFUSED:
            if turn.resumed and holds:
                return _fail(state, event.now, outcome, commands)
            if turn.resumed and not turn.replaced:
                state = _forget(
                    state, commands, lk.CONVERSATION_REPLACED, "the provider refused the resume"
                )
                state = replace(state, turn=replace(_turn(state), replaced=True))
                state, more = _attempt(state)
                return state, (*commands, *more)
            state = _forget(
                state, commands, lk.CONVERSATION_FORGOTTEN, "the provider refused the resume"
            )
            return _fail(state, event.now, outcome, commands)

        forget = not holds and (
            outcome is FailureKind.CONTEXT_OVERFLOW
            or (outcome is FailureKind.OTHER and turn.resumed)
        )
        if forget:
            state = _forget(state, commands, lk.CONVERSATION_FORGOTTEN, outcome.value)
        return _fail(state, event.now, outcome, commands)

    def _cancelled(self, state: PolicyState, event: Cancelled) -> Step:
        _expect(state, event, Phase.OPENING, Phase.EXECUTING)
        turn = _turn(state)
        state = replace(state, phase=Phase.IDLE, turn=None, last_active=event.now)
        return state, (FailTurn(FailureOutcome.INTERRUPTED, cancelled=not turn.attempted),)

    def _waited(self, state: PolicyState, event: Waited) -> Step:
        _expect(state, event, Phase.WAITING)
        if event.stopped:
            return _fail(state, event.now, FailureKind.TRANSIENT, [])
        return _attempt(state)

    def _abort(self, state: PolicyState, event: Abort) -> Step:
        _expect(state, event, Phase.OPENING, Phase.EXECUTING, Phase.WAITING)
        return _fail(state, event.now, FailureOutcome.ERROR, [])

    # -- between turns ----------------------------------------------------------------

    def _adopt(self, state: PolicyState, event: Adopt) -> Step:
        _expect(state, event, Phase.IDLE)
        commands: list[Command] = []
        if state.live:
            commands.append(CloseConversation())
        commands.append(SaveCheckpoint(event.session_id, event.usage, 0))
        return replace(
            state,
            session_id=event.session_id,
            usage=event.usage,
            turns=0,
            live=False,
            reset_pending=False,
        ), tuple(commands)

    def _resync(self, state: PolicyState, event: Resync) -> Step:
        _expect(state, event, Phase.IDLE)
        if event.session_id == state.session_id:
            return replace(state, usage=event.usage, turns=event.turns), ()
        commands: tuple[Command, ...] = (CloseConversation(),) if state.live else ()
        return replace(
            state,
            session_id=event.session_id,
            usage=event.usage,
            turns=event.turns,
            live=False,
            reset_pending=event.session_id is None,
        ), commands

    def _release(self, state: PolicyState) -> Step:
        _expect(state, Release(), Phase.IDLE, Phase.CLOSED)
        if not state.live:
            return state, ()
        return replace(state, live=False), (CloseConversation(),)

    def _close(self, state: PolicyState) -> Step:
        _expect(state, Close(), Phase.IDLE, Phase.CLOSED)
        if state.closed:
            return state, ()
        commands: tuple[Command, ...] = (CloseConversation(),) if state.live else ()
        return replace(state, phase=Phase.CLOSED, live=False), commands


def _expect(state: PolicyState, event: Event, *phases: Phase) -> None:
    if state.phase not in phases:
        raise ValueError(
            f"{type(event).__name__} cannot happen while the session is {state.phase.value}"
        )


def _turn(state: PolicyState) -> TurnProgress:
    if state.turn is None:
        raise ValueError(f"no turn is running while the session is {state.phase.value}")
    return state.turn


def _refusal(state: PolicyState, expect: str | None) -> RefuseTurn | None:
    if state.closed:
        return RefuseTurn(Refusal.CLOSED)
    if expect is not None and expect != state.session_id:
        return RefuseTurn(Refusal.CONTINUITY, expected=expect, actual=state.session_id)
    return None


def _attempt(state: PolicyState) -> Step:
    """Dispatch the next attempt: reopen the conversation if none is live, else execute."""
    turn = replace(_turn(state), resumed=state.session_id is not None)
    if state.live:
        return replace(state, phase=Phase.EXECUTING, turn=turn), (
            ExecuteTurn(resumed=turn.resumed, attempt=turn.retries + 1),
        )
    return replace(state, phase=Phase.OPENING, turn=turn), (
        OpenConversation(state.session_id, state.usage),
    )


def _adopt_named(state: PolicyState, session_id: str, commands: list[Command]) -> PolicyState:
    """The provider named a conversation the session did not hold: keep and checkpoint it."""
    commands.append(SaveCheckpoint(session_id, None, 0))
    return replace(state, session_id=session_id, usage=None, turns=0, reset_pending=False)


def _answered_elsewhere(
    state: PolicyState, session_id: str, commands: list[Command]
) -> PolicyState:
    """The provider named a conversation the session did not hold.

    A fresh attempt's new id is simply adopted. A resumed attempt answered elsewhere lost its
    conversation: an ordinary turn adopts the new one (continuity REPLACED), while a strict or
    pinned turn keeps the one it holds.
    """
    turn = state.turn
    if turn is None or not turn.resumed:
        return _adopt_named(state, session_id, commands)
    commands.append(_lost_notice(state.session_id, session_id))
    if turn.holds_conversation:
        # The live conversation now follows the other one; reopen the held one by id.
        if state.live:
            commands.append(CloseConversation())
        return replace(state, live=False)
    state = _adopt_named(state, session_id, commands)
    return replace(state, turn=replace(turn, switched=True, resumed=False))


def _must_keep(state: PolicyState) -> bool:
    """A strict or pinned turn is continuing the conversation the session holds."""
    turn = _turn(state)
    return turn.resumed and turn.holds_conversation


def _lost(state: PolicyState, now: float | None, named: str) -> Step:
    """End a strict or pinned turn answered in another conversation, keeping the held one."""
    expected = state.session_id
    commands: list[Command] = [_lost_notice(expected, named)]
    if state.live:
        commands.append(CloseConversation())
    state = replace(state, phase=Phase.IDLE, turn=None, live=False, last_active=now)
    commands.append(RefuseTurn(Refusal.CONVERSATION_LOST, expected=expected, actual=named))
    return state, tuple(commands)


def _lost_notice(expected: str | None, actual: str) -> Notify:
    return Notify(
        lk.CONVERSATION_LOST,
        f"resumed {expected} but the provider answered in another conversation, {actual}",
    )


def _forget(state: PolicyState, commands: list[Command], kind: str, why: str) -> PolicyState:
    """Drop the conversation: close it, clear the checkpoint, start the next turn cold."""
    if state.live:
        commands.append(CloseConversation())
    commands.append(ClearCheckpoint())
    if state.session_id is not None:
        commands.append(Notify(kind, f"{state.session_id}: {why}"))
    return replace(state, session_id=None, usage=None, turns=0, live=False, reset_pending=True)


def _fail(
    state: PolicyState, now: float, outcome: FailureKind | FailureOutcome, commands: list[Command]
) -> Step:
    state = replace(state, phase=Phase.IDLE, turn=None, last_active=now)
    return state, (*commands, FailTurn(outcome))
