"""Warm Claude Code stream processes: started ahead, taken by new conversations only."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentshim import Agent
from agentshim.core.conversation import TransportKind
from agentshim.core.errors import ProviderCapabilityError
from agentshim.testing import FakeExecutor
from agentshim.testing.claude_stream import ClaudePeerTurn, ClaudeStreamPeers
from tests.unit.session.helpers import stream_agent


def claude_agent(peers: ClaudeStreamPeers) -> tuple[Agent, FakeExecutor]:
    return stream_agent("claude", peers)


def test_a_warm_process_runs_a_new_sessions_first_turn(tmp_path: Path) -> None:
    peers = ClaudeStreamPeers([ClaudePeerTurn("hello")])
    agent, executor = claude_agent(peers)
    agent.prewarm(1, cwd=str(tmp_path))
    assert len(executor.spawned) == 1
    assert "--resume" not in executor.spawned[0].argv
    assert executor.spawned[0].env["AGENTSHIM_CONVERSATION_RUN"]  # what its tools will carry
    # Started and answered its initialize before any session asked for it.
    (hello,) = peers.peers[0].received
    assert hello["request"]["subtype"] == "initialize"
    with agent.start_session(str(tmp_path)) as session:
        assert session.turn("hi").result.text == "hello"
    assert len(executor.spawned) == 1
    assert executor.processes[0].returncode is not None  # closed with its session


def test_a_resumed_session_or_another_cwd_starts_its_own_process(tmp_path: Path) -> None:
    peers = ClaudeStreamPeers([ClaudePeerTurn("one"), ClaudePeerTurn("two")])
    agent, executor = claude_agent(peers)
    agent.prewarm(1, cwd=str(tmp_path))
    with agent.start_session(
        str(tmp_path), session_id="c0de0000-0000-4000-8000-0000000000aa"
    ) as resumed:
        resumed.turn("hi")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with agent.start_session(str(elsewhere)) as other:
        other.turn("hi")
    assert len(executor.spawned) == 3
    assert "--resume" in executor.spawned[1].argv
    assert executor.processes[0].returncode is None  # still warm, never taken
    agent.release_warm()
    assert executor.processes[0].returncode is not None


def test_prewarm_is_refused_where_no_process_is_kept() -> None:
    agent, executor = stream_agent("pi", None, transport=TransportKind.ONE_SHOT)
    with pytest.raises(ProviderCapabilityError, match="prewarm"):
        agent.prewarm()
    assert not executor.spawned
