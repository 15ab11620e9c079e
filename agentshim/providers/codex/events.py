"""How ``codex exec --json`` items become typed events: the tool-kind table and item helpers.

Codex names a tool call by the type of the thread item that carries it (``command_execution``,
``file_change``, ``mcp_tool_call``, ``web_search``, ``collab_tool_call``); ``todo_list`` is the
agent's plan. Those item types are the tool names events carry.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from agentshim.core._builders import build_tool_result
from agentshim.core._enum_members import KIND_OTHER
from agentshim.core.events import Plan, PlanItem, ToolKind, ToolResult
from agentshim.core.jsonvalues import as_mapping, list_or_empty, str_or_empty
from agentshim.core.stream import ToolArgs, tool_kind_in

__all__ = [
    "EDIT_TOOL",
    "MCP_TOOL",
    "PLAN_ITEM",
    "SHELL_TOOL",
    "SUBAGENT_TOOL",
    "TOOL_KINDS",
    "WEB_TOOL",
    "mcp_output",
    "plan_from_item",
    "tool_args",
    "tool_kind",
    "tool_result",
]

#: The item type of a shell command the agent ran.
SHELL_TOOL = "command_execution"
#: The item type of a patch the agent applied.
EDIT_TOOL = "file_change"
#: The item type of a call to an MCP server's tool.
MCP_TOOL = "mcp_tool_call"
#: The item type of a web search.
WEB_TOOL = "web_search"
#: The item type of a call that talks to another agent thread.
SUBAGENT_TOOL = "collab_tool_call"
#: The item type of the agent's to-do list.
PLAN_ITEM = "todo_list"

TOOL_KINDS: Mapping[str, ToolKind] = MappingProxyType(
    {
        SHELL_TOOL: ToolKind.COMMAND,
        EDIT_TOOL: ToolKind.FILE_CHANGE,
        MCP_TOOL: ToolKind.MCP,
        WEB_TOOL: ToolKind.WEB,
        SUBAGENT_TOOL: ToolKind.SUBAGENT,
        PLAN_ITEM: ToolKind.PLAN,
    }
)
"""Codex's tool item types mapped to what they do."""

# A read-only view answers get() slower than the dict behind it: this copy is read on the hot
# path (once per tool result).
_KINDS: dict[str, ToolKind] = dict(TOOL_KINDS)


def tool_kind(name: str) -> ToolKind:
    """Return what the tool item type ``name`` does (OTHER for one not in the table)."""
    return tool_kind_in(TOOL_KINDS, name)


def tool_args(item_type: str, item: Mapping[str, Any]) -> ToolArgs:
    """Return a tool item's arguments: what was asked, without status or output."""
    if item_type == SHELL_TOOL:
        return {"command": str_or_empty(item.get("command"))}
    if item_type == EDIT_TOOL:
        return {"changes": item.get("changes") or []}
    if item_type == MCP_TOOL:
        return {
            "server": str_or_empty(item.get("server")),
            "tool": str_or_empty(item.get("tool")),
            "arguments": item.get("arguments"),
        }
    if item_type == WEB_TOOL:
        return {"query": str_or_empty(item.get("query"))}
    skipped = ("id", "type", "status", "result", "error", "aggregated_output", "exit_code")
    return {k: v for k, v in item.items() if k not in skipped}


def _change_lines(changes: object) -> str:
    lines: list[str] = []
    for change in list_or_empty(changes):
        entry = as_mapping(change)
        if entry is not None:
            lines.append(
                f"{str_or_empty(entry.get('kind')) or 'change'} {str_or_empty(entry.get('path'))}"
            )
    return "\n".join(lines)


def mcp_output(content: object, structured: object) -> str:
    """The text of an MCP tool call's result, as both of Codex's outputs carry it.

    Its text blocks joined by newlines; failing those, ``structured`` (the result's
    ``structured_content``) as JSON; failing both, "".
    """
    texts: list[str] = []
    for block in list_or_empty(content):
        entry = as_mapping(block)
        text = str_or_empty(entry.get("text")) if entry is not None else ""
        if text:
            texts.append(text)
    if texts:
        return "\n".join(texts)
    if structured is not None:
        return json.dumps(structured, ensure_ascii=False)
    return ""


def _mcp_output(result: object) -> str:
    payload = as_mapping(result)
    if payload is None:
        return ""
    return mcp_output(payload.get("content"), payload.get("structured_content"))


def _error_message(error: object) -> str:
    entry = as_mapping(error)
    return str_or_empty(entry.get("message")) if entry is not None else str_or_empty(error)


def tool_result(
    item_type: str,
    item: Mapping[str, Any],
    *,
    tool_id: str | None,
    duration_s: float | None,
) -> ToolResult:
    """Return the ToolResult of a completed tool item.

    A failure (status ``failed`` or ``declined``, or a nonzero exit code) has an empty stdout,
    its message on stderr, and the CLI's exit code (1 where Codex gives none).
    """
    # Once per tool call: str_or_empty inlined, and the kinds read from a plain dict.
    status: Any = item.get("status")
    if status.__class__ is not str:
        status = ""
    kind = _KINDS.get(item_type, KIND_OTHER)
    exit_code: int | None = None
    if item_type == SHELL_TOOL:
        output: Any = item.get("aggregated_output")
        if output.__class__ is not str:
            output = ""
        raw_code = item.get("exit_code")
        if raw_code.__class__ is int:
            exit_code = raw_code
        failed = status in ("failed", "declined") or (exit_code is not None and exit_code != 0)
        message = output or f"command {status or 'failed'}"
    elif item_type == EDIT_TOOL:
        output = _change_lines(item.get("changes"))
        failed = status == "failed"
        message = f"patch failed to apply:\n{output}" if output else "patch failed to apply"
    elif item_type == MCP_TOOL:
        output = _mcp_output(item.get("result"))
        error_text = _error_message(item.get("error"))
        failed = status == "failed" or bool(error_text)
        message = error_text or output or "MCP tool call failed"
    else:
        output = ""
        failed = status == "failed"
        message = _error_message(item.get("error")) or f"{item_type} failed"
    # Built as ToolResult(...) would, cheaper than the class call: one for every tool call.
    if failed:
        code = exit_code if exit_code not in (None, 0) else 1
        return build_tool_result(tool_id, item_type, "", message, code, duration_s, kind)
    code = exit_code if exit_code is not None else 0
    return build_tool_result(tool_id, item_type, output, "", code, duration_s, kind)


def plan_from_item(item: Mapping[str, Any], *, tool_id: str | None) -> Plan:
    """Return the Plan a ``todo_list`` item describes (status ``completed`` or ``pending``)."""
    entries: list[PlanItem] = []
    for raw in list_or_empty(item.get("items")):
        entry = as_mapping(raw)
        if entry is not None:
            done = entry.get("completed") is True
            entries.append(
                PlanItem(
                    text=str_or_empty(entry.get("text")), status="completed" if done else "pending"
                )
            )
    return Plan(items=tuple(entries), tool_id=tool_id)
