"""Where tools or hooks cannot reach, the turn is refused up front with what to do instead."""

from __future__ import annotations

import pytest

from agentshim import CliAgent, HookCallbacks, StdioMcpServer, TurnRequest, tool
from agentshim.agent import Agent
from agentshim.core.conversation import TransportKind
from agentshim.core.errors import InvalidRequestError, ProviderCapabilityError
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.testing import FakeExecutor


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    return key


def test_tools_need_a_cli_on_this_machine() -> None:
    agent = CliAgent("codex", executor=FakeExecutor())
    with pytest.raises(ProviderCapabilityError, match="HostCommandExecutor"):
        agent.run(TurnRequest("go", tools=(lookup,)))


def test_a_server_of_the_tools_name_is_refused() -> None:
    agent = CliAgent("codex", executor=FakeExecutor())
    clash = StdioMcpServer("agentshim", "/bin/true")
    with pytest.raises(InvalidRequestError, match="rename that server"):
        agent.run(TurnRequest("go", tools=(lookup,), mcp_servers=(clash,)))


@pytest.mark.parametrize(
    ("provider", "transport", "match"),
    [
        ("codex", TransportKind.ONE_SHOT, "one-shot turns cannot call hook callbacks"),
        ("gemini", TransportKind.LONG_LIVED, "over ACP has no hook callbacks"),
        ("pi", TransportKind.LONG_LIVED, "Pi has no hook callbacks"),
    ],
)
def test_hooks_are_refused_where_the_transport_has_none(
    provider: str, transport: TransportKind, match: str
) -> None:
    agent = Agent(
        provider,
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        executor=FakeExecutor(),
        transport=transport,
    )
    hooks = HookCallbacks(stop=lambda _: None)
    with (
        agent.start_session("/tmp", hooks=hooks) as session,
        pytest.raises(ProviderCapabilityError, match=match),
    ):
        session.turn("go")


def test_hook_callbacks_must_be_callable() -> None:
    with pytest.raises(InvalidRequestError, match="must be a function"):
        HookCallbacks(stop="not a function")  # type: ignore[arg-type]
