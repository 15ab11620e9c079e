"""An empty or whitespace-only prompt is refused before anything runs, on every path."""

from __future__ import annotations

import pytest

from agentshim import CliAgent
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import InvalidRequestError
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.providers import get_plugin, provider_names
from agentshim.session import Session
from agentshim.testing import FakeExecutor, scripted_turn
from agentshim.testing.conversation import FakeTransport

EMPTY = ["", " ", "  ", "\n", "\t \r\n", "\u3000"]


@pytest.mark.parametrize("prompt", EMPTY, ids=repr)
def test_a_turn_request_refuses_it(prompt: str) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        TurnRequest(prompt=prompt)
    assert caught.value.field == "TurnRequest.prompt"
    assert "empty or only whitespace" in str(caught.value)
    assert isinstance(caught.value, ValueError)


def test_a_prompt_with_anything_else_in_it_is_taken() -> None:
    assert TurnRequest(prompt=" . ").prompt == " . "


@pytest.mark.parametrize("provider", provider_names())
@pytest.mark.parametrize("prompt", ["", "   "], ids=repr)
def test_a_cli_agent_runs_nothing(provider: str, prompt: str) -> None:
    binary = get_plugin(provider).profile.binary
    fake = FakeExecutor(scripted_turn(provider, text="x"), binaries={binary: f"/usr/bin/{binary}"})
    agent = CliAgent(provider, executor=fake, env={"PATH": "/usr/bin"})
    with pytest.raises(InvalidRequestError, match="prompt"):
        agent.run(prompt)
    session = agent.start_session()
    with pytest.raises(InvalidRequestError, match="prompt"):
        session.turn(prompt)
    assert fake.requests == []


def test_a_session_opens_no_conversation() -> None:
    transport = FakeTransport()
    spec = ConversationSpec(permissions=NativePermissions.bypass(), approvals=ApprovalPolicy.DENY)
    session = Session(transport, spec)
    with pytest.raises(InvalidRequestError, match="prompt"):
        session.prepare_turn(" \n")
    assert transport.opened == []
    assert transport.calls == []
