"""A long-lived CLI that hangs while starting answers the turn's timeout and its stop.

Every provider's stream transport runs on a fake process that never answers its handshake:
the turn's own budget ends the start-up (not the transport's minute-long limit), a stop from
another thread ends it once the interrupt grace has passed, and in both cases the process is gone and the failure names
the command that was run.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable
from typing import Any

import pytest

from agentshim import Agent
from agentshim.cli_agent import CliAgent
from agentshim.core.conversation import ConversationSpec, TransportKind
from agentshim.core.errors import CliTimeoutError, TurnCancelledError
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.execution.process import SpawnRequest
from agentshim.providers import DEFAULT_CATALOG, provider_names
from agentshim.providers.catalog import transport_factories, transports_offered
from agentshim.testing import FakeExecutor, FakePeer, PeerOutput, SilentPeer
from agentshim.transport.installed import InstalledCli

ENV = {"PATH": "/usr/bin"}

STREAM_PROVIDERS = [
    name
    for name in provider_names()
    if TransportKind.STREAM in transports_offered(DEFAULT_CATALOG.plugin(name))
]


class _Started(SilentPeer):
    """Never answers; says when it started."""

    def __init__(self, started: threading.Event) -> None:
        self._started = started

    def on_start(self) -> Iterable[PeerOutput]:
        self._started.set()
        return ()


def _agent(provider: str, started: threading.Event) -> tuple[Agent, FakeExecutor, str]:
    binary = f"/opt/bin/{DEFAULT_CATALOG.plugin(provider).profile.binary}"

    def peer(request: SpawnRequest) -> FakePeer:
        return _Started(started)

    executor = FakeExecutor(
        peers=peer, binaries={DEFAULT_CATALOG.plugin(provider).profile.binary: binary}
    )
    agent = Agent(
        provider,
        executor=executor,
        env=ENV,
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        transport=TransportKind.STREAM,
    )
    return agent, executor, binary


@pytest.mark.parametrize("provider", STREAM_PROVIDERS)
def test_the_turn_timeout_ends_a_start_that_hangs(provider: str) -> None:
    agent, executor, binary = _agent(provider, threading.Event())
    with agent.start_session() as session, pytest.raises(CliTimeoutError) as caught:
        session.turn(TurnRequest("hi", timeout=0.5))
    assert binary in str(caught.value), "the message names the command that was run"
    assert "0.5 s" in str(caught.value)
    assert executor.processes[0].returncode is not None, "the hung process was ended"


def _conversation(provider: str, started: threading.Event, *, grace: float) -> tuple[Any, str]:
    """A conversation of ``provider``'s stream transport, its interrupt grace ``grace``."""
    binary_name = DEFAULT_CATALOG.plugin(provider).profile.binary
    binary = f"/opt/bin/{binary_name}"

    def peer(request: SpawnRequest) -> FakePeer:
        return _Started(started)

    executor = FakeExecutor(peers=peer, binaries={binary_name: binary})
    context = InstalledCli(
        provider=CliAgent(provider, executor=executor, env=ENV).cli.provider,
        executor=executor,
        binary_path=binary,
        env=ENV,
    )
    factory: Any = transport_factories(DEFAULT_CATALOG.plugin(provider))[TransportKind.STREAM]
    transport = factory(context)
    # Every long-lived transport keeps its graces as attributes (ProcessTransport).
    transport.interrupt_grace = transport.close_grace = grace
    spec = ConversationSpec(permissions=NativePermissions.bypass(), approvals=ApprovalPolicy.DENY)
    return transport.open(spec), binary


# Claude Code's stream-json has no handshake: its turn is in flight at once, so a stop is the
# ordinary in-band interrupt (tests/unit/providers/claude/test_stream_transport.py).
@pytest.mark.parametrize("provider", [name for name in STREAM_PROVIDERS if name != "claude"])
def test_a_stop_ends_a_start_that_hangs_past_the_interrupt_grace(provider: str) -> None:
    started = threading.Event()
    conversation, binary = _conversation(provider, started, grace=0.3)
    outcome: list[BaseException] = []

    def work() -> None:
        try:
            conversation.turn(TurnRequest("hi", timeout=300), lambda event: None)
        except BaseException as error:  # the test inspects it
            outcome.append(error)

    worker = threading.Thread(target=work)
    worker.start()
    assert started.wait(30)
    conversation.interrupt()
    worker.join(30)
    conversation.close()
    assert not worker.is_alive()
    assert len(outcome) == 1
    assert isinstance(outcome[0], TurnCancelledError), outcome[0]
    assert binary in str(outcome[0]), "the message names the command that was run"
