"""Claude Code stream-json frames translated into agentshim events.

The helpers here are pure: each takes decoded JSON and returns values or events, never emits
anything and never raises on odd shapes (a wrong type reads as "absent").
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from agentshim.core.events import Plan, ToolKind
from agentshim.core.jsonvalues import as_mapping, as_str, compact_json, list_or_empty
from agentshim.core.stream import printed_exit_code, todo_plan
from agentshim.core.tool_kind_table import kinds_by_name, tool_kind_reader

__all__ = [
    "EDIT_TOOL",
    "SHELL_TOOL",
    "STRUCTURED_OUTPUT_TOOL",
    "TODO_TOOL",
    "TOOL_KINDS",
    "failed_exit_code",
    "plan_from_todos",
    "tool_kind",
    "tool_result_text",
]

SHELL_TOOL = "Bash"
"""Claude Code's shell tool."""

EDIT_TOOL = "Edit"
"""Claude Code's file edit tool."""

TODO_TOOL = "TodoWrite"
"""Claude Code's todo-list tool (input ``{"todos": [{"content", "status", ...}]}``)."""

STRUCTURED_OUTPUT_TOOL = "StructuredOutput"
"""The tool Claude Code declares when ``--json-schema`` is given; its input is the payload."""

MCP_TOOL_PREFIX = "mcp__"

# A failed Bash result starts with the command's status: "Exit code 2\n<stderr>".
_SHELL_EXIT = re.compile(r"\AExit code (-?\d{1,9})(?:\n|$)")

# New in 2.1.332: ToolSearch loads the definitions of the MCP tools the CLI deferred, so it is
# the first step of an MCP call; Monitor watches a background command's output, as BashOutput
# does; ListAgents lists the subagents.
TOOL_KINDS: Mapping[str, ToolKind] = kinds_by_name(
    {
        ToolKind.COMMAND: (SHELL_TOOL, "BashOutput", "KillShell", "Monitor"),
        ToolKind.FILE_CHANGE: (EDIT_TOOL, "MultiEdit", "Write", "NotebookEdit"),
        ToolKind.FILE_READ: ("Read",),
        ToolKind.SEARCH: ("Glob", "Grep", "LS"),
        ToolKind.WEB: ("WebFetch", "WebSearch"),
        ToolKind.PLAN: (TODO_TOOL, "TaskCreate", "TaskGet", "TaskList", "TaskUpdate"),
        ToolKind.SUBAGENT: ("Task", "Agent", "ListAgents"),
        ToolKind.MCP: ("ToolSearch",),
    }
)
"""Claude Code's own tool names (as its ``system/init`` frame lists them) by what they do."""

tool_kind = tool_kind_reader(TOOL_KINDS, mcp_prefix=MCP_TOOL_PREFIX)
"""Return what the tool ``name`` does; ``mcp__<server>__<tool>`` is MCP, unknown is OTHER."""


def tool_result_text(content: object) -> str:
    """Flatten a ``tool_result`` block's ``content`` into text.

    Content is a string, or a list of blocks: text blocks give their text, any other block
    (an image, say) is kept as compact JSON so nothing is silently lost.
    """
    if isinstance(content, str):
        return content
    blocks = list_or_empty(content)
    if blocks or isinstance(content, list):
        parts: list[str] = []
        for block in blocks:
            mapping = as_mapping(block)
            if mapping is not None and mapping.get("type") == "text":
                text = as_str(mapping.get("text"))
                parts.append(text if text is not None else "")
            else:
                parts.append(compact_json(block))
        return "\n".join(parts)
    if content is None:
        return ""
    return compact_json(content)


def plan_from_todos(args: Mapping[str, Any], tool_id: str | None) -> Plan | None:
    """Return the Plan a ``TodoWrite`` call sets, or None when its input has no todo list."""
    return todo_plan(args, tool_id, "content", "activeForm")


def failed_exit_code(tool: str, text: str) -> int:
    """The exit code of a failed tool result: the shell's own status when it printed one, else 1."""
    return printed_exit_code(_SHELL_EXIT, text) if tool == SHELL_TOOL else 1
