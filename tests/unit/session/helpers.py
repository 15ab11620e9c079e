"""Builders shared by the session tests."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from agentshim.agent import Agent
from agentshim.core.conversation import ConversationSpec, TransportKind
from agentshim.core.events import AgentEvent, AgentEventHandler, Lifecycle, RunStarted
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.profile import RenewalBudget
from agentshim.core.retry import RetryPolicy
from agentshim.core.session_policy import SessionPolicy
from agentshim.session import Session, Turn, TurnTicket
from agentshim.state.checkpoints import Checkpoint
from agentshim.state.leases import InMemoryLeases, LeaseHolder
from agentshim.testing import FakeExecutor
from agentshim.testing._liveness import HANG_GUARD_S
from agentshim.testing.checkpoints import FakeCheckpointStore
from agentshim.testing.clock import FakeClock, SequentialIds
from agentshim.testing.conversation import FakeOutcome, FakeTransport

KEY = "user-1"


def quiet_agent(provider: str, executor: FakeExecutor, **options: Any) -> Agent:
    """An Agent for ``provider`` on ``executor`` (its default transport, PATH=/usr/bin).

    It asks nothing (bypass permissions, approvals denied) unless ``options`` say otherwise.
    """
    settings: dict[str, Any] = {
        "env": {"PATH": "/usr/bin"},
        "permissions": NativePermissions.bypass(),
        "approvals": ApprovalPolicy.DENY,
        **options,
    }
    return Agent(provider, executor=executor, **settings)


def stream_agent(provider: str, peers: Any, **options: Any) -> tuple[Agent, FakeExecutor]:
    """A quiet_agent on ``provider``'s long-lived transport, its CLI played by ``peers``."""
    executor = FakeExecutor(peers=peers, binaries={provider: f"/usr/bin/{provider}"})
    settings: dict[str, Any] = {"transport": TransportKind.LONG_LIVED, **options}
    return quiet_agent(provider, executor, **settings), executor


def spec(resume_session_id: str | None = None) -> ConversationSpec:
    return ConversationSpec(
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        cwd="/work",
        resume_session_id=resume_session_id,
    )


class Rig:
    """A Session on a FakeTransport, a FakeClock and a FakeCheckpointStore."""

    def __init__(
        self,
        script: Sequence[FakeOutcome] = (),
        *,
        holding: str | None = None,
        retry: RetryPolicy | None = None,
        renewal: RenewalBudget | None = None,
        idle_release_after: float | None = None,
        steerable: bool = False,
        event_handlers: Sequence[AgentEventHandler] = (),
    ) -> None:
        self.transport = FakeTransport(script, steerable=steerable)
        self.clock = FakeClock()
        self.store = FakeCheckpointStore({KEY: Checkpoint(holding)} if holding else None)
        self.log: list[str] = []
        self.session = Session(
            self.transport,
            spec(),
            policy=SessionPolicy(
                retry=retry or RetryPolicy(),
                renewal=renewal,
                idle_release_after=idle_release_after,
            ),
            clock=self.clock,
            ids=SequentialIds(),
            event_handlers=event_handlers,
            checkpoints=self.store,
            checkpoint_key=KEY,
            log=self.log.append,
        )

    @property
    def checkpoint(self) -> str | None:
        saved = self.store.saved.get(KEY)
        return saved.session_id if saved else None

    def run(self, prompt: str = "go", *, expect: str | None = None, pin: bool = False):
        return self.session.turn(prompt, expect_session_id=expect, pin=pin)

    @property
    def resumed_ids(self) -> list[str | None]:
        """The conversation each attempt started in (None: fresh)."""
        return [call.session_id for call in self.transport.calls]


class TurnOnThread:
    """Runs one turn of ``session`` on a worker thread; keeps its events and what it returned or raised.

    ``started`` is set when the turn's run starts, ``waiting`` when it schedules a retry.
    """

    def __init__(self, session: Session, request: str | TurnTicket) -> None:
        self.started = threading.Event()
        self.waiting = threading.Event()
        self.events: list[AgentEvent] = []
        self.turn: Turn | None = None
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(session, request), daemon=True)
        self._thread.start()

    def _on_event(self, event: AgentEvent) -> None:
        self.events.append(event)
        if isinstance(event, RunStarted):
            self.started.set()
        if isinstance(event, Lifecycle) and event.kind == "retry_scheduled":
            self.waiting.set()

    def _run(self, session: Session, request: str | TurnTicket) -> None:
        try:
            self.turn = session.turn(request, on_event=self._on_event)
        except BaseException as error:
            self.error = error

    def join(self) -> None:
        """Waits for the turn to end, failing the test if it does not within a minute.

        A liveness guard only: a turn that ends on the path under test ends in far less.
        """
        self._thread.join(HANG_GUARD_S)
        assert not self._thread.is_alive(), "the turn did not end"


class ContendedLeases(InMemoryLeases):
    """InMemoryLeases that says when a request for a lease found another holder in it
    (the requester then waits in line, or gives up)."""

    def __init__(self) -> None:
        super().__init__()
        self.refused = threading.Event()

    def acquire(self, key: str, holder: LeaseHolder, ttl: float) -> LeaseHolder:
        current = super().acquire(key, holder, ttl)
        if current.token != holder.token:
            self.refused.set()
        return current


def second_turn_waits_for_first(
    transport: FakeTransport, first: Session, second: Session, leases: ContendedLeases
) -> Turn:
    """Runs a turn on ``first`` (its script hangs) and then one on ``second``, on one conversation.

    Checks the second turn found the conversation's lease taken and did not reach
    ``transport`` while the first runs, interrupts the first, and returns the second turn once
    both have ended.
    """
    one = TurnOnThread(first, "one")
    assert one.started.wait(HANG_GUARD_S)
    two = TurnOnThread(second, "two")
    assert leases.refused.wait(HANG_GUARD_S), "the second turn never asked for the conversation"
    assert len(transport.calls) == 1, "the second turn ran while the first held the conversation"
    first.interrupt()
    one.join()
    two.join()
    assert two.turn is not None
    return two.turn
