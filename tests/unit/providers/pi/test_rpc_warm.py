"""Warm Pi rpc processes: started ahead, taken by a new conversation or, switched, a resumed one."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import SessionResumeError
from agentshim.core.events import AgentEvent, Lifecycle, RunStarted, SessionStarted
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.providers.pi.provider import PiProvider
from agentshim.providers.pi.rpc_transport import PiRpcTransport, host_session_file
from agentshim.testing import FakeExecutor
from agentshim.testing.pi_rpc import PiPeerTurn, PiRpcPeers
from agentshim.transport.installed import InstalledCli
from tests.unit.session.helpers import stream_agent

MARKER = "AGENTSHIM_CONVERSATION_RUN"
OLD = "01a23046-0000-7000-8000-0000000000aa"


def session_file(session_id: str) -> str:
    return f"/home/user/.pi/agent/sessions/--work--/2026-12-01T00-00-00_{session_id}.jsonl"


def pi_transport(peers: PiRpcPeers, *, files: bool = True) -> tuple[PiRpcTransport, FakeExecutor]:
    executor = FakeExecutor(peers=peers)
    context = InstalledCli(
        provider=PiProvider(), executor=executor, binary_path="/usr/bin/pi", env={"PATH": "/bin"}
    )
    finder = session_file if files else None
    return PiRpcTransport(context, session_files=finder), executor


def spec(cwd: str, resume: str | None = None) -> ConversationSpec:
    return ConversationSpec(
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        cwd=cwd,
        resume_session_id=resume,
    )


def commands(executor: FakeExecutor, index: int) -> list[str]:
    peer = executor.processes[index].peer
    return [str(sent.get("type")) for sent in peer.received]  # type: ignore[attr-defined]


def test_a_new_conversation_takes_a_warm_process(tmp_path: Path) -> None:
    transport, executor = pi_transport(PiRpcPeers([PiPeerTurn("hello")]))
    transport.prewarm(1, spec(str(tmp_path)))
    assert len(executor.spawned) == 1
    warm = executor.spawned[0]
    assert "--session" not in warm.argv
    assert warm.cwd == str(tmp_path)
    assert warm.env[MARKER]  # the marker its tools' processes will carry
    assert commands(executor, 0) == ["get_state"]  # answered before anyone asked
    events: list[AgentEvent] = []
    conversation = transport.open(spec(str(tmp_path)))
    assert conversation.turn(TurnRequest("hi"), events.append).text == "hello"
    assert len(executor.spawned) == 1
    assert commands(executor, 0) == ["get_state", "get_state", "prompt"]
    started = [event.session_id for event in events if isinstance(event, SessionStarted)]
    assert started == [conversation.session_id]
    assert [event for event in events if isinstance(event, RunStarted)]
    conversation.close()
    assert executor.processes[0].returncode is not None


def test_a_resumed_conversation_switches_a_warm_process_to_its_session(tmp_path: Path) -> None:
    transport, executor = pi_transport(PiRpcPeers([PiPeerTurn("again")]))
    transport.prewarm(1, spec(str(tmp_path)))
    events: list[AgentEvent] = []
    conversation = transport.open(spec(str(tmp_path), resume=OLD))
    assert conversation.turn(TurnRequest("hi"), events.append).text == "again"
    assert len(executor.spawned) == 1
    peer = executor.processes[0].peer
    switched = [sent for sent in peer.received if sent.get("type") == "switch_session"]  # type: ignore[attr-defined]
    assert [sent["sessionPath"] for sent in switched] == [session_file(OLD)]
    assert conversation.session_id == OLD
    assert [event.session_id for event in events if isinstance(event, SessionStarted)] == [OLD]
    conversation.close()


@pytest.mark.parametrize("case", ["no file", "pi refuses", "fork", "other cwd"])
def test_otherwise_a_conversation_starts_its_own_process(tmp_path: Path, case: str) -> None:
    missing = [OLD] if case == "pi refuses" else []
    peers = PiRpcPeers([PiPeerTurn("own")], missing=missing)
    transport, executor = pi_transport(peers, files=case != "no file")
    transport.prewarm(1, spec(str(tmp_path)))
    other = tmp_path / "other"
    other.mkdir()
    resume = None if case == "other cwd" else OLD
    cwd = str(other) if case == "other cwd" else str(tmp_path)
    wanted = spec(cwd, resume=resume)
    if case == "fork":
        wanted = ConversationSpec(
            permissions=wanted.permissions,
            approvals=wanted.approvals,
            cwd=cwd,
            resume_session_id=OLD,
            fork=True,
        )
    conversation = transport.open(wanted)
    if case == "pi refuses":
        # Pi would not switch: the warm process is ended and --session decides.
        events: list[AgentEvent] = []
        with pytest.raises(SessionResumeError):
            conversation.turn(TurnRequest("hi"), events.append)
        assert executor.processes[0].returncode is not None
        assert "--session" in executor.spawned[1].argv
        conversation.close()
        return
    assert conversation.turn(TurnRequest("hi"), [].append).text == "own"
    assert len(executor.spawned) == 2
    assert executor.processes[0].returncode is None  # still warm, never taken
    conversation.close()
    transport.release_warm()
    assert executor.processes[0].returncode is not None


def test_an_agent_prewarms_pi_and_ends_what_is_idle_on_release(tmp_path: Path) -> None:
    agent, executor = stream_agent("pi", PiRpcPeers([PiPeerTurn("hello")]))
    agent.prewarm(2, cwd=str(tmp_path))
    assert len(executor.spawned) == 2
    with agent.start_session(str(tmp_path)) as session:
        events: list[AgentEvent] = []
        assert session.turn("hi", on_event=events.append).result.text == "hello"
        assert not [e for e in events if isinstance(e, Lifecycle) and e.kind == "process_respawned"]
    assert len(executor.spawned) == 2
    agent.release_warm()
    assert all(process.returncode is not None for process in executor.processes)


def test_the_host_finds_a_session_file_by_its_id(tmp_path: Path) -> None:
    sessions = tmp_path / ".pi" / "agent" / "sessions"
    (sessions / "--a--").mkdir(parents=True)
    (sessions / "--b--").mkdir(parents=True)
    small = sessions / "--a--" / f"2026-12-01T00-00-00_{OLD}.jsonl"
    large = sessions / "--b--" / f"2026-12-02T00-00-00_{OLD}.jsonl"
    small.write_text("{}\n")
    large.write_text("{}\n" * 5)
    (sessions / "--a--" / "2026-12-01T00-00-00_other.jsonl").write_text("{}\n" * 9)
    assert host_session_file(str(tmp_path), OLD) == str(large)
    assert host_session_file(str(tmp_path), "01a23046-0000-7000-8000-0000000000bb") is None
