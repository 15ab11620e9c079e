"""Random event sequences through SessionPolicy, checking its invariants after every step."""

from __future__ import annotations

from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
)

from agentshim.core.errors import FailureKind
from agentshim.core.profile import RenewalBudget
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
    FailureOutcome,
    FinishTurn,
    Notify,
    OpenConversation,
    Opened,
    Phase,
    Prepare,
    Refusal,
    RefuseTurn,
    Release,
    Resync,
    RetryPolicy,
    SaveCheckpoint,
    SessionPolicy,
    Start,
    Succeeded,
    WaitBeforeRetry,
    Waited,
)

IDS = st.sampled_from(["c1", "c2", "c3"])
MAYBE_ID = st.none() | IDS
# Transient failures and refused resumes drive the interesting paths, so they come up more.
OUTCOMES = st.sampled_from(
    [FailureKind.TRANSIENT] * 4
    + [FailureOutcome.RESUME_REFUSED] * 4
    + [*FailureKind, *FailureOutcome]
)
EXPECT = st.sampled_from(["none"] * 6 + ["held", "other"])
TERMINALS = (FinishTurn, FailTurn, RefuseTurn)


class PolicyMachine(RuleBasedStateMachine):
    """A model of what the interpreter sees, checked against every command the policy emits."""

    def __init__(self) -> None:
        super().__init__()
        self.policy = SessionPolicy()
        self.state = self.policy.initial()
        self.now = 0.0
        self.checkpoint: str | None = None
        self.live = False
        self.awaiting: str | None = None
        self.in_run = False
        self.terminals = 0
        self.waits = 0
        self.holds = False
        self.held: str | None = None
        self.resume_refused_in_run = False
        self.switched_in_run = False
        self.closed = False

    @initialize(
        delays=st.lists(st.integers(0, 100), min_size=1, max_size=4) | st.just([]),
        max_turns=st.none() | st.integers(1, 4),
        max_tokens=st.none() | st.integers(1, 1000),
        idle=st.none() | st.integers(0, 50),
        start_with=MAYBE_ID,
    )
    def setup(
        self,
        delays: list[int],
        max_turns: int | None,
        max_tokens: int | None,
        idle: int | None,
        start_with: str | None,
    ) -> None:
        renewal = (
            RenewalBudget(max_turns=max_turns, max_turn_input_tokens=max_tokens)
            if max_turns or max_tokens
            else None
        )
        self.policy = SessionPolicy(
            retry=RetryPolicy(delays=[float(d) for d in delays]),
            renewal=renewal,
            idle_release_after=None if idle is None else float(idle),
        )
        self.state = self.policy.initial(start_with)
        # The session loaded this checkpoint (or saved the explicit resume id) at construction.
        self.checkpoint = start_with

    # -- feeding the policy and checking its commands --------------------------------------

    def feed(self, event: Event) -> tuple[Command, ...]:
        self.state, commands = self.policy.step(self.state, event)
        for index, command in enumerate(commands):
            if isinstance(command, TERMINALS):
                assert index == len(commands) - 1, f"{command} is not the last command"
            self.apply(command)
        return commands

    def apply(self, command: Command) -> None:
        if isinstance(command, OpenConversation):
            assert not self.live, "opened a conversation while one is live"
            assert command.resume_session_id == self.state.session_id
            self.awaiting = "open"
        elif isinstance(command, ExecuteTurn):
            assert self.live, "executed a turn without a live conversation"
            self.awaiting = "execute"
        elif isinstance(command, WaitBeforeRetry):
            self.waits += 1
            assert self.waits <= self.policy.retry.max_retries, "retried beyond the policy"
            assert command.seconds >= 0
            self.awaiting = "wait"
        elif isinstance(command, CloseConversation):
            assert self.live, "closed a conversation that is not live"
            self.live = False
        elif isinstance(command, SaveCheckpoint):
            self.checkpoint = command.session_id
        elif isinstance(command, ClearCheckpoint):
            if self.holds:
                assert self.held is None, "a strict or pinned turn lost its conversation"
            self.checkpoint = None
        elif isinstance(command, Notify):
            pass
        else:
            self.end_run(command)

    def end_run(self, command: FinishTurn | FailTurn | RefuseTurn) -> None:
        self.terminals += 1
        assert self.terminals == 1, "a run ended twice"
        if isinstance(command, FinishTurn) and command.continuity is Continuity.REPLACED:
            assert self.resume_refused_in_run or self.switched_in_run, (
                "REPLACED without a refused resume or a resume answered elsewhere"
            )
        if self.in_run and self.holds and self.held is not None:
            assert self.state.session_id == self.held, "a held conversation was lost"
        self.in_run = False
        self.awaiting = None

    # -- between turns -----------------------------------------------------------------

    @precondition(lambda self: not self.in_run)
    @rule(advance=st.integers(0, 100), expect=EXPECT)
    def prepare(self, advance: int, expect: str) -> None:
        self.now += advance
        expected = self._expected(expect)
        self.terminals = 0
        commands = self.feed(Prepare(self.now, expected))
        refusals = [c for c in commands if isinstance(c, RefuseTurn)]
        if self.closed:
            assert refusals == [RefuseTurn(Refusal.CLOSED)]
        elif expected is not None and expected != self.state.session_id:
            assert refusals
            assert refusals[0].reason is Refusal.CONTINUITY
        else:
            assert not refusals

    @precondition(lambda self: not self.in_run)
    @rule(
        advance=st.integers(0, 100),
        expect=EXPECT,
        pin=st.booleans(),
    )
    def start(self, advance: int, expect: str, pin: bool) -> None:
        self.now += advance
        expected = self._expected(expect)
        self.in_run = True
        self.terminals = 0
        self.waits = 0
        self.resume_refused_in_run = False
        self.switched_in_run = False
        self.holds = expected is not None or pin
        self.held = self.state.session_id
        commands = self.feed(Start(f"t{self.now}", self.now, expected, pin))
        if self.closed:
            assert commands == (RefuseTurn(Refusal.CLOSED),), "a closed session ran a turn"
        if isinstance(commands[-1], RefuseTurn):
            assert self.terminals == 1
            assert not self.in_run
        else:
            assert self.state.phase in (Phase.OPENING, Phase.EXECUTING)

    def _expected(self, expect: str) -> str | None:
        if expect == "held":
            return self.state.session_id or "c1"
        if expect == "other":
            return "c-other"
        return None

    @precondition(lambda self: not self.in_run and not self.closed)
    @rule(session_id=IDS)
    def adopt(self, session_id: str) -> None:
        self.feed(Adopt(session_id))
        assert self.state.session_id == session_id

    @precondition(lambda self: not self.in_run and not self.closed)
    @rule(session_id=MAYBE_ID, turns=st.integers(0, 5))
    def resync(self, session_id: str | None, turns: int) -> None:
        """Another process moved the conversation on; the store says so under the lease."""
        before = self.state
        commands = self.feed(Resync(session_id, None, turns))
        self.checkpoint = session_id  # read from the store, not saved back
        assert not any(isinstance(c, SaveCheckpoint | ClearCheckpoint) for c in commands)
        assert (self.state.session_id, self.state.turns) == (session_id, turns)
        if session_id != before.session_id:
            assert not self.state.live, "kept a conversation the store no longer names"
        else:
            assert self.state.live == before.live

    @precondition(lambda self: not self.in_run)
    @rule()
    def release(self) -> None:
        before = self.state.session_id
        self.feed(Release())
        assert self.state.session_id == before
        assert not self.live

    @precondition(lambda self: not self.in_run)
    @rule(roll=st.integers(0, 9))
    def close(self, roll: int) -> None:
        if roll:  # closing ends everything interesting, so only now and then
            return
        self.feed(Close())
        self.closed = True
        assert self.state.closed

    # -- answering what the policy awaits ------------------------------------------------

    @precondition(lambda self: self.awaiting is not None)
    @rule(data=st.data())
    def respond(self, data: st.DataObject) -> None:
        """Answer what the policy awaits, mostly the way a healthy transport would."""
        awaited, self.awaiting = self.awaiting, None  # the answer must ask for the next one
        if awaited == "wait":
            self.now += 1
            stopped = data.draw(st.sampled_from([False, False, False, True]), label="stopped")
            commands = self.feed(Waited(self.now, stopped))
            if stopped:
                assert isinstance(commands[-1], FailTurn)
            return
        if awaited == "open":
            choices = ["opened"] * 4 + ["failed", "cancelled", "abort"]
        else:
            choices = ["succeeded"] * 3 + ["failed"] * 3 + ["cancelled", "abort"]
        choice = data.draw(st.sampled_from(choices), label="response")
        if choice == "opened":
            self.live = True
            named = data.draw(MAYBE_ID, label="named")
            before = self.state.session_id
            elsewhere = self.answered_elsewhere(named)
            commands = self.feed(Opened(named))
            self.check_answer_elsewhere(elsewhere, before, named, commands)
        elif choice == "succeeded":
            self.now += 1
            named = data.draw(MAYBE_ID, label="named")
            before = self.state.session_id
            elsewhere = self.answered_elsewhere(named)
            event = Succeeded(
                self.now,
                named,
                None,
                data.draw(st.booleans(), label="interrupted"),
                data.draw(st.integers(0, 2000), label="tokens"),
                data.draw(st.floats(0, 100), label="duration"),
            )
            commands = self.feed(event)
            if not self.check_answer_elsewhere(elsewhere, before, named, commands):
                assert isinstance(commands[-1], FinishTurn)
                if elsewhere:
                    assert commands[-1].continuity is Continuity.REPLACED
        elif choice == "failed":
            outcome = data.draw(OUTCOMES, label="outcome")
            if outcome is FailureOutcome.RESUME_REFUSED:
                self.resume_refused_in_run = True
            self.now += 1
            named = data.draw(MAYBE_ID, label="named")
            if outcome is not FailureOutcome.RESUME_REFUSED:
                self.answered_elsewhere(named)
            self.feed(
                Failed(
                    self.now,
                    outcome,
                    named,
                    retry_after=data.draw(st.none() | st.floats(0, 2000), label="hint"),
                    sample=data.draw(st.floats(0, 1, exclude_max=True), label="sample"),
                )
            )
        elif choice == "cancelled":
            assert isinstance(self.feed(Cancelled(self.now))[-1], FailTurn)
        else:
            assert isinstance(self.feed(Abort(self.now))[-1], FailTurn)

    def answered_elsewhere(self, named: str | None) -> bool:
        """Whether a result naming ``named`` answers a resumed attempt in another conversation.

        An ordinary turn then switches to that conversation (so REPLACED is expected); the
        flag is set before the event is fed, because the run may end inside ``feed``.
        """
        turn = self.state.turn
        assert turn is not None
        elsewhere = turn.resumed and named is not None and named != self.state.session_id
        if elsewhere and not self.holds:
            self.switched_in_run = True
        return elsewhere

    def check_answer_elsewhere(
        self, elsewhere: bool, before: str | None, named: str | None, commands: tuple[Command, ...]
    ) -> bool:
        """A held turn answered elsewhere ends refused, keeping its conversation; True if so."""
        if not elsewhere:
            return False
        notices = [c for c in commands if isinstance(c, Notify)]
        assert any(n.kind == "conversation_lost" for n in notices)
        if not self.holds:
            return False
        assert commands[-1] == RefuseTurn(Refusal.CONVERSATION_LOST, expected=before, actual=named)
        assert self.state.session_id == before
        return True

    @rule(event=st.sampled_from(["opened", "succeeded", "waited", "start", "adopt"]))
    def an_impossible_event_is_refused(self, event: str) -> None:
        impossible: dict[str, tuple[Event, bool]] = {
            "opened": (Opened("c1"), self.awaiting != "open"),
            "succeeded": (Succeeded(self.now), self.awaiting != "execute"),
            "waited": (Waited(self.now), self.awaiting != "wait"),
            "start": (Start("t", self.now), self.in_run),
            "adopt": (Adopt("c1"), self.in_run or self.closed),
        }
        candidate, cannot_happen = impossible[event]
        if not cannot_happen:
            return
        before = self.state
        try:
            self.policy.step(self.state, candidate)
        except ValueError:
            pass
        else:
            raise AssertionError(f"{candidate} was accepted in phase {before.phase}")
        assert self.state == before

    # -- invariants ----------------------------------------------------------------------

    @invariant()
    def the_checkpoint_names_the_retained_conversation(self) -> None:
        assert self.checkpoint == self.state.session_id

    @invariant()
    def the_model_agrees_about_the_live_conversation(self) -> None:
        assert self.state.live == self.live

    @invariant()
    def between_runs_the_session_is_idle_or_closed(self) -> None:
        if not self.in_run:
            assert self.state.phase in (Phase.IDLE, Phase.CLOSED)
            assert self.state.turn is None
        else:
            assert self.state.phase in (Phase.OPENING, Phase.EXECUTING, Phase.WAITING)

    @invariant()
    def a_run_awaits_exactly_one_result_until_it_ends(self) -> None:
        # Otherwise the interpreter would have nothing to do and no Finish or Fail to return.
        phases = {"open": Phase.OPENING, "execute": Phase.EXECUTING, "wait": Phase.WAITING}
        if self.in_run:
            assert self.awaiting is not None, "a run stalled without finishing or failing"
            assert self.state.phase is phases[self.awaiting]
        else:
            assert self.awaiting is None

    @invariant()
    def a_closed_session_stays_closed(self) -> None:
        assert self.state.closed == self.closed


PolicyMachine.TestCase.settings = settings(
    max_examples=150,
    stateful_step_count=30,
)
TestSessionPolicyMachine = PolicyMachine.TestCase
