"""One verb per action, handlers as plain functions, and stop outcomes by timing.

``Session.turn`` with a request, a prompt or a ticket; every door that takes an event handler
taking a plain function too; ``interrupt()`` at both doors (``AgentSession`` and ``Session``)
before a turn, while it waits, while its CLI runs, as it ends and after it, with the same
outcome; one serialization (leases) per (provider, session id), shared by both doors.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable

import pytest

from agentshim.agent import Agent
from agentshim.cli_agent import AgentSession, CliAgent
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import ContinuityError, InvalidRequestError, TurnCancelledError
from agentshim.core.events import AgentEvent, AssistantText, RunFinished, TurnInterrupted
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.execution.executor import CommandRequest, CommandResult, CommandStreamSink
from agentshim.oneshot import OneShotTransport
from agentshim.providers import get_plugin
from agentshim.session import Session, Turn
from agentshim.state.leases import InMemoryLeases, LeaseHolder, conversation_key
from agentshim.testing import FakeExecutor, FakeRun, RecordingEventHandler, scripted_turn
from agentshim.testing.clock import SequentialIds
from agentshim.testing.conversation import FakeOutcome, FakeTransport
from agentshim.transport.installed import InstalledCli

from .helpers import HANG_GUARD_S, ContendedLeases
from .scripted_claude import ENV, PROVIDER

BYPASS = NativePermissions.bypass()
DENY = ApprovalPolicy.DENY


def answer(text: str = "ok", session_id: str = "s-1") -> FakeRun:
    return scripted_turn(PROVIDER, text=text, session_id=session_id)


def claude_agent(executor: FakeExecutor, **kwargs: object) -> Agent:
    return Agent(PROVIDER, executor=executor, env=ENV, permissions=BYPASS, approvals=DENY, **kwargs)  # type: ignore[arg-type]


def texts(events: list[AgentEvent]) -> list[str]:
    return [event.text for event in events if isinstance(event, AssistantText)]


class Gate:
    """A run source whose first run blocks until released; later runs answer at once."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        self.runs = 0

    def __call__(self, request: CommandRequest) -> FakeRun:
        self.runs += 1
        if self.runs == 1:
            self.entered.set()
            self.release.wait(HANG_GUARD_S)
        return answer(f"run {self.runs}")


class InThread:
    """Runs ``call`` on its own thread and keeps what it returned or raised."""

    def __init__(self, call: Callable[[], object]) -> None:
        self.value: object = None
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self._run, args=(call,), daemon=True)
        self.thread.start()

    def _run(self, call: Callable[[], object]) -> None:
        try:
            self.value = call()
        except BaseException as error:
            self.error = error

    def join(self) -> None:
        self.thread.join(HANG_GUARD_S)
        assert not self.thread.is_alive(), "the turn did not end"


def take_turns_at_the_gate(
    gate: Gate, executor: FakeExecutor, first: Callable[[], object], second: Callable[[], object]
) -> None:
    """Runs ``first`` until its CLI run holds at ``gate``, then ``second`` on another thread.

    Checks the second run waits for the first (one conversation, one turn at a time), then
    lets the first finish and checks both ended without an error.
    """
    one = InThread(first)
    assert gate.entered.wait(HANG_GUARD_S)
    two = InThread(second)
    two.thread.join(0.2)
    assert len(executor.requests) == 1, "the second turn ran while the first did"
    gate.release.set()
    one.join()
    two.join()
    assert (one.error, two.error) == (None, None)
    assert len(executor.requests) == 2


# -- Session.turn: one verb for a request, a prompt or a ticket ----------------------------


