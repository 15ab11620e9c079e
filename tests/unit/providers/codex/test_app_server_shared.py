"""Codex app-server conversations sharing processes: threads on one process, crash, recycling."""

from __future__ import annotations

import dataclasses
from typing import Any

from agentshim.core.events import SessionStarted
from agentshim.core.permissions import NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.providers.codex.app_server.transport import CodexAppServerTransport
from agentshim.testing import FakeExecutor
from agentshim.testing.codex_app_server import CodexAppServerPeers, CodexPeerTurn
from agentshim.transport.shared import ProcessSharing
from tests.unit.long_lived_rig import bypass_spec as spec
from tests.unit.long_lived_rig import (
    ignore,
    installed_cli,
    interrupt_the_second,
    lifecycle,
    take_turns,
    turn_acting_at,
)
from tests.unit.long_lived_rig import sent_to as sent

BYPASS = NativePermissions.bypass()
MARKER = "AGENTSHIM_TOOL_RUN"


def shared_transport(
    peers: CodexAppServerPeers, sharing: ProcessSharing | None = None, **options: Any
) -> tuple[CodexAppServerTransport, FakeExecutor, list[str]]:
    context, executor = installed_cli("codex", peers)
    reaped: list[str] = []

    def reap(marker: str) -> int:
        reaped.append(marker)
        return 0

    transport = CodexAppServerTransport(
        context, reap=reap, sharing=sharing or ProcessSharing(), **options
    )
    return transport, executor, reaped


def one_turn_each(transport: CodexAppServerTransport, count: int) -> list[Any]:
    """``count`` conversations opened on ``transport`` one after another, each then run a turn."""
    conversations = [transport.open(spec()) for _ in range(count)]
    for conversation in conversations:
        conversation.turn(TurnRequest("go"), ignore())
    return conversations


def marker_of(request: dict[str, Any]) -> str:
    return request["params"]["config"]["shell_environment_policy"]["set"][MARKER]


def test_two_conversations_are_two_threads_on_one_process_each_with_its_marker() -> None:
    peers = CodexAppServerPeers([CodexPeerTurn("a1"), CodexPeerTurn("b1"), CodexPeerTurn("a2")])
    transport, executor, _ = shared_transport(peers)
    first, second = take_turns(transport)
    assert len(executor.spawned) == 1
    assert len(sent(peers, "initialize")) == 1
    starts = sent(peers, "thread/start")
    assert len(starts) == 2
    assert marker_of(starts[0]) != marker_of(starts[1])
    assert all(MARKER not in " ".join(request.argv) for request in executor.spawned)
    assert MARKER not in executor.spawned[0].env
    turns = sent(peers, "turn/start")
    threads = [turn["params"]["threadId"] for turn in turns]
    assert threads == [first.session_id, second.session_id, first.session_id]
    assert first.session_id != second.session_id
    # Every request went out under an id of its own on the process.
    ids = [m["id"] for m in peers.peers[0].received if "method" in m and "id" in m]
    assert len(ids) == len(set(ids))
    first.close()
    assert executor.processes[0].returncode is None  # the other conversation still holds it
    second.close()
    assert executor.processes[0].returncode is not None


def test_a_conversation_closing_on_a_shared_process_unsubscribes_from_its_thread() -> None:
    peers = CodexAppServerPeers([CodexPeerTurn("a1"), CodexPeerTurn("b1"), CodexPeerTurn("b2")])
    transport, executor, _ = shared_transport(peers)
    first, second = transport.open(spec()), transport.open(spec())
    first.turn(TurnRequest("one"), ignore())
    second.turn(TurnRequest("two"), ignore())
    first.close()
    assert [m["params"] for m in sent(peers, "thread/unsubscribe")] == [
        {"threadId": first.session_id}
    ]
    assert second.turn(TurnRequest("three"), ignore()).text == "b2"
    second.close()
    assert executor.processes[0].returncode is not None


def test_an_interrupt_reaps_only_the_interrupted_threads_commands() -> None:
    peers = CodexAppServerPeers([CodexPeerTurn("a1"), CodexPeerTurn("hang", hang=True)])
    transport, _, reaped = shared_transport(peers)
    interrupt_the_second(transport)
    starts = sent(peers, "thread/start")
    assert reaped == [marker_of(starts[1])]


def test_a_process_is_recycled_after_its_conversations_and_ends_when_they_leave() -> None:
    peers = CodexAppServerPeers([CodexPeerTurn(f"t{n}") for n in range(3)])
    transport, executor, _ = shared_transport(peers, ProcessSharing(recycle_after=2))
    conversations = one_turn_each(transport, 3)
    assert len(executor.spawned) == 2
    served = [
        len([m for m in p.received if m.get("method") == "thread/start"]) for p in peers.peers
    ]
    assert served == [2, 1]
    conversations[0].close()
    assert executor.processes[0].returncode is None
    conversations[1].close()
    assert executor.processes[0].returncode is not None
    conversations[2].close()


def test_up_to_max_processes_share_the_conversations() -> None:
    peers = CodexAppServerPeers([CodexPeerTurn(f"t{n}") for n in range(4)])
    transport, executor, _ = shared_transport(peers, ProcessSharing(max_processes=2))
    conversations = one_turn_each(transport, 4)
    assert len(executor.spawned) == 2
    for conversation in conversations:
        conversation.close()
    assert all(process.returncode is not None for process in executor.processes)


def test_prewarm_starts_handshaken_processes_the_next_conversations_join() -> None:
    peers = CodexAppServerPeers([CodexPeerTurn("a"), CodexPeerTurn("b")])
    transport, executor, _ = shared_transport(peers, ProcessSharing(max_processes=2))
    transport.prewarm(2, spec())
    assert len(executor.spawned) == 2
    assert len(sent(peers, "initialize")) == 2
    first, second = transport.open(spec()), transport.open(spec())
    assert first.turn(TurnRequest("one"), ignore()).text == "a"
    assert second.turn(TurnRequest("two"), ignore()).text == "b"
    assert len(executor.spawned) == 2
    first.close()
    second.close()
    assert all(process.returncode is None for process in executor.processes)
    transport.release_warm()
    assert all(process.returncode is not None for process in executor.processes)


def test_a_new_conversation_takes_the_thread_a_warm_process_started_ahead() -> None:
    peers = CodexAppServerPeers([CodexPeerTurn("hang", hang=True), CodexPeerTurn("b")])
    transport, _, reaped = shared_transport(peers)
    transport.prewarm(1, spec())
    (ahead,) = sent(peers, "thread/start")
    taker = transport.open(spec())
    request = TurnRequest("one", timeout=60)
    result, events = turn_acting_at(taker, request, lifecycle("turn_started"), taker.interrupt)
    seen = events.events
    assert result.interrupted
    assert len(sent(peers, "thread/start")) == 1  # no thread of its own: it took the one ahead
    started = [event.session_id for event in seen if isinstance(event, SessionStarted)]
    assert started == [taker.session_id]
    assert sent(peers, "turn/start")[0]["params"]["threadId"] == taker.session_id
    assert reaped == [marker_of(ahead)]  # its commands carry the marker that thread was given
    # A conversation that starts elsewhere gets a thread of its own.
    other = transport.open(dataclasses.replace(spec(), cwd="/elsewhere"))
    assert other.turn(TurnRequest("two"), ignore()).text == "b"
    assert len(sent(peers, "thread/start")) == 2
    for conversation in (taker, other):
        conversation.close()
    transport.release_warm()
