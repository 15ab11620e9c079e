"""opencode ``run --format json`` frames translated into agentshim events, and its tool names.

The tool names are opencode 1.18.33's own (``bash``, ``edit``, ``write``, ...). MCP tools are
named ``<server>_<tool>``, which cannot be told apart from a built-in by name alone, so they
report ToolKind.OTHER.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from agentshim.core.events import Plan, ToolCall, ToolKind, ToolResult
from agentshim.core.jsonvalues import as_amount, mapping_or_empty, to_text
from agentshim.core.stream import todo_plan
from agentshim.core.tool_kind_table import kinds_by_name, tool_kind_reader
from agentshim.core.tools import TOOL_SERVER_NAME

__all__ = [
    "EDIT_TOOL",
    "SHELL_TOOL",
    "TODO_TOOL",
    "TOOL_KINDS",
    "WRITE_TOOL",
    "plan_from_args",
    "tool_events",
    "tool_kind",
]

SHELL_TOOL = "bash"
"""opencode's shell tool."""
EDIT_TOOL = "edit"
"""opencode's in-place file edit tool."""
WRITE_TOOL = "write"
"""opencode's whole-file write tool."""
TODO_TOOL = "todowrite"
"""opencode's todo-list tool; its ``todos`` argument becomes a Plan event."""

TOOL_KINDS: Mapping[str, ToolKind] = kinds_by_name(
    {
        ToolKind.COMMAND: (SHELL_TOOL,),
        ToolKind.FILE_CHANGE: (EDIT_TOOL, WRITE_TOOL, "patch", "apply_patch", "multiedit"),
        ToolKind.FILE_READ: ("read", "list"),
        ToolKind.SEARCH: ("glob", "grep", "codesearch"),
        ToolKind.WEB: ("webfetch", "websearch"),
        ToolKind.PLAN: (TODO_TOOL, "todoread"),
        ToolKind.SUBAGENT: ("task",),
    }
)
"""opencode tool name -> what the tool does."""

TERMINAL_STATUSES = frozenset({"completed", "error"})
"""Tool states after which opencode prints a ``tool_use`` frame."""


tool_kind = tool_kind_reader(TOOL_KINDS, mcp_prefix=f"{TOOL_SERVER_NAME}_")
"""Return what the opencode tool ``name`` does (OTHER for unknown tools).

opencode names an MCP tool ``<server>_<tool>``, which reads like any other name; only the tools
agentshim serves itself (server ``agentshim``) are known to be MCP.
"""


def _duration_s(state: Mapping[str, Any]) -> float | None:
    timing = mapping_or_empty(state.get("time"))
    # as_amount turns an integer too large for a float (JSON allows one) into None, not an
    # OverflowError; both ends finite and non-negative keep the difference finite.
    start, end = as_amount(timing.get("start")), as_amount(timing.get("end"))
    if start is not None and end is not None and end >= start:
        return (end - start) / 1000.0
    return None


def tool_events(part: Mapping[str, Any]) -> tuple[ToolCall, ToolResult | None]:
    """Translate a ``tool_use`` part into its call and, once terminal, its result.

    ``completed`` with a nonzero ``metadata.exit`` (a shell command that failed) and ``error``
    are failures: empty stdout, the output or error text on stderr, the exit code or 1.
    """
    name = to_text(part.get("tool"))
    call_id = part.get("callID")
    tool_id = call_id if isinstance(call_id, str) else None
    state = mapping_or_empty(part.get("state"))
    raw_input = state.get("input")
    args: Mapping[str, Any] | str | None
    if isinstance(raw_input, dict):
        args = cast("dict[str, Any]", raw_input)
    elif isinstance(raw_input, str) or raw_input is None:
        args = raw_input
    else:
        args = to_text(raw_input)
    kind = tool_kind(name)
    # Positional (tool_id, tool, args, kind): keywords cost a dict per call on CPython.
    call = ToolCall(tool_id, name, args, kind)
    status = state.get("status")
    # A list or dict status cannot be looked up in a set (TypeError); like an unknown status
    # it leaves the call without a result.
    if not isinstance(status, str) or status not in TERMINAL_STATUSES:
        return call, None
    exit_code = mapping_or_empty(state.get("metadata")).get("exit")
    code = exit_code if isinstance(exit_code, int) and not isinstance(exit_code, bool) else None
    if status == "completed" and not code:
        stdout, stderr, result_code = to_text(state.get("output")), "", 0
    else:
        message = to_text(state.get("error")) if status == "error" else ""
        stdout, stderr = "", message or to_text(state.get("output")) or "the tool failed"
        result_code = code or 1
    # Positional (tool_id, tool, stdout, stderr, exit_code, duration_s, kind), as above.
    result = ToolResult(tool_id, name, stdout, stderr, result_code, _duration_s(state), kind)
    return call, result


def plan_from_args(args: object, tool_id: str | None) -> Plan | None:
    """Build a Plan from ``todowrite`` arguments (``todos: [{content, status, priority}]``)."""
    return todo_plan(args, tool_id, "content")
