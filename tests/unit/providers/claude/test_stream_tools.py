"""Claude Code's stream transport: tools answered in band, and hooks as Python callbacks."""

from __future__ import annotations

import json
import threading
import time
from typing import Any

import pytest

from agentshim import HookCallbacks, HookEvent, tool
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.events import AgentEvent, Lifecycle, ToolCall, ToolKind, ToolResult
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.providers.claude.provider import ClaudeProvider
from agentshim.providers.claude.stream_transport import ClaudeStreamTransport
from agentshim.testing import FakeExecutor
from agentshim.testing.claude_stream import ClaudePeerTurn, ClaudeStreamPeers
from agentshim.transport.installed import InstalledCli

LOOKUP = "mcp__agentshim__lookup"


class Rig:
    def __init__(self, turns: list[ClaudePeerTurn], **spec: Any) -> None:
        self.peers = ClaudeStreamPeers(turns)
        self.executor = FakeExecutor(peers=self.peers)
        context = InstalledCli(
            provider=ClaudeProvider(),
            executor=self.executor,
            binary_path="/usr/bin/claude",
            env={"PATH": "/usr/bin"},
            monotonic=time.monotonic,
        )
        self.conversation = ClaudeStreamTransport(context).open(
            ConversationSpec(
                permissions=NativePermissions.bypass(), approvals=ApprovalPolicy.DENY, **spec
            )
        )
        self.events: list[AgentEvent] = []

    def turn(self, prompt: str = "go") -> Any:
        return self.conversation.turn(TurnRequest(prompt), self.events.append)

    def results(self) -> list[ToolResult]:
        return [e for e in self.events if isinstance(e, ToolResult)]

    def lifecycle(self, kind: str) -> list[str]:
        return [e.detail for e in self.events if isinstance(e, Lifecycle) and e.kind == kind]


def lookup_tool(calls: list[tuple[str, int]]) -> Any:
    @tool
    def lookup(key: str) -> str:
        """Look a key up."""
        calls.append((key, threading.get_ident()))
        return f"value of {key}"

    return lookup


def test_a_tool_is_served_in_band_and_its_value_is_the_tool_result() -> None:
    calls: list[tuple[str, int]] = []
    rig = Rig(
        [ClaudePeerTurn(text="it is done", tool=LOOKUP, tool_input={"key": "k"})],
        tools=(lookup_tool(calls),),
    )
    result = rig.turn()
    assert result.text == "it is done"
    assert [key for key, _ in calls] == ["k"]
    (done,) = rig.results()
    assert (done.stdout, done.kind) == ("value of k", ToolKind.MCP)
    assert [e.kind for e in rig.events if isinstance(e, ToolCall)] == [ToolKind.MCP]
    peer = rig.peers.peers[-1]
    assert peer.sdk_servers == ("agentshim",)
    config = peer.argv[peer.argv.index("--mcp-config") + 1]
    assert json.loads(config) == {"mcpServers": {"agentshim": {"type": "sdk", "name": "agentshim"}}}
    (spawned,) = rig.executor.spawned
    assert spawned.env["ENABLE_TOOL_SEARCH"] == "false"


def test_a_raising_tool_is_an_error_result_and_the_turn_goes_on() -> None:
    @tool
    def lookup(key: str) -> str:
        """Fails."""
        raise ValueError(f"no {key}")

    rig = Rig(
        [ClaudePeerTurn(text="recovered", tool=LOOKUP, tool_input={"key": "k"})], tools=(lookup,)
    )
    assert rig.turn().text == "recovered"
    (done,) = rig.results()
    assert done.failed
    assert "ValueError: no k" in done.stderr + done.stdout
    assert rig.lifecycle("tool_failed") == ["lookup: ValueError: no k"]


def test_without_tools_nothing_is_registered_and_an_mcp_message_is_refused() -> None:
    rig = Rig([ClaudePeerTurn(text="plain")])
    assert rig.turn().text == "plain"
    peer = rig.peers.peers[-1]
    assert "--mcp-config" not in peer.argv
    assert not [f for f in peer.received if f.get("type") == "control_request"]


def test_pre_tool_use_may_rewrite_the_input_and_the_others_observe() -> None:
    calls: list[tuple[str, int]] = []
    seen: list[tuple[str, str | None]] = []

    def before(request: ApprovalRequest) -> ApprovalDecision:
        seen.append(("pre", request.tool))
        assert request.kind is ToolKind.MCP
        return ApprovalDecision.allow({"key": "rewritten"})

    def after(event: HookEvent) -> None:
        seen.append((event.name, event.tool))

    def stopped(event: HookEvent) -> None:
        seen.append((event.name, None))

    hooks = HookCallbacks(pre_tool_use=before, post_tool_use=after, stop=stopped, matcher="mcp__.*")
    rig = Rig(
        [ClaudePeerTurn(tool=LOOKUP, tool_input={"key": "k"})],
        tools=(lookup_tool(calls),),
        hooks=hooks,
    )
    rig.turn()
    assert [key for key, _ in calls] == ["rewritten"]
    assert seen == [("pre", LOOKUP), ("PostToolUse", LOOKUP), ("Stop", None)]
    initialize = next(
        f["request"]
        for f in rig.peers.peers[-1].received
        if f.get("type") == "control_request" and f["request"]["subtype"] == "initialize"
    )
    assert initialize["hooks"]["PreToolUse"] == [
        {"timeout": 60, "matcher": "mcp__.*", "hookCallbackIds": ["agentshim_pre_tool_use"]}
    ]
    assert rig.lifecycle("hook_decided") == [f"PreToolUse {LOOKUP}: allow"]


def test_pre_tool_use_may_deny_and_the_agent_reads_the_reason() -> None:
    hooks = HookCallbacks(pre_tool_use=lambda _: ApprovalDecision.deny("not today"))
    rig = Rig([ClaudePeerTurn(tool="Bash", tool_input={"command": "ls"})], hooks=hooks)
    rig.turn()
    (done,) = rig.results()
    assert done.failed
    assert "not today" in done.stderr + done.stdout


def test_a_hook_that_raises_counts_as_no_opinion_and_is_reported() -> None:
    def broken(_: ApprovalRequest) -> ApprovalDecision:
        raise RuntimeError("hook bug")

    rig = Rig(
        [ClaudePeerTurn(tool="Bash", tool_input={"command": "ls"}, text="ran")],
        hooks=HookCallbacks(pre_tool_use=broken),
    )
    assert rig.turn().text == "ran"
    (done,) = rig.results()
    assert not done.failed
    assert rig.lifecycle("hook_failed") == ["agentshim_pre_tool_use: RuntimeError: hook bug"]


def test_a_turn_cannot_bring_tools_of_its_own_to_a_running_process() -> None:
    rig = Rig([ClaudePeerTurn()])
    with pytest.raises(ProviderCapabilityError, match="tools"):
        rig.conversation.turn(TurnRequest("go", tools=(lookup_tool([]),)), rig.events.append)
