"""Idle release on time: an Agent's one housekeeper closes quiet conversations' CLIs when due."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentshim import Agent
from agentshim.core.conversation import TransportKind
from agentshim.core.errors import InvalidRequestError
from agentshim.core.events import AgentEvent, Lifecycle
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.session_policy import Continuity
from agentshim.core.sharing import ProcessSharing
from agentshim.testing import FakeExecutor
from agentshim.testing.acp import OPENCODE_QUIRKS, AcpPeers, AcpPeerTurn
from agentshim.testing.claude_stream import ClaudePeerTurn, ClaudeStreamPeers
from agentshim.testing.clock import FakeClock
from tests.unit.session.helpers import stream_agent as agent_on

IDLE = 10.0


def stream_agent(peers: ClaudeStreamPeers, clock: object = None) -> tuple[Agent, FakeExecutor]:
    executor = FakeExecutor(peers=peers, binaries={"claude": "/usr/bin/claude"})
    agent = Agent(
        "claude",
        executor=executor,
        env={"PATH": "/usr/bin"},
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        transport=TransportKind.LONG_LIVED,
        clock=clock,  # type: ignore[arg-type]
    )
    return agent, executor


def eventually(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30.0
    while not condition():
        assert time.monotonic() < deadline, what
        time.sleep(0.01)


def housekeepers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "agentshim-idle-release"]


def test_an_idle_cli_is_closed_when_due_and_the_next_turn_reopens_it() -> None:
    clock = FakeClock(1000.0)
    peers = ClaudeStreamPeers([ClaudePeerTurn("one"), ClaudePeerTurn("two")])
    agent, executor = stream_agent(peers, clock)
    session = agent.start_session(idle_release_after=IDLE)
    first = session.turn("1")
    idle_since = clock.monotonic()
    eventually(lambda: executor.processes[0].stdin_closed, "the idle process was never closed")
    released_after = clock.monotonic() - idle_since
    assert IDLE <= released_after <= IDLE * 1.1, released_after
    assert session.session_id == first.session_id, "released, not forgotten"
    eventually(lambda: not housekeepers(), "the housekeeper outlived its last session")
    events: list[AgentEvent] = []
    second = session.turn("2", on_event=events.append)
    assert second.result.text == "two"
    assert second.session_id == first.session_id
    assert second.continuity is Continuity.CONTINUED
    assert isinstance(events[0], Lifecycle)
    assert events[0].kind == "conversation_released"
    assert "--resume" in executor.spawned[1].argv
    session.close()


def test_many_quiet_sessions_share_one_housekeeper_which_ends_with_them() -> None:
    peers = ClaudeStreamPeers(ClaudePeerTurn(f"t{n}") for n in range(12))
    agent, executor = stream_agent(peers)
    sessions = [agent.start_session(idle_release_after=3600.0) for _ in range(12)]
    for session in sessions:
        session.turn("hi")
    assert len(executor.spawned) == 12
    assert len(housekeepers()) == 1
    for session in sessions:
        session.close()
    eventually(lambda: not housekeepers(), "the housekeeper outlived its sessions")


def test_no_housekeeper_runs_for_sessions_without_idle_release() -> None:
    agent, _ = stream_agent(ClaudeStreamPeers([ClaudePeerTurn("a")]))
    with agent.start_session() as session:
        session.turn("hi")
        assert not housekeepers()


def test_a_released_session_has_nothing_more_to_release_and_runs_on() -> None:
    clock = FakeClock()
    peers = ClaudeStreamPeers([ClaudePeerTurn("one"), ClaudePeerTurn("two")])
    agent, executor = stream_agent(peers, clock)
    session = agent.start_session(idle_release_after=IDLE)
    session.turn("1")
    eventually(lambda: executor.processes[0].stdin_closed, "the idle process was never closed")
    assert session.release_if_idle() is False, "nothing is live to release"
    session.turn("2")
    session.close()


def test_a_warm_process_nobody_took_is_ended_when_its_idle_time_is_due(tmp_path: Path) -> None:
    clock = FakeClock(1000.0)
    agent, executor = stream_agent(ClaudeStreamPeers([]), clock)
    started = clock.monotonic()
    # One process: a fake clock's waits are instant, so the housekeeper's time could run on
    # while a second one was still being started.
    agent.prewarm(1, cwd=str(tmp_path), idle_release_after=IDLE)
    assert len(executor.spawned) == 1
    eventually(lambda: executor.processes[0].stdin_closed, "the warm process was never ended")
    ended_after = clock.monotonic() - started
    assert IDLE <= ended_after <= IDLE * 1.1, ended_after
    assert executor.processes[0].returncode is not None
    eventually(lambda: not housekeepers(), "the housekeeper outlived the warm process")


def test_a_shared_warm_process_is_ended_by_the_sessions_housekeeper_when_idle() -> None:
    clock = FakeClock(50.0)
    peers = AcpPeers([AcpPeerTurn("a")], quirks=OPENCODE_QUIRKS)
    agent, executor = agent_on("opencode", peers, share_processes=ProcessSharing(), clock=clock)
    threads_before = threading.active_count()
    started = clock.monotonic()
    agent.prewarm(1, idle_release_after=IDLE)
    eventually(lambda: executor.processes[0].stdin_closed, "the warm process was never ended")
    ended_after = clock.monotonic() - started
    assert IDLE <= ended_after <= IDLE * 1.1, ended_after
    # Only the Agent's housekeeper ran for it, and it is gone once nothing waits.
    assert threading.active_count() <= threads_before + 1
    eventually(lambda: not housekeepers(), "the housekeeper outlived the warm process")
    with agent.start_session() as session:
        assert session.turn("one").result.text == "a"
    assert len(executor.spawned) == 2  # the ended one was not handed out


def test_warm_processes_without_an_idle_time_start_no_housekeeper(tmp_path: Path) -> None:
    agent, executor = stream_agent(ClaudeStreamPeers([]), FakeClock())
    agent.prewarm(1, cwd=str(tmp_path))
    assert not housekeepers()
    assert executor.processes[0].returncode is None
    agent.release_warm()
    assert executor.processes[0].returncode is not None


@pytest.mark.parametrize("bad", [0, -1.0, float("nan"), float("inf"), True, "10"])
def test_prewarm_refuses_an_idle_time_that_is_not_positive_seconds(bad: object) -> None:
    agent, executor = stream_agent(ClaudeStreamPeers([]))
    with pytest.raises(InvalidRequestError, match="idle_release_after"):
        agent.prewarm(1, idle_release_after=bad)  # type: ignore[arg-type]
    assert not executor.spawned