class TestSessionTurn:
    def test_a_prompt_string_is_prepared_and_run_in_one_call(self) -> None:
        executor = FakeExecutor([answer("hi")])
        turn = claude_agent(executor, ids=SequentialIds()).start_session("/w").turn("hello")
        assert (turn.result.text, turn.turn_id, turn.session_id) == ("hi", "turn_1", "s-1")
        assert executor.requests[0].stdin == "hello"

    def test_a_turn_request_runs_with_its_own_settings(self) -> None:
        executor = FakeExecutor([answer("hi")])
        session = claude_agent(executor).start_session("/w")
        session.turn(TurnRequest("hello", timeout=30, cwd="/elsewhere"))
        assert (executor.requests[0].timeout, executor.requests[0].cwd) == (30, "/elsewhere")

    def test_a_ticket_runs_the_turn_it_named(self) -> None:
        session = claude_agent(FakeExecutor([answer("hi")]), ids=SequentialIds()).start_session()
        ticket = session.prepare_turn("hello")
        turn = session.turn(ticket)
        assert (turn.turn_id, turn.result.text) == (ticket.turn_id, "hi")

    @pytest.mark.parametrize("extra", [{"expect_session_id": "s-1"}, {"pin": True}])
    def test_expect_or_pin_given_with_a_ticket_is_refused(self, extra: dict[str, object]) -> None:
        executor = FakeExecutor([answer()])
        session = claude_agent(executor).start_session()
        ticket = session.prepare_turn("hello")
        with pytest.raises(InvalidRequestError, match="prepare_turn") as caught:
            session.turn(ticket, **extra)  # type: ignore[arg-type]
        assert caught.value.field == next(iter(extra))
        assert executor.requests == []
        assert session.turn(ticket).result.text == "ok", "the refused call spent the ticket"

    def test_expect_session_id_with_a_prompt_makes_the_turn_strict(self) -> None:
        executor = FakeExecutor([answer()])
        session = claude_agent(executor).start_session()
        with pytest.raises(ContinuityError):
            session.turn("hello", expect_session_id="s-other")
        assert executor.requests == []

    def test_pin_with_a_prompt_is_carried_to_the_turn(self) -> None:
        transport = FakeTransport([FakeOutcome.success("a", session_id="s-new")])
        session = Agent(transport, permissions=BYPASS, approvals=DENY).start_session()
        session.adopt("s-old")
        with pytest.raises(ContinuityError):
            session.turn("hello", pin=True)
        assert session.session_id == "s-old", "a pinned turn lost its conversation"

    def test_something_that_is_not_a_request_is_refused(self) -> None:
        session = claude_agent(FakeExecutor([answer()])).start_session()
        with pytest.raises(InvalidRequestError, match="TurnRequest or a prompt") as caught:
            session.turn(42)  # type: ignore[arg-type]
        assert caught.value.field == "Session.request"


# -- a plain function is a handler at every door ------------------------------------------


def cli(**kwargs: object) -> CliAgent:
    return CliAgent(PROVIDER, executor=FakeExecutor([answer("hi")]), env=ENV, **kwargs)  # type: ignore[arg-type]


class TestPlainFunctionHandlers:
    def test_cli_agent_event_handler(self) -> None:
        seen: list[AgentEvent] = []
        cli(event_handlers=seen.append).run("x")
        assert texts(seen) == ["hi"]

    def test_cli_agent_event_handlers_mix_functions_and_handler_objects(self) -> None:
        seen: list[AgentEvent] = []
        recorder = RecordingEventHandler()
        cli(event_handlers=[seen.append, recorder]).run("x")
        assert texts(seen) == texts(recorder.events) == ["hi"]

    def test_agent_session_turn_on_event(self) -> None:
        seen: list[AgentEvent] = []
        cli().start_session().turn("x", on_event=seen.append)
        assert texts(seen) == ["hi"]

    def test_cli_agent_run_on_event_comes_after_the_agents_handlers(self) -> None:
        order: list[str] = []
        agent = cli(event_handlers=lambda e: order.append("agent"))
        agent.run("x", on_event=lambda e: order.append("turn"))
        assert order[:2] == ["agent", "turn"]

    def test_agent_event_handlers(self) -> None:
        seen: list[AgentEvent] = []
        agent = claude_agent(FakeExecutor([answer("hi")]), event_handlers=[seen.append])
        agent.start_session().turn("x")
        assert texts(seen) == ["hi"]

    def test_session_turn_on_event_takes_a_function_or_a_handler_object(self) -> None:
        seen: list[AgentEvent] = []
        recorder = RecordingEventHandler()
        session = claude_agent(FakeExecutor([answer("a"), answer("b")])).start_session()
        session.turn("x", on_event=seen.append)
        session.turn("y", on_event=recorder)
        assert (texts(seen), texts(recorder.events)) == (["a"], ["b"])

    def test_session_event_handlers(self) -> None:
        seen: list[AgentEvent] = []
        spec = ConversationSpec(permissions=BYPASS, approvals=DENY)
        session = Session(
            FakeTransport([FakeOutcome.success("hi")]), spec, event_handlers=[seen.append]
        )
        session.turn("x")
        assert texts(seen) == ["hi"]

    @pytest.mark.parametrize(
        "door",
        [
            lambda bad: cli(event_handlers=[bad]),
            lambda bad: cli().start_session().turn("x", on_event=bad),
            lambda bad: claude_agent(FakeExecutor(), event_handlers=[bad]),
            lambda bad: (
                claude_agent(FakeExecutor([answer()])).start_session().turn("x", on_event=bad)
            ),
        ],
        ids=[
            "CliAgent.event_handlers",
            "AgentSession.turn",
            "Agent",
            "Session.turn",
        ],
    )
    def test_something_neither_callable_nor_a_handler_is_refused(
        self, door: Callable[[object], object]
    ) -> None:
        with pytest.raises(InvalidRequestError, match="on_event"):
            door(42)


