"""Tool names a JSONL harness may use without naming a kind, and what they do."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from agentshim.core.events import ToolKind
from agentshim.core.stream import tool_kind_in

__all__ = ["EDIT_TOOL", "SHELL_TOOL", "TOOL_KINDS", "tool_kind"]

SHELL_TOOL = "shell"
"""The conventional name of a harness's shell tool."""

EDIT_TOOL = "edit"
"""The conventional name of a harness's file edit tool."""

TOOL_KINDS: Mapping[str, ToolKind] = MappingProxyType(
    {SHELL_TOOL: ToolKind.COMMAND, EDIT_TOOL: ToolKind.FILE_CHANGE, "read": ToolKind.FILE_READ}
)
"""The kind of a tool call whose event names none (``"kind"`` absent or ``"other"``)."""


def tool_kind(name: str) -> ToolKind:
    """Return what the tool ``name`` does by the conventional names; anything else is OTHER."""
    return tool_kind_in(TOOL_KINDS, name)
