"""Live: a Python function given as a tool runs when the scripted model calls it, on every CLI.

Each pinned CLI runs one one-shot turn against the model server. The script calls the tool by
the name that CLI gives an MCP tool, then answers once the tool's result comes back. The test
checks that the function ran with the model's arguments (on a thread of its own), that its return
value reached the model's next request, that nothing the turn installed is left behind, and
that no argv holds anything but the socket's path. Claude Code's stream transport is checked
too, with its in-band route (``sdkMcpServers``) and a PreToolUse hook. Not part of the
conformance count; run ``pytest tests/live/test_tools.py``.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from agentshim.agent import Agent
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import TransportKind
from agentshim.core.events import (
    AgentEvent,
    Lifecycle,
    RunStarted,
    ToolCall,
    ToolKind,
    ToolResult,
)
from agentshim.core.hooks import HookCallbacks, HookEvent
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.doctor.model_server import Match, Message, ModelServer, RequestKind, Rule, Text
from agentshim.doctor.model_server import ToolCall as ScriptedCall
from agentshim.doctor.offline import OfflineCli, offline_cli
from agentshim.providers.codex import CodexProvider, CodexSandboxConfig
from agentshim.testing import RecordingEventHandler
from agentshim.tools import Tool, tool

from .binaries import require_binary
from .one_shot import pinned_offline, run_one_shot
from .streams import LONG_LIVED_TRANSPORTS, CountingExecutor

# What each CLI calls tool ``lookup`` of MCP server ``agentshim``: (offered as, called as,
# namespace of the call). Codex offers an MCP server as one Responses ``namespace`` tool,
# ``mcp__agentshim``, and the call names the function inside it plus that namespace.
TOOL_NAMES = {
    "claude": ("mcp__agentshim__lookup", "mcp__agentshim__lookup", None),
    "codex": ("mcp__agentshim", "lookup", "mcp__agentshim"),
    "copilot": ("agentshim-lookup", "agentshim-lookup", None),
    "gemini": ("mcp_agentshim_lookup", "mcp_agentshim_lookup", None),
    "opencode": ("agentshim_lookup", "agentshim_lookup", None),
}
# Pi has no MCP client: the tools reach it as an extension that names them agentshim_<tool>.
SCRIPTED = {**TOOL_NAMES, "pi": ("agentshim_lookup", "agentshim_lookup", None)}
ANSWER = "the tool said 42-blue"


def _script(provider: str) -> tuple[Rule, ...]:
    offered, called, namespace = SCRIPTED[provider]
    call = ScriptedCall(tool=called, arguments={"key": "colour", "count": 42}, namespace=namespace)
    return (
        Rule(
            match=Match(last_input_is_tool_result=False, offers_tool=offered),
            respond=Message((call,)),
        ),
        Rule(match=Match(last_input_is_tool_result=True), respond=Text(ANSWER)),
    )


def _recording_lookup() -> tuple[Tool, list[tuple[str, int]]]:
    """The tool the script calls, ``lookup``, and the list of the calls it ran."""
    calls: list[tuple[str, int]] = []

    @tool
    def lookup(key: str, count: int) -> str:
        """Look a key up; returns what it holds."""
        calls.append((key, count))
        return f"{count}-blue"

    return lookup, calls


def _long_lived_agent(
    provider: str, cli: OfflineCli, events: list[AgentEvent], **options: Any
) -> Agent:
    """An Agent of ``provider`` on ``cli``, its events kept in ``events``; ``options`` name its
    transport, permissions and approvals."""
    return Agent(
        provider,
        model=cli.model,
        env=dict(cli.env),
        event_handlers=events.append,
        check_timeout=60.0,
        **options,
    )


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*")}


#: Every CLI one-shot, and Codex under its own sandbox too: there it asks before an MCP tool
#: call, and the tools' bridge must be let through (the bridge asks the caller itself).
ONE_SHOT = [
    *(pytest.param(provider, None, id=provider) for provider in sorted(TOOL_NAMES)),
    pytest.param("codex", CodexSandboxConfig(), id="codex-workspace-write"),
]


@pytest.mark.parametrize(("provider", "sandbox"), ONE_SHOT)
def test_the_function_runs_and_its_result_reaches_the_model(
    provider: str, sandbox: CodexSandboxConfig | None, work: Path, tmp_path: Path
) -> None:
    lookup, calls = _recording_lookup()
    events = RecordingEventHandler()
    with ModelServer(_script(provider)) as model:
        cli = pinned_offline(provider, model, tmp_path)
        chosen = provider if sandbox is None else CodexProvider(sandbox=sandbox)
        before = _files(work)
        tmp_before = set(os.listdir("/tmp"))
        result = run_one_shot(cli, chosen, work, "Look up the colour.", events, tools=(lookup,))
        requests = [r for r in model.requests if r.raw_body]
    assert calls == [("colour", 42)]
    assert result.text == ANSWER
    assert any(b"42-blue" in r.raw_body for r in requests[1:]), "the result never reached it"
    assert _files(work) == before, "the turn left files in the workspace"
    left = {n for n in set(os.listdir("/tmp")) - tmp_before if n.startswith("agentshim-tools-")}
    assert not left, f"the tool socket directory was left: {left}"
    (started,) = events.of_type(RunStarted)
    # The only trace of the tools in argv is the bridge and its socket path (no secret).
    assert not any("42-blue" in arg for arg in started.argv)
    calls_seen = [e for e in events.of_type(ToolCall) if e.kind is ToolKind.MCP]
    results_seen = [e for e in events.of_type(ToolResult) if e.kind is ToolKind.MCP]
    assert calls_seen, events.of_type(ToolCall)
    assert any("42-blue" in e.stdout for e in results_seen), results_seen


def test_claude_stream_serves_tools_in_band_and_calls_its_hooks(work: Path, tmp_path: Path) -> None:
    binary = require_binary("claude")
    lookup, calls = _recording_lookup()
    seen: list[tuple[str, str | None]] = []

    def before(request: ApprovalRequest) -> ApprovalDecision | None:
        seen.append(("PreToolUse", request.tool))
        if request.tool == "mcp__agentshim__lookup":
            return ApprovalDecision.allow({**request.args, "count": 43})  # rewritten
        return None

    def after(event: HookEvent) -> None:
        seen.append((event.name, event.tool))

    def stopped(event: HookEvent) -> None:
        seen.append((event.name, None))

    events: list[AgentEvent] = []
    with ModelServer(_script("claude")) as model:
        cli = offline_cli("claude", model, root=tmp_path, bin_dir=binary.path.parent)
        agent = _long_lived_agent(
            "claude",
            cli,
            events,
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            executor=CountingExecutor(),
            transport=TransportKind.LONG_LIVED,
        )
        hooks = HookCallbacks(pre_tool_use=before, post_tool_use=after, stop=stopped)
        with agent.start_session(str(work), tools=(lookup,), hooks=hooks) as session:
            result = session.turn("Look up the colour.").result
        bodies = [r.raw_body for r in model.requests if r.kind is RequestKind.MAIN]
    assert calls == [("colour", 43)]
    assert result.text == ANSWER
    assert any(b"43-blue" in body for body in bodies[1:])
    assert ("PreToolUse", "mcp__agentshim__lookup") in seen
    assert ("PostToolUse", "mcp__agentshim__lookup") in seen
    assert ("Stop", None) in seen
    assert not list(work.iterdir()), "the in-band route writes no MCP config"
    started = [e for e in events if isinstance(e, RunStarted)]
    assert started
    assert not any("blue" in arg for arg in started[0].argv)
    assert any(isinstance(e, ToolCall) and e.kind is ToolKind.MCP for e in events)


def test_pi_gets_the_tools_as_an_extension(work: Path, tmp_path: Path) -> None:
    lookup, calls = _recording_lookup()
    events = RecordingEventHandler()
    with ModelServer(_script("pi")) as model:
        cli = pinned_offline("pi", model, tmp_path)
        result = run_one_shot(cli, "pi", work, "Look up the colour.", events, tools=(lookup,))
        requests = [r for r in model.requests if r.raw_body]
    assert calls == [("colour", 42)]
    assert result.text == ANSWER
    assert any(b"42-blue" in r.raw_body for r in requests[1:])
    assert not list(work.iterdir())
    results_seen = [e for e in events.of_type(ToolResult) if e.tool == "agentshim_lookup"]
    assert any("42-blue" in e.stdout for e in results_seen), events.of_type(ToolResult)
    assert all(e.kind is ToolKind.MCP for e in results_seen)
    assert [e.kind for e in events.of_type(ToolCall) if e.tool == "agentshim_lookup"] == [
        ToolKind.MCP
    ]


#: Every long-lived transport but Claude Code's stream-json (its in-band route is the test
#: above): the CLIs' streams (app-server, ACP, rpc) and Claude Code's TUI.
LONG_LIVED = [
    pytest.param(provider, transport, id=f"{provider}-{transport.value}")
    for provider, transport in LONG_LIVED_TRANSPORTS
    if (provider, transport) != ("claude", TransportKind.LONG_LIVED)
]


@pytest.mark.parametrize(("provider", "transport"), LONG_LIVED)
def test_a_long_lived_conversation_serves_its_tools_to_every_turn(
    provider: str, transport: TransportKind, work: Path, tmp_path: Path
) -> None:
    lookup, calls = _recording_lookup()
    events: list[AgentEvent] = []
    tmp_before = set(os.listdir("/tmp"))
    executor = CountingExecutor()
    with ModelServer(_script(provider)) as model:
        agent = _long_lived_agent(
            provider,
            pinned_offline(provider, model, tmp_path),
            events,
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            executor=executor,
            transport=transport,
        )
        with agent.start_session(str(work), tools=(lookup,)) as session:
            first = session.turn("Look up the colour.").result
            second = session.turn("Look it up again.").result
            spawned = len(executor.spawned)
        bodies = [r.raw_body for r in model.requests if r.kind is RequestKind.MAIN]
    assert calls == [("colour", 42)] * 2
    assert (first.text, second.text) == (ANSWER, ANSWER)
    assert spawned == 1, "both turns ran on one process"
    assert sum(b"42-blue" in body for body in bodies) >= 2
    assert not list(work.iterdir())
    left = {n for n in set(os.listdir("/tmp")) - tmp_before if n.startswith("agentshim-tools-")}
    assert not left, f"the tool socket directory outlived the conversation: {left}"


#: Every long-lived transport but Pi's (which takes no handler) with bypass, where the CLI asks
#: nothing; and Codex under its workspace-write sandbox, where it would ask for every MCP tool
#: call (an elicitation) unless the tools' bridge is let through: allowed, then denied.
HANDLED = [
    *(
        pytest.param(*p.values, NativePermissions.bypass(), True, id=p.id)
        for p in LONG_LIVED
        if p.values[0] != "pi"
    ),
    *(
        pytest.param(
            "codex",
            TransportKind.LONG_LIVED,
            NativePermissions.workspace_write(),
            allowed,
            id=f"codex-workspace-write-{'allowed' if allowed else 'denied'}",
        )
        for allowed in (True, False)
    ),
]


@pytest.mark.parametrize(("provider", "transport", "permissions", "allowed"), HANDLED)
def test_an_approval_handler_is_asked_at_the_tools_socket_and_the_call_reported(
    provider: str,
    transport: TransportKind,
    permissions: NativePermissions,
    allowed: bool,
    work: Path,
    tmp_path: Path,
) -> None:
    """The socket asks the handler and reports the call; a deny reaches the model instead."""
    lookup, calls = _recording_lookup()
    asked: list[ApprovalRequest] = []

    def decide(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision.allow() if allowed else ApprovalDecision.deny("not-this-key")

    events: list[AgentEvent] = []
    with ModelServer(_script(provider)) as model:
        cli = pinned_offline(provider, model, tmp_path)
        agent = _long_lived_agent(
            provider, cli, events, permissions=permissions, approvals=decide, transport=transport
        )
        with agent.start_session(str(work), tools=(lookup,)) as session:
            result = session.turn("Look up the colour.").result
        bodies = [r.raw_body for r in model.requests if r.kind is RequestKind.MAIN]
    assert result.text == ANSWER
    at_socket = [r for r in asked if (r.tool_id or "").startswith("agentshim-tool-")]
    assert [(r.tool, dict(r.args)) for r in at_socket] == [
        ("lookup", {"key": "colour", "count": 42})
    ]
    refused = [e for e in events if isinstance(e, Lifecycle) and e.kind == "server_request_refused"]
    assert not refused, "the CLI asked something agentshim could not answer"
    if not allowed:
        assert calls == []
        assert any(b"not-this-key" in body for body in bodies[1:]), "the deny never reached it"
        return
    assert calls == [("colour", 42)]
    reported = [e for e in events if isinstance(e, ToolCall) and e.tool == "lookup"]
    assert [e.tool_id for e in reported] == [at_socket[0].tool_id]
    assert any(
        isinstance(e, ToolResult) and e.tool_id == at_socket[0].tool_id and "42-blue" in e.stdout
        for e in events
    )


@pytest.mark.parametrize("provider", sorted(SCRIPTED))
def test_a_raising_function_is_a_tool_error_the_model_reads(
    provider: str, work: Path, tmp_path: Path
) -> None:
    @tool
    def lookup(key: str, count: int) -> str:
        """Look a key up; returns what it holds."""
        raise LookupError(f"no record {key}-{count}-missing")

    with ModelServer(_script(provider)) as model:
        cli = pinned_offline(provider, model, tmp_path)
        result = run_one_shot(cli, provider, work, "Look up the colour.", tools=(lookup,))
        bodies = [r.raw_body for r in model.requests if r.raw_body]
    assert result.text == ANSWER, "the turn went on after the tool failed"
    assert any(b"colour-42-missing" in body for body in bodies[1:]), "the error never reached it"
