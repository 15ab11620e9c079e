"""Pi ``--mode json`` frames translated into agentshim values.

The helpers here are pure: each takes decoded JSON and returns values, never emits anything and
never raises on odd shapes (a wrong type reads as "absent"). Tool names are Pi's built-in tools
as its 0.73.1 documentation lists them (``read``, ``bash``, ``edit``, ``write`` are offered by
default and appear in the recorded requests; ``grep``, ``find``, ``ls`` on request).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import cast

from agentshim.core.events import ToolKind
from agentshim.core.jsonvalues import as_mapping, as_str, compact_json
from agentshim.core.stream import printed_exit_code
from agentshim.core.tool_kind_table import kinds_by_name, tool_kind_reader
from agentshim.core.tools import TOOL_SERVER_NAME

__all__ = [
    "EDIT_TOOL",
    "SHELL_TOOL",
    "TOOL_KINDS",
    "content_text",
    "failed_exit_code",
    "structured_exit_code",
    "tool_kind",
]

SHELL_TOOL = "bash"
"""Pi's shell tool (input ``{"command"}``)."""

EDIT_TOOL = "edit"
"""Pi's file edit tool."""

# A failed bash result ends with the command's status: "<output>\n\nCommand exited with code 2".
_SHELL_EXIT = re.compile(r"Command exited with code (-?\d{1,9})\s*$")

TOOL_KINDS: Mapping[str, ToolKind] = kinds_by_name(
    {
        ToolKind.COMMAND: (SHELL_TOOL,),
        ToolKind.FILE_CHANGE: (EDIT_TOOL, "write"),
        ToolKind.FILE_READ: ("read",),
        ToolKind.SEARCH: ("grep", "find", "ls"),
    }
)
"""Pi's built-in tool names by what they do; an extension's tool is OTHER."""

tool_kind = tool_kind_reader(TOOL_KINDS, mcp_prefix=f"{TOOL_SERVER_NAME}_")
"""Return what the tool ``name`` does; a name Pi does not build in is OTHER.

The exception is a Python tool agentshim serves (``agentshim_<tool>``, through the extension of
:mod:`.tools`): MCP, as on every other CLI.
"""


def content_text(content: object, block_type: str = "text") -> str:
    """Join the ``block_type`` blocks of a message's ``content`` (``text`` or ``thinking``).

    Content is a list of blocks (``{"type": "text", "text"}``, ``{"type": "thinking",
    "thinking"}``, ``{"type": "toolCall", ...}``) or, for a user message, a plain string.
    A tool result's image block is kept as compact JSON so nothing is silently lost.
    """
    if isinstance(content, str):
        return content if block_type == "text" else ""
    if not isinstance(content, list):
        return ""
    parts: list[str] = []
    for block in cast("list[object]", content):
        mapping = as_mapping(block)
        if mapping is None:
            continue
        kind = mapping.get("type")
        if kind == block_type:
            text = as_str(mapping.get(block_type))
            if text:
                parts.append(text)
        elif kind == "image" and block_type == "text":
            parts.append(compact_json({k: v for k, v in mapping.items() if k != "data"}))
    return "\n".join(parts)


def failed_exit_code(tool: str, text: str) -> int:
    """The exit code of a failed tool result: the shell's own status when it printed one, else 1."""
    return printed_exit_code(_SHELL_EXIT, text) if tool == SHELL_TOOL else 1


def structured_exit_code(result: Mapping[str, object] | None) -> int | None:
    """The exit code Pi 1.x gives in a bash result's ``structuredContent.exit_code``, if any."""
    structured = as_mapping(result.get("structuredContent")) if result is not None else None
    code = structured.get("exit_code") if structured is not None else None
    if isinstance(code, int) and not isinstance(code, bool) and code != 0:
        return code
    return None
