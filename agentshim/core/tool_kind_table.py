"""A provider's tool names by what they do, and the lookup its parser reads a call's kind with.

Every CLI names its own tools; each provider's ``events.py`` lists them by kind
(:func:`kinds_by_name`) and answers "what does this tool do" with :func:`tool_kind_reader`,
the same rule everywhere: the table, else MCP for a name in the CLI's MCP form, else OTHER.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType

from agentshim.core._enum_members import KIND_MCP, KIND_OTHER
from agentshim.core.events import ToolKind

__all__ = ["kinds_by_name", "tool_kind_reader"]


def kinds_by_name(groups: Mapping[ToolKind, Iterable[str]]) -> Mapping[str, ToolKind]:
    """A read-only ``tool name -> kind`` table from the tool names grouped by what they do."""
    return MappingProxyType({name: kind for kind, names in groups.items() for name in names})


def tool_kind_reader(
    kinds: Mapping[str, ToolKind], *, mcp_prefix: str | None = None
) -> Callable[[str], ToolKind]:
    """A function giving what the tool ``name`` does: its kind in ``kinds``, else OTHER.

    A name the table lacks is MCP when it starts with ``mcp_prefix`` (for a CLI that names MCP
    tools that way). The function reads a plain copy of ``kinds``: a read-only view answers
    ``get`` slower, and this runs for every tool event.
    """
    known = dict(kinds)
    get = known.get

    def tool_kind(name: str) -> ToolKind:
        kind = get(name)
        if kind is not None:
            return kind
        if mcp_prefix is not None and name.startswith(mcp_prefix):
            return KIND_MCP
        return KIND_OTHER

    return tool_kind
