"""FakeTransport and FakeConversation: a transport driven by a script of turn outcomes.

Script what each turn attempt does, in order, with :class:`FakeOutcome`: succeed (naming a
conversation id, reporting usage), fail with any FailureKind, refuse a resume, time out, hang
until interrupted, or raise any error. The transport records every conversation it opened and
every turn it ran, so a test asserts on what a Session did without a CLI, a process or a
clock::

    transport = FakeTransport([FakeOutcome.failure(FailureKind.TRANSIENT), FakeOutcome.success("hi")])
    session = Session(transport, spec, clock=FakeClock())
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from agentshim.core.conversation import ConversationSpec, TransportKind, TurnSlot, TurnStop
from agentshim.core.errors import (
    FailureKind,
    NoRunningTurnError,
    ProviderCapabilityError,
    SessionResumeError,
    TurnCancelledError,
    TurnFailedError,
    TurnTimeoutError,
)
from agentshim.core.events import (
    AgentEvent,
    AssistantText,
    Emit,
    RunFinished,
    RunStarted,
    SessionStarted,
    TurnInterrupted,
    UsageReport,
)
from agentshim.core.permissions import NativeMode
from agentshim.core.profile import ProviderProfile
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.core.usage import ProviderUsage, TokenUsage

__all__ = [
    "FAKE_PROFILE",
    "FakeCall",
    "FakeConversation",
    "FakeOutcome",
    "FakeSteerableConversation",
    "FakeTransport",
]

FAKE_PROFILE = ProviderProfile(
    name="fake",
    display_name="Fake agent",
    binary="fake-agent",
    supports_resume=True,
    supports_reasoning_effort=True,
    native_permission_modes=(NativeMode.BYPASS, NativeMode.READ_ONLY, NativeMode.WORKSPACE_WRITE),
)
"""The profile a FakeTransport reports unless given another: resumable, every native mode."""


@dataclass(frozen=True, slots=True)
class FakeOutcome:
    """What one scripted turn attempt does; build one with the class methods.

    ``kind`` names the class method that built it (``"success"``, ``"failure"``,
    ``"resume_refused"``, ``"timeout"``, ``"hang"`` or ``"raise"``).
    """

    kind: Literal["success", "failure", "resume_refused", "timeout", "hang", "raise"]
    text: str = ""
    session_id: str | None = None
    usage: TokenUsage | None = None
    duration_ms: int = 0
    interrupted: bool = False
    failure_kind: FailureKind = FailureKind.OTHER
    detail: str = ""
    retry_after: float | None = None
    seconds: float = 0.0
    raise_cancelled: bool = False
    error: BaseException | None = None
    events: tuple[AgentEvent, ...] = ()

    @classmethod
    def success(
        cls,
        text: str = "ok",
        *,
        session_id: str | None = None,
        usage: TokenUsage | None = None,
        duration_ms: int = 0,
        interrupted: bool = False,
        events: Sequence[AgentEvent] = (),
    ) -> FakeOutcome:
        """The turn answers ``text``.

        A fresh conversation is named ``session_id`` (or the transport's next ``conv-N``);
        a resumed one keeps its id unless ``session_id`` names another. ``events`` are
        emitted before the answer.
        """
        return cls(
            "success",
            text=text,
            session_id=session_id,
            usage=usage,
            duration_ms=duration_ms,
            interrupted=interrupted,
            events=tuple(events),
        )

    @classmethod
    def failure(
        cls,
        kind: FailureKind,
        *,
        session_id: str | None = None,
        detail: str = "",
        retry_after: float | None = None,
    ) -> FakeOutcome:
        """The turn fails with a TurnFailedError of ``kind``.

        ``session_id`` is a conversation the provider named before failing;
        ``retry_after`` is set on the error as the provider's own retry hint.
        """
        return cls(
            "failure",
            failure_kind=kind,
            session_id=session_id,
            detail=detail,
            retry_after=retry_after,
        )

    @classmethod
    def resume_refused(cls) -> FakeOutcome:
        """The provider no longer has the conversation: SessionResumeError."""
        return cls("resume_refused")

    @classmethod
    def timeout(cls, seconds: float = 60.0) -> FakeOutcome:
        """The turn overruns its budget: TurnTimeoutError."""
        return cls("timeout", seconds=seconds)

    @classmethod
    def hang(cls, *, raise_cancelled: bool = False, limit: float = 30.0) -> FakeOutcome:
        """The turn runs until ``interrupt()`` (real time, at most ``limit``).

        Interrupted, it returns a result marked interrupted (with a TurnInterrupted event), or
        raises TurnCancelledError with ``raise_cancelled``; past ``limit`` it raises
        TurnTimeoutError, so a test that forgets to interrupt fails instead of hanging.
        """
        return cls("hang", seconds=limit, raise_cancelled=raise_cancelled)

    @classmethod
    def raises(cls, error: BaseException) -> FakeOutcome:
        """The turn raises ``error`` as it is."""
        return cls("raise", error=error)


@dataclass(frozen=True, slots=True)
class FakeCall:
    """One turn attempt the transport ran: where, with what, and how it ended."""

    conversation: FakeConversation
    request: TurnRequest
    session_id: str | None
    """The conversation's id when the attempt started (None: a fresh conversation)."""
    outcome: FakeOutcome

    @property
    def resumed(self) -> bool:
        """Whether the attempt continued an already named conversation."""
        return self.session_id is not None


Script = Iterable[FakeOutcome] | Callable[["FakeCall"], FakeOutcome]


@dataclass
class _Counters:
    conversations: int = 0
    ids: int = 0


class FakeTransport:
    """A Transport whose turns follow a script of outcomes, one per attempt, in order.

    ``script`` is a sequence of FakeOutcome, or a function given a FakeCall (whose
    ``outcome`` is a placeholder) returning one. ``open`` refuses a spec whose native
    permissions ``profile`` does not list, as a real transport would.

    Attributes:
        opened: Every spec ``open`` was called with, in order.
        conversations: Every conversation opened, in order.
        calls: Every turn attempt, in order.
    """

    def __init__(
        self,
        script: Script = (),
        *,
        profile: ProviderProfile = FAKE_PROFILE,
        steerable: bool = False,
    ) -> None:
        self._profile = profile
        self._steerable = steerable
        self.kind = TransportKind.LONG_LIVED if steerable else TransportKind.ONE_SHOT
        self._lock = threading.Lock()
        self._function: Callable[[FakeCall], FakeOutcome] | None = None
        self._queue: list[FakeOutcome] = []
        if callable(script):
            self._function = script
        else:
            self._queue = list(script)
        self._counters = _Counters()
        self.opened: list[ConversationSpec] = []
        self.conversations: list[FakeConversation] = []
        self.calls: list[FakeCall] = []

    @property
    def profile(self) -> ProviderProfile:
        """The profile this fake reports."""
        return self._profile

    def extend(self, outcomes: Iterable[FakeOutcome]) -> None:
        """Append outcomes to the script."""
        with self._lock:
            self._queue.extend(outcomes)

    @property
    def remaining(self) -> int:
        """How many scripted outcomes have not been used."""
        with self._lock:
            return len(self._queue)

    def open(self, spec: ConversationSpec) -> FakeConversation:
        """Open a conversation (named ``spec.resume_session_id`` when resuming).

        Raises:
            ProviderCapabilityError: the profile does not list ``spec.permissions.mode``.
        """
        if spec.permissions.mode not in self._profile.native_permission_modes:
            raise ProviderCapabilityError(
                f"{self._profile.display_name} cannot run with {spec.permissions.mode.value} "
                "permissions"
            )
        with self._lock:
            self._counters.conversations += 1
            number = self._counters.conversations
        kind = FakeSteerableConversation if self._steerable else FakeConversation
        conversation = kind(self, spec, number)
        with self._lock:
            self.opened.append(spec)
            self.conversations.append(conversation)
        return conversation

    def _new_id(self) -> str:
        with self._lock:
            self._counters.ids += 1
            return f"conv-{self._counters.ids}"

    def _next(self, conversation: FakeConversation, request: TurnRequest) -> FakeCall:
        placeholder = FakeOutcome("success")
        started_in = conversation.session_id
        outcome = placeholder
        with self._lock:
            function = self._function
            if function is None:
                if not self._queue:
                    raise AssertionError(
                        f"FakeTransport script is used up: turn attempt {len(self.calls) + 1} "
                        f"({request.prompt[:60]!r}) has no outcome; script one more"
                    )
                outcome = self._queue.pop(0)
        if function is not None:
            outcome = function(FakeCall(conversation, request, started_in, placeholder))
        call = FakeCall(conversation, request, started_in, outcome)
        with self._lock:
            self.calls.append(call)
        return call


class FakeConversation:
    """A conversation of a FakeTransport; each turn plays the transport's next outcome.

    Attributes:
        spec: The spec it was opened with.
        number: 1 for the transport's first conversation, 2 for the next, ...
        interrupts: How many turns were stopped while running (by ``interrupt()`` or their
            ``stop``).
        cancelled_before_start: How many turns were stopped before they began.
        closed: Whether ``close()`` was called.
    """

    def __init__(self, transport: FakeTransport, spec: ConversationSpec, number: int) -> None:
        self._transport = transport
        self.spec = spec
        self.number = number
        self._id = spec.resume_session_id
        self._lock = threading.Lock()
        self._slot = TurnSlot("this fake conversation")
        self.interrupts = 0
        self.cancelled_before_start = 0

    @property
    def session_id(self) -> str | None:
        """The conversation's id; None until a turn names one."""
        with self._lock:
            return self._id

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._slot.closed

    def turn(self, request: TurnRequest, emit: Emit, stop: TurnStop | None = None) -> TurnResult:
        """Play the next scripted outcome; events go to ``emit`` on this thread.

        A ``stop`` already requested makes the turn raise TurnCancelledError without playing
        an outcome; one requested while a hanging outcome plays ends it.
        """
        turn_stop = self._slot.begin(stop)
        if turn_stop.is_set():
            self._slot.end()
            with self._lock:
                self.cancelled_before_start += 1
            raise TurnCancelledError("the fake turn was stopped before it began")
        detach = turn_stop.attach(self._count_interrupt)
        try:
            call = self._transport._next(self, request)  # pyright: ignore[reportPrivateUsage]
            return self._play(call, emit, turn_stop)
        finally:
            detach()
            self._slot.end()

    def _count_interrupt(self) -> None:
        with self._lock:
            self.interrupts += 1

    def _play(self, call: FakeCall, emit: Emit, stop: TurnStop) -> TurnResult:
        outcome = call.outcome
        emit(
            RunStarted(
                ("fake-agent", "--resume", call.session_id)
                if call.session_id is not None
                else ("fake-agent",)
            )
        )
        if outcome.kind == "success":
            self._name(outcome.session_id, emit, fresh_default=True)
            for event in outcome.events:
                emit(event)
            if outcome.text:
                emit(AssistantText(outcome.text))
            usage = ProviderUsage(
                tokens=outcome.usage or TokenUsage(),
                provider=self._transport.profile.name,
                increment_known=outcome.usage is not None,
            )
            emit(UsageReport(usage))
            if outcome.interrupted:
                emit(TurnInterrupted())
            emit(RunFinished(0))
            return self._result(call, usage, outcome.text, outcome.interrupted)
        if outcome.kind == "failure":
            self._name(outcome.session_id, emit, fresh_default=False)
            emit(RunFinished(1))
            error = TurnFailedError(
                f"fake turn failed ({outcome.failure_kind.value}): {outcome.detail or 'scripted'}",
                kind=outcome.failure_kind,
                detail=outcome.detail,
                retry_after=outcome.retry_after,
            )
            raise error
        if outcome.kind == "resume_refused":
            emit(RunFinished(1))
            raise SessionResumeError(
                ("fake-agent", "--resume", str(call.session_id)),
                1,
                stderr=f"no conversation {call.session_id}\n",
                session_id=call.session_id,
            )
        if outcome.kind == "timeout":
            emit(RunFinished(None))
            raise TurnTimeoutError(outcome.seconds)
        if outcome.kind == "hang":
            return self._hang(call, emit, stop)
        if outcome.error is None:  # pragma: no cover - raises() always sets it
            raise AssertionError("FakeOutcome.raises needs an error")
        raise outcome.error

    def _hang(self, call: FakeCall, emit: Emit, stop: TurnStop) -> TurnResult:
        outcome = call.outcome
        if not stop.wait(outcome.seconds):
            emit(RunFinished(None))
            raise TurnTimeoutError(outcome.seconds)
        emit(RunFinished(-15))
        if outcome.raise_cancelled:
            raise TurnCancelledError("the fake turn was interrupted")
        emit(TurnInterrupted())
        usage = ProviderUsage(provider=self._transport.profile.name, increment_known=False)
        # Ended by SIGTERM, as a CLI stopped by an interrupt is.
        return replace(self._result(call, usage, "", interrupted=True), exit_code=-15)

    def _result(
        self, call: FakeCall, usage: ProviderUsage, text: str, interrupted: bool
    ) -> TurnResult:
        """What ``call`` returns when it ends with ``text``: in this conversation's session."""
        return TurnResult(
            text=text,
            structured_output=None,
            session_id=self.session_id,
            resumed=call.resumed,
            usage=usage,
            duration_ms=call.outcome.duration_ms,
            interrupted=interrupted,
        )

    def _name(self, named: str | None, emit: Emit, *, fresh_default: bool) -> None:
        with self._lock:
            current = self._id
        new = named
        if new is None and current is None and fresh_default:
            new = self._transport._new_id()  # pyright: ignore[reportPrivateUsage]
        if new is not None and new != current:
            with self._lock:
                self._id = new
            emit(SessionStarted(new))

    def interrupt(self) -> None:
        """End a running turn (a hanging one returns interrupted); otherwise do nothing."""
        self._slot.interrupt()

    def close(self) -> None:
        """Refuse further turns; idempotent."""
        self._slot.close()


class FakeSteerableConversation(FakeConversation):
    """A FakeConversation that also takes ``steer(text)`` mid-turn (a long-lived transport).

    Attributes:
        steered: Every text steered into a running turn, in order.
    """

    def __init__(self, transport: FakeTransport, spec: ConversationSpec, number: int) -> None:
        super().__init__(transport, spec, number)
        self.steered: list[str] = []

    def steer(self, text: str) -> None:
        """Record ``text``; NoRunningTurnError when no turn is running."""
        with self._lock:
            if not self._slot.running:
                raise NoRunningTurnError("no turn is running in this fake conversation")
            self.steered.append(text)
