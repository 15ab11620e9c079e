"""Copilot CLI JSONL frames translated into agentshim values.

The helpers here are pure: each takes decoded JSON and returns values, never emits anything and
never raises on odd shapes (a wrong type reads as "absent"). Tool names are the ones Copilot CLI
1.0.102 offers its model (recorded in the conformance captures' requests) plus the few its
bundled ``session-events.schema.json`` and tool registry name.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import cast

from agentshim.core.events import ToolKind
from agentshim.core.jsonvalues import as_mapping, as_str, compact_json
from agentshim.core.tool_kind_table import kinds_by_name, tool_kind_reader

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

TOOL_KINDS: Mapping[str, ToolKind] = kinds_by_name(
    {
        ToolKind.COMMAND: (
            SHELL_TOOL,
            "powershell",
            "read_bash",
            "write_bash",
            "stop_bash",
            "list_bash",
        ),
        ToolKind.FILE_CHANGE: (EDIT_TOOL, "create", "apply_patch", "str_replace_editor"),
        ToolKind.FILE_READ: ("view",),
        ToolKind.SEARCH: ("grep", "glob"),
        ToolKind.WEB: ("web_fetch", "web_search"),
        ToolKind.SUBAGENT: ("task", "read_agent", "write_agent", "list_agents"),
    }
)
"""Copilot CLI's own tool names by what they do; any other name is OTHER (or MCP, see below)."""

_kind_of = tool_kind_reader(TOOL_KINDS)

# The shell tool appends a status marker the model reads but a caller does not want as output.
_SHELL_MARKER = re.compile(r"<shellId: [^>\n]*>\s*\Z")


def tool_kind(name: str, *, mcp_server: str | None = None) -> ToolKind:
    """Return what the tool ``name`` does; a tool an MCP server hosts is MCP, unknown is OTHER.

    Copilot names an MCP tool's server in the frame (``mcpServerName``), not in the tool name.
    """
    if mcp_server:
        return ToolKind.MCP
    return _kind_of(name)


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
