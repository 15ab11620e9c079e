"""The generic ACP provider: any agent named by its command line, through Agent and Session."""

from __future__ import annotations

from collections.abc import Iterable
from importlib.metadata import EntryPoint
from typing import Any

import pytest

from agentshim import Agent
from agentshim.core.approvals import ApprovalDecision
from agentshim.core.conversation import TransportKind
from agentshim.core.errors import InvalidRequestError, ProviderCapabilityError
from agentshim.core.events import AgentEvent, ConfigOptionsChanged, ModeChanged
from agentshim.core.permissions import ApprovalPolicy, NativeMode, NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.execution.process import SpawnRequest
from agentshim.providers import DEFAULT_CATALOG, ENTRY_POINT_GROUP
from agentshim.providers.acp import AcpAgentConfig, acp_catalog, acp_plugin
from agentshim.providers.discovery import discover
from agentshim.testing import FakeExecutor
from agentshim.testing.acp import FAKE_MODELS, AcpPeer, AcpPeers, AcpPeerTurn, AcpQuirks

from .rigs import methods

BYPASS = NativePermissions.bypass()


def agent_on(
    peers: Any, *, name: str = "fake", catalog: Any = None, **options: Any
) -> tuple[Agent, FakeExecutor]:
    """An Agent on the ACP agent ``name`` of ``catalog``, its ``fake-agent`` played by ``peers``.

    The catalog is by default the agent ``fake`` run as ``fake-agent --acp``; the Agent asks
    nothing (bypass permissions, approvals denied) and keeps its process, unless ``options``
    say otherwise.
    """
    executor = FakeExecutor(peers=peers, binaries={"fake-agent": "/usr/bin/fake-agent"})
    settings: dict[str, Any] = {
        "env": {"PATH": "/usr/bin"},
        "permissions": BYPASS,
        "approvals": ApprovalPolicy.DENY,
        "transport": TransportKind.LONG_LIVED,
        **options,
    }
    catalog = catalog or fake_catalog()
    return Agent(name, executor=executor, catalog=catalog, **settings), executor


def fake_catalog(**config: Any) -> Any:
    """The catalog of the ACP agent ``fake``, run as ``fake-agent --acp`` with ``config``."""
    return acp_catalog(AcpAgentConfig(name="fake", command="fake-agent --acp", **config))


PLUGIN = acp_plugin(AcpAgentConfig(name="my-agent", command=["fake-agent", "--acp"]))
"""What a third-party package registers under the ``agentshim.providers`` entry points."""


def test_an_acp_agent_registers_as_an_entry_point_plugin() -> None:
    point = EntryPoint("my-agent", f"{__name__}:PLUGIN", ENTRY_POINT_GROUP)
    logged: list[str] = []
    catalog = discover(DEFAULT_CATALOG, log=logged.append, found=[point])
    assert logged == []
    peers = AcpPeers([AcpPeerTurn("hello")], quirks=AcpQuirks())
    agent, _ = agent_on(peers, name="my-agent", catalog=catalog, transport=None)
    with agent.start_session() as session:
        assert session.turn("hi").result.text == "hello"


class TestConfig:
    def test_a_command_string_is_split_as_a_shell_would(self) -> None:
        config = AcpAgentConfig(name="x", command="npx -y 'some adapter'")
        assert config.words == ("npx", "-y", "some adapter")
        assert config.profile().binary == "npx"

    @pytest.mark.parametrize("command", ["", "   ", [], ["ok", ""]])
    def test_an_empty_command_is_refused(self, command: Any) -> None:
        with pytest.raises(InvalidRequestError, match="command"):
            AcpAgentConfig(name="x", command=command)


