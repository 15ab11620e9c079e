"""AsyncAgents over the fake Claude Code stream process and the scripted FakeTransport."""

from __future__ import annotations

import threading
from typing import Any

from agentshim.aio import AsyncAgent
from agentshim.core.conversation import TransportKind
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.testing import FakeExecutor, FakeOutcome, FakeTransport
from agentshim.testing.claude_stream import ClaudePeerTurn, ClaudeStreamPeers

ENV = {"PATH": "/usr/bin"}
SLEEP = {"command": "sleep 30"}
TOUCH = {"command": "touch x.txt"}


def stream_agent(turns: list[ClaudePeerTurn], **kwargs: Any) -> tuple[AsyncAgent, FakeExecutor]:
    executor = FakeExecutor(peers=ClaudeStreamPeers(turns), binaries={"claude": "/usr/bin/claude"})
    kwargs.setdefault("permissions", NativePermissions.bypass())
    kwargs.setdefault("approvals", ApprovalPolicy.DENY)
    agent = AsyncAgent(
        "claude", executor=executor, env=ENV, transport=TransportKind.LONG_LIVED, **kwargs
    )
    return agent, executor


def fake_agent(outcomes: list[FakeOutcome], **kwargs: Any) -> tuple[AsyncAgent, FakeTransport]:
    transport = FakeTransport(outcomes, steerable=True)
    agent = AsyncAgent(
        transport,
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        **kwargs,
    )
    return agent, transport


def turn_threads() -> list[threading.Thread]:
    """The threads this layer starts for turns and calls, still alive."""
    return [t for t in threading.enumerate() if t.name.startswith("agentshim-aio-")]
