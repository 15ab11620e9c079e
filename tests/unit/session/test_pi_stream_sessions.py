"""A service switching its Pi sessions to the long-lived ``pi --mode rpc`` transport."""

from __future__ import annotations

import threading

import pytest

from agentshim.core.approvals import ApprovalDecision
from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.events import AgentEvent, ToolCall
from agentshim.testing.pi_rpc import PiPeerTurn, PiRpcPeers
from tests.unit.session.helpers import stream_agent

SLEEP = {"command": "sleep 30"}


class TestPiStreamSessions:
    """Pi's own; what every long-lived session does is in test_stream_sessions.py."""

    def test_session_steer_is_pis_steer(self) -> None:
        peers = PiRpcPeers(
            [PiPeerTurn("answer", tool="bash", tool_input=SLEEP, until_steered=True)]
        )
        steered: list[threading.Thread] = []

        def steer_once_running(event: AgentEvent) -> None:
            # The tool call is the turn's own event: the turn runs, and it waits to be steered.
            if isinstance(event, ToolCall) and not steered:
                steered.append(threading.Thread(target=session.steer, args=("also this",)))
                steered[0].start()

        agent, _ = stream_agent("pi", peers, event_handlers=[steer_once_running])
        session = agent.start_session()
        turn = session.turn("go")
        steered[0].join()
        assert turn.result.text == "answer (and: also this)"
        assert peers.peers[0].steered == ["also this"]
        assert peers.peers[0].received[2]["type"] == "steer"
        session.close()

    def test_a_fork_starts_its_process_with_fork(self) -> None:
        base = "01a23046-0000-7000-8000-0000000000b2"
        agent, executor = stream_agent("pi", PiRpcPeers([PiPeerTurn("forked")]))
        session = agent.start_session(session_id=base, fork=True)
        turn = session.turn("branch")
        argv = list(executor.spawned[0].argv)
        assert argv[argv.index("--fork") + 1] == base
        assert turn.result.session_id == f"{base}-fork"
        session.close()

    def test_an_approval_handler_is_refused_because_pi_never_asks(self) -> None:
        agent, _ = stream_agent(
            "pi", PiRpcPeers([PiPeerTurn("never")]), approvals=lambda r: ApprovalDecision.allow()
        )
        with pytest.raises(ProviderCapabilityError, match="no approval flow"):
            agent.start_session().turn("go")