# -- both doors: one stop verb, one outcome by timing, one return contract -----------------


class ExitsCleanly(FakeExecutor):
    """A CLI that exits 0 even after SIGTERM (it had just finished)."""

    def run(self, request: CommandRequest, sink: CommandStreamSink) -> CommandResult:
        outcome = super().run(request, sink)
        return CommandResult(0, outcome.stdout, outcome.stderr)


class Door:
    """One door's session: ``CliAgent``/``AgentSession`` or ``Agent``/``Session``.

    ``turn`` answers the TurnResult (a Session's Turn carries it as ``result``), so a test
    compares what a user of either door sees.
    """

    def __init__(self, name: str, executor: FakeExecutor, **kwargs: object) -> None:
        self.name = name
        if name == "CliAgent":
            self._cli = CliAgent(PROVIDER, executor=executor, env=ENV, **kwargs)  # type: ignore[arg-type]
        else:
            self._agent = claude_agent(executor, **kwargs)

    def session(self, session_id: str | None = None) -> AgentSession | Session:
        if self.name == "CliAgent":
            return self._cli.start_session(session_id=session_id)
        session = self._agent.start_session()
        if session_id is not None:
            session.adopt(session_id)
        return session

    @staticmethod
    def turn(session: AgentSession | Session, prompt: str) -> TurnResult:
        answered = session.turn(prompt)
        return answered.result if isinstance(answered, Turn) else answered


DOORS = pytest.mark.parametrize("door", ["CliAgent", "Agent"])


def started(executor: FakeExecutor, running: InThread) -> None:
    """Wait until the turn's CLI process exists."""
    while not executor.handles:
        running.thread.join(0.01)


class TestBothDoorsAnswerAlike:
    @DOORS
    def test_a_turn_returns_the_cli_s_answer(self, door: str) -> None:
        executor = FakeExecutor([answer("hi", "s-9")])
        doorway = Door(door, executor)
        result = doorway.turn(doorway.session(), "x")
        assert (result.text, result.session_id, result.interrupted) == ("hi", "s-9", False)

    @DOORS
    def test_an_interrupt_before_any_turn_does_nothing(self, door: str) -> None:
        executor = FakeExecutor([answer("hi")])
        doorway = Door(door, executor)
        session = doorway.session()
        session.interrupt()
        assert doorway.turn(session, "x").text == "hi"
        assert not executor.handles[0].terminated

    @DOORS
    def test_an_interrupt_while_the_turn_waits_for_its_conversation_means_it_never_starts(
        self, door: str
    ) -> None:
        gate = Gate()
        executor = FakeExecutor(gate)
        leases = ContendedLeases()
        doorway = Door(door, executor, leases=leases)
        first, second = doorway.session("s-1"), doorway.session("s-1")
        running = InThread(lambda: first.turn("one"))
        assert gate.entered.wait(HANG_GUARD_S)
        waiting = InThread(lambda: second.turn("two"))
        assert leases.refused.wait(HANG_GUARD_S), "the second turn never asked for the conversation"
        second.interrupt()
        waiting.join()
        gate.release.set()
        running.join()
        assert isinstance(waiting.error, TurnCancelledError)
        assert len(executor.requests) == 1, "the interrupted turn started its CLI"
        assert second.session_id == "s-1"

    @DOORS
    def test_an_interrupt_while_the_cli_runs_returns_an_interrupted_result(self, door: str) -> None:
        executor = FakeExecutor(FakeRun(stdout=[], until_stopped=True))
        events = RecordingEventHandler()
        doorway = Door(door, executor, event_handlers=[events])
        session = doorway.session("s-1")
        running = InThread(lambda: doorway.turn(session, "x"))
        started(executor, running)
        session.interrupt()
        running.join()
        assert running.error is None
        result = running.value
        assert isinstance(result, TurnResult)
        assert result.interrupted
        assert result.exit_code == -signal.SIGTERM
        assert executor.handles[0].terminated
        assert events.of_type(TurnInterrupted)
        assert session.session_id == "s-1"

    @DOORS
    def test_an_interrupt_as_the_cli_exits_cleanly_still_marks_the_turn(self, door: str) -> None:
        holder: list[AgentSession | Session] = []

        def interrupt_at_exit(event: AgentEvent) -> None:
            if isinstance(event, RunFinished):
                holder[0].interrupt()

        executor = ExitsCleanly([answer("done", "s-2")])
        doorway = Door(door, executor, event_handlers=[interrupt_at_exit])
        session = doorway.session()
        holder.append(session)
        result = doorway.turn(session, "x")
        assert (result.text, result.interrupted, result.exit_code) == ("done", True, 0)
        assert session.session_id == "s-2", "the interrupted turn lost the id its CLI named"

    @DOORS
    def test_an_interrupt_after_the_turn_ended_does_not_reach_the_next_turn(
        self, door: str
    ) -> None:
        executor = FakeExecutor([answer("a"), answer("b")])
        doorway = Door(door, executor)
        session = doorway.session()
        doorway.turn(session, "x")
        session.interrupt()
        result = doorway.turn(session, "y")
        assert (result.text, result.interrupted) == ("b", False)
        assert not executor.handles[1].terminated


