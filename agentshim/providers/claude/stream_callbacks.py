"""What a long-lived Claude Code process calls back into this process for: tools and hooks.

Both are registered with the ``initialize`` control request. Tools go in as an in-process
("sdk") MCP server: the argv names it with ``--mcp-config`` (``{"type": "sdk"}``),
``initialize`` lists it in ``sdkMcpServers``, and the CLI then sends every MCP message for it
as an ``mcp_message`` control request, answered with ``{"mcp_response": ...}`` (a
notification with an empty JSON-RPC result). Hooks go in under ``hooks`` (event name to
``[{"matcher"?, "hookCallbackIds", "timeout"}]``) and arrive as ``hook_callback`` requests
naming the callback id; a PreToolUse answer carries ``hookSpecificOutput`` with
``permissionDecision`` (and ``updatedInput`` to rewrite the tool's input). Facts from the
a3 capture and Claude Code's hooks reference; see docs/tools.md.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentshim.core import lifecycle_kinds as lk
from agentshim.core.approvals import ApprovalRequest
from agentshim.core.events import Emit, Lifecycle
from agentshim.core.hooks import HookCallbacks, HookEvent
from agentshim.core.jsonvalues import as_mapping, as_str
from agentshim.core.tools import TOOL_SERVER_NAME
from agentshim.tools.host import ToolHost

from .events import tool_kind

__all__ = [
    "POST_TOOL_USE_ID",
    "PRE_TOOL_USE_ID",
    "STOP_ID",
    "hook_answer",
    "initialize_fields",
    "mcp_answer",
    "sdk_mcp_argv",
]

PRE_TOOL_USE_ID = "agentshim_pre_tool_use"
POST_TOOL_USE_ID = "agentshim_post_tool_use"
STOP_ID = "agentshim_stop"


def sdk_mcp_argv(server_name: str = TOOL_SERVER_NAME) -> tuple[str, ...]:
    """The ``--mcp-config`` flag that declares the in-process MCP server ``server_name``."""
    config = {"mcpServers": {server_name: {"type": "sdk", "name": server_name}}}
    return ("--mcp-config", json.dumps(config, separators=(",", ":")))


def initialize_fields(host: ToolHost | None, hooks: HookCallbacks | None) -> dict[str, Any]:
    """The fields of the ``initialize`` request that register ``host``'s server and ``hooks``."""
    fields: dict[str, Any] = {}
    if host is not None:
        fields["sdkMcpServers"] = [host.server_name]
    if hooks is not None and hooks.registered:
        timeout = max(1, round(hooks.timeout))
        matched: dict[str, Any] = {"timeout": timeout}
        if hooks.matcher is not None:
            matched["matcher"] = hooks.matcher
        registered: dict[str, Any] = {}
        if hooks.pre_tool_use is not None:
            registered["PreToolUse"] = [{**matched, "hookCallbackIds": [PRE_TOOL_USE_ID]}]
        if hooks.post_tool_use is not None:
            registered["PostToolUse"] = [{**matched, "hookCallbackIds": [POST_TOOL_USE_ID]}]
        if hooks.stop is not None:
            registered["Stop"] = [{"hookCallbackIds": [STOP_ID], "timeout": timeout}]
        fields["hooks"] = registered
    return fields


def mcp_answer(host: ToolHost | None, request: Mapping[str, Any]) -> dict[str, Any] | None:
    """The success response to an ``mcp_message`` request; None when it is not for ``host``."""
    if host is None or request.get("server_name") != host.server_name:
        return None
    answer: object = host.answer(request.get("message"))
    if answer is None:  # a notification: the CLI still waits for a response to its request
        answer = {"jsonrpc": "2.0", "result": {}}
    return {"mcp_response": answer}


def hook_answer(
    hooks: HookCallbacks | None,
    request: Mapping[str, Any],
    emit: Emit,
) -> dict[str, Any] | None:
    """The response to a ``hook_callback`` request; None when no callback has its id.

    A callback that raises is reported as ``Lifecycle("hook_failed")`` and answered with no
    decision, so the CLI goes on as if the hook were not there.
    """
    if hooks is None:
        return None
    callback_id = request.get("callback_id")
    given = as_mapping(request.get("input")) or {}
    tool = as_str(given.get("tool_name"))
    args = dict(as_mapping(given.get("tool_input")) or {})
    tool_id = as_str(given.get("tool_use_id")) or as_str(request.get("tool_use_id"))
    try:
        if callback_id == PRE_TOOL_USE_ID and hooks.pre_tool_use is not None:
            return _pre_tool_use(hooks, tool or "unknown", args, tool_id, emit)
        if callback_id == POST_TOOL_USE_ID and hooks.post_tool_use is not None:
            event = HookEvent(
                "PostToolUse", tool, args, tool_id, given.get("tool_response"), dict(given)
            )
            hooks.post_tool_use(event)
            return {}
        if callback_id == STOP_ID and hooks.stop is not None:
            hooks.stop(HookEvent("Stop", payload=dict(given)))
            return {}
    except Exception as error:  # a broken hook costs its own decision, never the turn
        emit(Lifecycle(lk.HOOK_FAILED, f"{callback_id}: {type(error).__name__}: {error}"[:2000]))
        return {}
    return None


def _pre_tool_use(
    hooks: HookCallbacks,
    tool: str,
    args: dict[str, Any],
    tool_id: str | None,
    emit: Emit,
) -> dict[str, Any]:
    assert hooks.pre_tool_use is not None
    decision = hooks.pre_tool_use(ApprovalRequest(tool, args, tool_kind(tool), tool_id))
    if decision is None:
        return {}
    output: dict[str, Any] = {"hookEventName": "PreToolUse"}
    if decision.allowed:
        output["permissionDecision"] = "allow"
        if decision.args is not None:
            output["updatedInput"] = dict(decision.args)
    else:
        output["permissionDecision"] = "deny"
        output["permissionDecisionReason"] = decision.message or "denied by a PreToolUse hook"
    emit(Lifecycle(lk.HOOK_DECIDED, f"PreToolUse {tool}: {output['permissionDecision']}"))
    return {"hookSpecificOutput": output}
