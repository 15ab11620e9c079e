"""Builders shared by the session tests."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentshim.agent import Agent
from agentshim.core.conversation import ConversationSpec, TransportKind
from agentshim.core.events import AgentEventHandler
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.profile import RenewalBudget
from agentshim.core.retry import RetryPolicy
from agentshim.core.session_policy import SessionPolicy
from agentshim.session import Session
from agentshim.state.checkpoints import Checkpoint
from agentshim.testing import FakeExecutor
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
