"""A service switching its Pi sessions to the long-lived ``pi --mode rpc`` transport."""

from __future__ import annotations

import threading

import pytest

from agentshim.core.approvals import ApprovalDecision
from agentshim.core.errors import CliDiedError, ProviderCapabilityError
from agentshim.core.events import AgentEvent, ToolCall
from agentshim.core.session_policy import Continuity
from agentshim.testing.pi_rpc import PiPeerTurn, PiRpcPeers
from tests.unit.session.helpers import stream_agent

SLEEP = {"command": "sleep 30"}


class TestPiStreamSessions:
    def test_one_argument_switches_every_turn_onto_one_process(self) -> None:
        agent, executor = stream_agent("pi", PiRpcPeers([PiPeerTurn("a"), PiPeerTurn("b")]))
        with agent.start_session() as session:
            first = session.turn("one")
            second = session.turn("two")
        assert (first.result.text, second.result.text) == ("a", "b")
        assert len(executor.spawned) == 1
        assert list(executor.spawned[0].argv[:3]) == ["/usr/bin/pi", "--mode", "rpc"]
        assert second.continuity is Continuity.CONTINUED
        assert executor.processes[0].stdin_closed, "closing the session ends the process"

    def test_interrupt_keeps_the_conversation_and_the_process(self) -> None:
        peers = PiRpcPeers(
            [PiPeerTurn(tool="bash", tool_input=SLEEP, hang=True), PiPeerTurn("next")]
        )
        agent, executor = stream_agent("pi", peers)
        session = agent.start_session()
        timer = threading.Timer(0.1, session.interrupt)
        timer.start()
        interrupted = session.turn("slow")
        timer.cancel()
        assert interrupted.result.interrupted
        assert session.turn("again").result.text == "next"
        assert len(executor.spawned) == 1
        session.close()

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

    def test_a_dead_process_fails_the_turn_and_the_next_turn_resumes_by_id(self) -> None:
        peers = PiRpcPeers(
            [
                PiPeerTurn("one"),
                PiPeerTurn(tool="bash", tool_input=SLEEP, die=-9),
                PiPeerTurn("back"),
            ]
        )
        agent, executor = stream_agent("pi", peers)
        session = agent.start_session()
        first = session.turn("1")
        with pytest.raises(CliDiedError):
            session.turn("2")
        assert session.session_id == first.session_id, "the conversation was forgotten"
        after = session.turn("3")
        assert after.result.text == "back"
        assert after.session_id == first.session_id
        assert after.continuity is Continuity.RESUMED
        argv = list(executor.spawned[1].argv)
        assert argv[argv.index("--session") + 1] == first.session_id
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
