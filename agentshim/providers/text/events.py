"""A text harness prints no tool calls; the conventional tool names are kept for the shape."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from agentshim.core.events import ToolKind
from agentshim.core.stream import tool_kind_in

__all__ = ["EDIT_TOOL", "SHELL_TOOL", "TOOL_KINDS", "tool_kind"]

SHELL_TOOL = "shell"
"""The conventional name of a shell tool (a text harness never reports one)."""

EDIT_TOOL = "edit"
"""The conventional name of a file edit tool (a text harness never reports one)."""

TOOL_KINDS: Mapping[str, ToolKind] = MappingProxyType(
    {SHELL_TOOL: ToolKind.COMMAND, EDIT_TOOL: ToolKind.FILE_CHANGE}
)
"""The conventional tool names by what they do."""


def tool_kind(name: str) -> ToolKind:
    """Return what the tool ``name`` does by the conventional names; anything else is OTHER."""
    return tool_kind_in(TOOL_KINDS, name)