class TestStream:
    def test_two_turns_run_on_one_process_started_with_the_command(self) -> None:
        peers = AcpPeers([AcpPeerTurn("one"), AcpPeerTurn("two")], quirks=AcpQuirks())
        agent, executor = agent_on(peers)
        with agent.start_session() as session:
            assert session.turn("a").result.text == "one"
            assert session.turn("b").result.text == "two"
        assert len(executor.spawned) == 1
        assert peers.peers[0].argv == ("/usr/bin/fake-agent", "--acp")

    def test_set_mode_is_sent_before_the_next_prompt_and_reported(self) -> None:
        peers = AcpPeers([AcpPeerTurn("one"), AcpPeerTurn("two")], quirks=AcpQuirks())
        agent, _ = agent_on(peers)
        events: list[AgentEvent] = []
        with agent.start_session() as session:
            session.set_mode("plan")  # before the first turn: applied to it
            session.turn("a", on_event=events.append)
            assert [e.mode_id for e in events if isinstance(e, ModeChanged)][-1] == "plan"
            with pytest.raises(InvalidRequestError, match="offers the modes default, plan"):
                session.set_mode("yolo")
        received = methods(peers.peers[0])
        assert received.index("session/set_mode") < received.index("session/prompt")

    def test_a_permission_mode_puts_the_session_in_the_agents_mode(self) -> None:
        peers = AcpPeers([AcpPeerTurn("one")], quirks=AcpQuirks())
        agent, _ = agent_on(
            peers,
            catalog=fake_catalog(permission_modes={NativeMode.READ_ONLY: "plan"}),
            permissions=NativePermissions.read_only(),
        )
        with agent.start_session() as session:
            session.turn("a")
        asked = [f for f in peers.peers[0].received if f.get("method") == "session/set_mode"]
        assert [f["params"]["modeId"] for f in asked] == ["plan"]

    def test_a_turn_on_another_model_switches_the_agents_model_setting(self) -> None:
        peers = AcpPeers([AcpPeerTurn("one"), AcpPeerTurn("two")], quirks=AcpQuirks())
        agent, _ = agent_on(peers)
        events: list[AgentEvent] = []
        with agent.start_session() as session:
            session.turn("a")
            session.turn(TurnRequest("b", model=FAKE_MODELS[1]), on_event=events.append)
        (changed,) = [e for e in events if isinstance(e, ConfigOptionsChanged)]
        assert changed.options[0].value == FAKE_MODELS[1]
        assert peers.peers[0].model == FAKE_MODELS[1]

    def test_a_model_the_agent_does_not_offer_is_refused_before_the_prompt(self) -> None:
        peers = AcpPeers([AcpPeerTurn("one")], quirks=AcpQuirks())
        agent, _ = agent_on(peers)
        with agent.start_session() as session, pytest.raises(InvalidRequestError):
            session.turn(TurnRequest("a", model="no-such-model"))
        assert "session/prompt" not in methods(peers.peers[0])


class TestOneShot:
    def test_each_turn_is_a_conversation_opened_prompted_once_and_closed(self) -> None:
        peers = AcpPeers([AcpPeerTurn("one"), AcpPeerTurn("two")], quirks=AcpQuirks())
        agent, executor = agent_on(peers, transport=TransportKind.ONE_SHOT)
        with agent.start_session() as session:
            first = session.turn("a").result
            second = session.turn("b").result
        assert (first.text, second.text) == ("one", "two")
        assert second.session_id == first.session_id
        assert len(executor.spawned) == 2
        assert methods(peers.peers[0]).count("session/prompt") == 1
        # The second process reopened the session the first one made.
        assert methods(peers.peers[1])[:3] == ["initialize", "session/load", "session/prompt"]
        assert all(process.stdin_closed for process in executor.processes)

    def test_one_shot_turns_take_an_approval_handler(self) -> None:
        peers = AcpPeers([AcpPeerTurn("ok", tool="touch x", ask=True)], quirks=AcpQuirks())
        agent, _ = agent_on(
            peers,
            transport=None,
            permissions=NativePermissions.workspace_write(),
            approvals=lambda request: ApprovalDecision.allow(),
        )
        with agent.start_session() as session:
            assert session.turn("a").result.text == "ok"


class _Versioned(AcpPeer):
    version: object = 2

    def on_stdin(self, line: str) -> Iterable[Any]:
        out = list(super().on_stdin(line))
        if '"initialize"' in line:
            import json

            from agentshim.execution.process import StdoutLine

            frame = json.loads(out[0].text)
            frame["result"]["protocolVersion"] = self.version
            return [StdoutLine(json.dumps(frame) + "\n")]
        return out


def test_an_agent_on_another_protocol_version_is_refused_with_both_versions() -> None:
    peers = AcpPeers([AcpPeerTurn("never")], quirks=AcpQuirks())

    def spawn(request: SpawnRequest) -> AcpPeer:
        peer = _Versioned(peers, request.argv)
        peers.spawned(request, peer)
        return peer

    agent, _ = agent_on(spawn)
    with agent.start_session() as session, pytest.raises(ProviderCapabilityError) as caught:
        session.turn("a")
    assert "version 2" in str(caught.value)
    assert "speaks version 1" in str(caught.value)
    assert methods(peers.peers[0]) == ["initialize"]


def test_set_mode_on_a_transport_without_modes_fails_the_turn_it_would_apply_to() -> None:
    from agentshim.testing import scripted_turn

    executor = FakeExecutor(scripted_turn("claude"), binaries={"claude": "/usr/bin/claude"})  # type: ignore[arg-type]
    agent = Agent(
        "claude",
        executor=executor,
        env={"PATH": "/usr/bin"},
        permissions=BYPASS,
        approvals=ApprovalPolicy.DENY,
    )
    with agent.start_session() as session:
        session.set_mode("plan")
        with pytest.raises(ProviderCapabilityError, match="no modes or settings"):
            session.turn("hi")
