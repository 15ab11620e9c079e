"""Copilot CLI JSONL frames translated into agentshim values.

The helpers here are pure: each takes decoded JSON and returns values, never emits anything and
never raises on odd shapes (a wrong type reads as "absent"). Tool names are the ones Copilot CLI
1.0.102 offers its model (recorded in the conformance captures' requests) plus the few its
bundled ``session-events.schema.json`` and tool registry name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import cast

from agentshim.core.events import ToolKind
from agentshim.core.jsonvalues import as_mapping, as_str, compact_json
from agentshim.core.stream import tool_kind_in

__all__ = [
    "EDIT_TOOL",
    "SHELL_TOOL",
    "TOOL_KINDS",
    "tool_kind",
    "tool_output",
]

SHELL_TOOL = "bash"
"""Copilot CLI's shell tool (input ``{"command", "description"}``)."""

EDIT_TOOL = "edit"
"""Copilot CLI's file edit tool."""

TOOL_KINDS: Mapping[str, ToolKind] = MappingProxyType(
    {
        SHELL_TOOL: ToolKind.COMMAND,
        "powershell": ToolKind.COMMAND,
        "read_bash": ToolKind.COMMAND,
        "write_bash": ToolKind.COMMAND,
        "stop_bash": ToolKind.COMMAND,
        "list_bash": ToolKind.COMMAND,
        EDIT_TOOL: ToolKind.FILE_CHANGE,
        "create": ToolKind.FILE_CHANGE,
        "apply_patch": ToolKind.FILE_CHANGE,
        "str_replace_editor": ToolKind.FILE_CHANGE,
        "view": ToolKind.FILE_READ,
        "grep": ToolKind.SEARCH,
        "glob": ToolKind.SEARCH,
        "web_fetch": ToolKind.WEB,
        "web_search": ToolKind.WEB,
        "task": ToolKind.SUBAGENT,
        "read_agent": ToolKind.SUBAGENT,
        "write_agent": ToolKind.SUBAGENT,
        "list_agents": ToolKind.SUBAGENT,
    }
)
"""Copilot CLI's own tool names by what they do; any other name is OTHER (or MCP, see below)."""

# The shell tool appends a status marker the model reads but a caller does not want as output.
_SHELL_MARKER = re.compile(r"<shellId: [^>\n]*>\s*\Z")


def tool_kind(name: str, *, mcp_server: str | None = None) -> ToolKind:
    """Return what the tool ``name`` does; a tool an MCP server hosts is MCP, unknown is OTHER.

    Copilot names an MCP tool's server in the frame (``mcpServerName``), not in the tool name.
    """
    if mcp_server:
        return ToolKind.MCP
    return tool_kind_in(TOOL_KINDS, name)


def tool_output(result: object) -> str:
    """The text of a ``tool.execution_complete`` ``result``, without the shell status marker.

    ``detailedContent`` (what the CLI shows a person) is preferred over ``content`` (what the
    model is sent, possibly truncated); structured ``contents`` blocks are the last resort.
    """
    mapping = as_mapping(result)
    if mapping is None:
        return ""
    text = as_str(mapping.get("detailedContent"))
    if text is None:
        text = as_str(mapping.get("content"))
    if text is None:
        text = _contents_text(mapping.get("contents"))
    return _SHELL_MARKER.sub("", text)


def _contents_text(contents: object) -> str:
    if not isinstance(contents, list):
        return ""
    parts: list[str] = []
    blocks = cast("list[object]", contents)
    for block in blocks:
        mapping = as_mapping(block)
        text = as_str(mapping.get("text")) if mapping is not None else None
        parts.append(text if text is not None else compact_json(block))
    return "\n".join(parts)