class TestCancelAlias:
    def test_cancel_is_interrupt_with_a_grace(self) -> None:
        executor = FakeExecutor(FakeRun(until_stopped=True))
        session = CliAgent(PROVIDER, executor=executor, env=ENV).start_session(session_id="s-1")
        running = InThread(lambda: session.turn("x"))
        started(executor, running)
        session.cancel(grace=1)
        running.join()
        assert running.error is None
        assert isinstance(running.value, TurnResult)
        assert running.value.interrupted
        assert running.value.exit_code == -signal.SIGTERM


class TestSessionInterrupt:
    def test_after_prepare_and_before_the_turn_nothing_runs(self) -> None:
        executor = FakeExecutor([answer()])
        session = claude_agent(executor).start_session()
        ticket = session.prepare_turn("x")
        session.interrupt()
        with pytest.raises(TurnCancelledError):
            session.turn(ticket)
        assert executor.requests == []


# -- one serialization per (provider, session id): leases --------------------------------


class TestOneSerialization:
    def test_two_sessions_of_one_agent_on_one_session_id_take_turns(self) -> None:
        gate = Gate()
        executor = FakeExecutor(gate)
        agent = claude_agent(executor)
        first, second = agent.start_session(), agent.start_session()
        first.adopt("s-1")
        second.adopt("s-1")
        take_turns_at_the_gate(
            gate, executor, lambda: first.turn("one"), lambda: second.turn("two")
        )

    @pytest.mark.parametrize("first", ["session", "cli_agent"])
    def test_both_doors_on_the_same_leases_take_turns(self, first: str) -> None:
        gate = Gate()
        executor = FakeExecutor(gate)
        leases = InMemoryLeases()
        agent = claude_agent(executor, leases=leases)
        cli_agent = CliAgent(PROVIDER, executor=executor, env=ENV, leases=leases)
        session = agent.start_session()
        session.adopt("s-1")

        def by_session() -> object:
            return session.turn("from the session")

        def by_cli_agent() -> object:
            return cli_agent.start_session(session_id="s-1").turn("from the cli agent")

        calls = (by_session, by_cli_agent) if first == "session" else (by_cli_agent, by_session)
        take_turns_at_the_gate(gate, executor, *calls)

    @pytest.mark.parametrize("door", ["Agent(OneShotTransport)", "CliAgent"])
    def test_a_lease_held_elsewhere_holds_the_door_s_turns(self, door: str) -> None:
        executor = FakeExecutor([answer()])
        leases = ContendedLeases()
        if door == "CliAgent":
            session: AgentSession | Session = CliAgent(
                PROVIDER, executor=executor, env=ENV, leases=leases
            ).start_session(session_id="s-1")
        else:
            cli = InstalledCli.find(get_plugin(PROVIDER).create_provider(), executor, ENV)
            agent = Agent(OneShotTransport(cli), permissions=BYPASS, approvals=DENY, leases=leases)
            session = agent.start_session()
            session.adopt("s-1")
        holder = LeaseHolder.here()
        leases.acquire(conversation_key(PROVIDER, "s-1"), holder, 60)
        try:
            waiting = InThread(lambda: session.turn("x"))
            assert leases.refused.wait(HANG_GUARD_S), "the turn never asked for the conversation"
            assert executor.requests == []
            session.interrupt()
            waiting.join()
        finally:
            leases.release(conversation_key(PROVIDER, "s-1"), holder)
        assert isinstance(waiting.error, TurnCancelledError)
