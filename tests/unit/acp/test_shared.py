"""ACP conversations sharing processes: one session each on a shared agent process."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Sequence
from typing import Any

import pytest

from agentshim import Agent
from agentshim.acp.client import AcpTransport
from agentshim.acp.dialect import AcpDialect
from agentshim.core.conversation import ConversationSpec, TransportKind
from agentshim.core.errors import InvalidRequestError, ProviderCapabilityError
from agentshim.core.events import AgentEvent, AssistantText
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.execution.process import SpawnRequest
from agentshim.providers import get_plugin
from agentshim.providers.copilot.acp import COPILOT_ACP
from agentshim.providers.gemini.acp import GEMINI_ACP
from agentshim.providers.opencode.acp import OPENCODE_ACP
from agentshim.testing import FakeExecutor
from agentshim.testing import acp as fake_acp
from agentshim.testing.acp import AcpPeers, AcpPeerTurn, AcpQuirks
from agentshim.testing.process import FakePeer, GateMarker, PeerOutput, ReplayGates
from agentshim.transport.installed import InstalledCli
from agentshim.transport.shared import ProcessSharing
from tests.unit.long_lived_rig import bypass_spec as spec
from tests.unit.long_lived_rig import ignore, take_turns
from tests.unit.long_lived_rig import sent_to as sent
from tests.unit.session.helpers import stream_agent

from .rigs import transport_on

BYPASS = NativePermissions.bypass()
AGENTS = {
    "gemini": (GEMINI_ACP, fake_acp.GEMINI_QUIRKS),
    "opencode": (OPENCODE_ACP, fake_acp.OPENCODE_QUIRKS),
    "copilot": (COPILOT_ACP, fake_acp.COPILOT_QUIRKS),
}


def shared(
    provider: str, turns: Sequence[AcpPeerTurn], sharing: ProcessSharing | None = None
) -> tuple[AcpTransport, FakeExecutor, AcpPeers]:
    dialect, quirks = AGENTS[provider]
    peers = AcpPeers(turns, quirks=quirks)
    transport, executor = transport_on(
        provider, dialect, peers, sharing=sharing or ProcessSharing()
    )
    return transport, executor, peers


@pytest.mark.parametrize("provider", sorted(AGENTS))
def test_two_conversations_are_two_sessions_on_one_process(provider: str) -> None:
    transport, executor, peers = shared(
        provider, [AcpPeerTurn("a1"), AcpPeerTurn("b1"), AcpPeerTurn("a2")]
    )
    first, second = take_turns(transport)
    assert len(executor.spawned) == 1
    assert len(sent(peers, "initialize")) == 1
    assert len(sent(peers, "session/new")) == 2
    prompts = [m["params"]["sessionId"] for m in sent(peers, "session/prompt")]
    assert prompts == [first.session_id, second.session_id, first.session_id]
    assert peers.history[first.session_id or ""] == [
        ("user", "one"),
        ("agent", "a1"),
        ("user", "three"),
        ("agent", "a2"),
    ]
    first.close()
    assert executor.processes[0].returncode is None
    second.close()
    assert executor.processes[0].returncode is not None


def test_a_cancel_names_only_the_interrupted_session() -> None:
    transport, _, peers = shared("gemini", [AcpPeerTurn("a1"), AcpPeerTurn("hang", hang=True)])
    quiet, interrupted = transport.open(spec()), transport.open(spec())
    quiet.turn(TurnRequest("one"), ignore())

    def interrupt_once_it_thinks(event: AgentEvent) -> None:
        if isinstance(event, AssistantText):
            interrupted.interrupt()

    assert interrupted.turn(TurnRequest("two", timeout=60), interrupt_once_it_thinks).interrupted
    cancels = [m["params"]["sessionId"] for m in sent(peers, "session/cancel")]
    assert cancels == [interrupted.session_id]


def test_conversations_with_other_process_wide_settings_get_other_processes() -> None:
    dialect: AcpDialect = GEMINI_ACP
    quirks: AcpQuirks = fake_acp.GEMINI_QUIRKS
    peers = AcpPeers([AcpPeerTurn("a"), AcpPeerTurn("b")], quirks=quirks)
    transport, executor = transport_on("gemini", dialect, peers, sharing=ProcessSharing())
    bypass = transport.open(spec())
    planning = transport.open(
        ConversationSpec(permissions=NativePermissions.read_only(), approvals=ApprovalPolicy.DENY)
    )
    bypass.turn(TurnRequest("one"), ignore())
    planning.turn(TurnRequest("two"), ignore())
    assert len(executor.spawned) == 2
    bypass.close()
    planning.close()


def test_an_agent_with_share_processes_runs_its_sessions_on_one_process() -> None:
    peers = AcpPeers([AcpPeerTurn("a"), AcpPeerTurn("b")])
    agent, executor = stream_agent("gemini", peers, share_processes=ProcessSharing())
    with agent.start_session() as first, agent.start_session() as second:
        assert first.turn("one").result.text == "a"
        assert second.turn("two").result.text == "b"
        assert first.session_id != second.session_id
    assert len(executor.spawned) == 1
    assert executor.processes[0].returncode is not None


@pytest.mark.parametrize(
    ("provider", "kind"),
    [("claude", TransportKind.LONG_LIVED), ("pi", TransportKind.LONG_LIVED), ("gemini", None)],
)
def test_share_processes_is_refused_where_a_process_serves_one_conversation(
    provider: str, kind: TransportKind | None
) -> None:
    with pytest.raises(ProviderCapabilityError, match="share_processes"):
        stream_agent(
            provider,
            None,
            transport=kind or TransportKind.ONE_SHOT,
            share_processes=ProcessSharing(),
        )


def test_process_sharing_refuses_nonsense() -> None:
    with pytest.raises(InvalidRequestError):
        ProcessSharing(max_processes=0)
    with pytest.raises(InvalidRequestError):
        ProcessSharing(recycle_after=0)


def sharing_agent(provider: str, peers: AcpPeers, **options: Any) -> tuple[Agent, FakeExecutor]:
    return stream_agent(provider, peers, **options)


class TestWarmPool:
    def test_a_prewarmed_process_serves_the_first_turn_of_a_new_session(self) -> None:
        peers = AcpPeers([AcpPeerTurn("a")], quirks=fake_acp.OPENCODE_QUIRKS)
        agent, executor = sharing_agent("opencode", peers, share_processes=ProcessSharing())
        agent.prewarm()
        assert len(executor.spawned) == 1
        # Started, initialized and past its first session before any session of ours.
        assert [m.get("method") for m in peers.peers[0].received if "id" in m] == [
            "initialize",
            "session/new",
        ]
        with agent.start_session() as session:
            assert session.turn("one").result.text == "a"
        assert len(executor.spawned) == 1
        assert len(sent(peers, "initialize")) == 1
        assert executor.processes[0].returncode is None  # warm, waiting for the next session
        agent.release_warm()
        assert executor.processes[0].returncode is not None

    def test_prewarm_starts_up_to_max_processes(self) -> None:
        peers = AcpPeers([], quirks=fake_acp.COPILOT_QUIRKS)
        agent, executor = sharing_agent(
            "copilot", peers, share_processes=ProcessSharing(max_processes=2)
        )
        agent.prewarm(3)
        assert len(executor.spawned) == 2
        agent.release_warm()
        assert all(process.returncode is not None for process in executor.processes)

    def test_prewarm_needs_share_processes(self) -> None:
        agent, executor = sharing_agent("gemini", AcpPeers([]))
        with pytest.raises(ProviderCapabilityError, match="share_processes"):
            agent.prewarm()
        assert not executor.spawned

    def test_prewarm_refuses_a_count_below_one(self) -> None:
        agent, _ = sharing_agent("gemini", AcpPeers([]), share_processes=ProcessSharing())
        with pytest.raises(InvalidRequestError):
            agent.prewarm(0)


class _HeldFirstSession(FakePeer):
    """An ACP agent whose first ``session/new`` answer waits at gate ``first``; it sets
    ``first_asked`` when that request arrives."""

    def __init__(self, inner: FakePeer, gates: ReplayGates, first_asked: threading.Event) -> None:
        self.inner = inner
        self.gates = gates
        self.opened = 0
        self.asked_while_held = 0
        self.first_asked = first_asked

    def on_start(self) -> Iterable[PeerOutput]:
        return self.inner.on_start()

    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        answer = list(self.inner.on_stdin(line))
        if '"session/new"' not in line:
            return answer
        self.opened += 1
        if self.opened == 1:
            self.first_asked.set()
            return [GateMarker("first"), *answer]
        if not self.gates.is_open("first"):
            self.asked_while_held += 1
        return answer

    def on_stdin_closed(self) -> Iterable[PeerOutput]:
        return self.inner.on_stdin_closed()


def test_conversations_open_their_sessions_on_a_shared_process_one_at_a_time() -> None:
    peers = AcpPeers([AcpPeerTurn("a"), AcpPeerTurn("b")])
    gates = ReplayGates(closed=["first"])
    held: list[_HeldFirstSession] = []
    first_asked = threading.Event()

    def spawn(request: SpawnRequest) -> FakePeer:
        held.append(_HeldFirstSession(peers(request), gates, first_asked))
        return held[-1]

    executor = FakeExecutor(peers=spawn, gates=gates)
    context = InstalledCli(
        provider=get_plugin("gemini").create_provider(),
        executor=executor,
        binary_path="/usr/bin/gemini",
        env={"PATH": "/usr/bin"},
    )
    transport = AcpTransport(context, GEMINI_ACP, sharing=ProcessSharing())
    first, second = transport.open(spec()), transport.open(spec())
    texts: list[str] = []
    threads = [
        threading.Thread(target=lambda c=c: texts.append(c.turn(TurnRequest("go"), ignore()).text))
        for c in (first, second)
    ]
    for thread in threads:
        thread.start()
    assert first_asked.wait(60), "the first session/new never went out"
    # A window for the other conversation's session/new to go out (and be counted) if it
    # did not wait for the first; nothing else in the test waits on it.
    time.sleep(0.3)
    gates.open("first")
    for thread in threads:
        thread.join(60)
    assert not any(thread.is_alive() for thread in threads)
    assert sorted(texts) == ["a", "b"]
    assert held[0].opened == 2
    assert held[0].asked_while_held == 0
    first.close()
    second.close()
