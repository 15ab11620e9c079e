"""What every ACP dialect's transport promises alike, on the fake agent with its quirks."""

from __future__ import annotations

import dataclasses
import signal

import pytest

from agentshim.acp.dialect import AcpDialect
from agentshim.core.conversation import ConversationSpec, SteerableConversation
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.providers.copilot.acp import COPILOT_ACP
from agentshim.providers.gemini.acp import GEMINI_ACP
from agentshim.providers.opencode.acp import OPENCODE_ACP
from agentshim.testing import acp as fake_acp
from agentshim.testing.acp import AcpPeers, AcpPeerTurn, AcpQuirks
from agentshim.testing.recording import RecordingEventHandler

from .rigs import transport_on

DIALECTS = [
    pytest.param("gemini", GEMINI_ACP, fake_acp.GEMINI_QUIRKS, id="gemini"),
    pytest.param("opencode", OPENCODE_ACP, fake_acp.OPENCODE_QUIRKS, id="opencode"),
    pytest.param("copilot", COPILOT_ACP, fake_acp.COPILOT_QUIRKS, id="copilot"),
]


def _open(provider: str, dialect: AcpDialect, peers: AcpPeers, **options: float) -> object:
    transport, executor = transport_on(provider, dialect, peers, **options)
    spec = ConversationSpec(permissions=NativePermissions.bypass(), approvals=ApprovalPolicy.DENY)
    return transport.open(spec), executor


@pytest.mark.parametrize(("provider", "dialect", "quirks"), DIALECTS)
def test_initialize_advertises_no_fs_and_no_terminal(
    provider: str, dialect: AcpDialect, quirks: AcpQuirks
) -> None:
    peers = AcpPeers([AcpPeerTurn("ok")], quirks=quirks)
    conversation, _ = _open(provider, dialect, peers)
    conversation.turn(TurnRequest("go"), RecordingEventHandler())  # type: ignore[attr-defined]
    capabilities = peers.peers[0].client_capabilities
    assert capabilities is not None
    assert capabilities["terminal"] is False
    assert not any(capabilities["fs"].values())


@pytest.mark.parametrize(("provider", "dialect", "quirks"), DIALECTS)
def test_a_conversation_cannot_be_steered(
    provider: str, dialect: AcpDialect, quirks: AcpQuirks
) -> None:
    conversation, _ = _open(provider, dialect, AcpPeers([], quirks=quirks))
    assert not isinstance(conversation, SteerableConversation)


@pytest.mark.parametrize(("provider", "dialect", "quirks"), DIALECTS)
def test_close_ends_an_agent_that_ignores_stdin_eof(
    provider: str, dialect: AcpDialect, quirks: AcpQuirks
) -> None:
    stubborn = dataclasses.replace(quirks, exits_on_stdin_eof=False)
    conversation, executor = _open(
        provider, dialect, AcpPeers([AcpPeerTurn("ok")], quirks=stubborn), close_grace=0.2
    )
    conversation.turn(TurnRequest("go"), RecordingEventHandler())  # type: ignore[attr-defined]
    conversation.close()  # type: ignore[attr-defined]
    (process,) = executor.processes
    # Stdin's end came first; left unanswered, it was followed by SIGTERM, which ended it.
    assert process.stdin_closed
    assert process.returncode == -signal.SIGTERM
    assert (process.terminate_calls, process.kill_calls) == (1, 0)
