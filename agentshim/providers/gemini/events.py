"""Gemini CLI stream frames translated into agentshim events, and its tool names by kind.

The tool names are Gemini CLI 0.61.0's own (``run_shell_command``, ``replace``, ...). MCP tools
reach the stream as ``mcp_<server>_<tool>``.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from agentshim.core._builders import build_tool_call, build_tool_result
from agentshim.core.events import Plan, ToolCall, ToolKind, ToolResult
from agentshim.core.jsonvalues import to_text
from agentshim.core.stream import todo_plan
from agentshim.core.tool_kind_table import kinds_by_name, tool_kind_reader

__all__ = [
    "EDIT_TOOL",
    "MCP_TOOL_PREFIX",
    "SHELL_TOOL",
    "TODO_TOOL",
    "TOOL_KINDS",
    "WRITE_TOOL",
    "plan_from_args",
    "tool_call",
    "tool_kind",
    "tool_result",
]

SHELL_TOOL = "run_shell_command"
"""The CLI's shell tool (only offered with ``--yolo``; headless default mode hides it)."""
EDIT_TOOL = "replace"
"""The CLI's in-place file edit tool."""
WRITE_TOOL = "write_file"
"""The CLI's whole-file write tool."""
TODO_TOOL = "write_todos"
"""The CLI's todo-list tool; its ``todos`` argument becomes a Plan event."""
MCP_TOOL_PREFIX = "mcp_"
"""Prefix of every MCP tool name (``mcp_<server>_<tool>``)."""

TOOL_KINDS: Mapping[str, ToolKind] = kinds_by_name(
    {
        ToolKind.COMMAND: (SHELL_TOOL,),
        ToolKind.FILE_CHANGE: (EDIT_TOOL, WRITE_TOOL),
        ToolKind.FILE_READ: ("read_file", "read_many_files", "list_directory"),
        ToolKind.SEARCH: ("glob", "grep_search"),
        ToolKind.WEB: ("google_web_search", "web_fetch"),
        ToolKind.PLAN: (TODO_TOOL,),
        ToolKind.SUBAGENT: ("invoke_agent",),
        ToolKind.MCP: ("read_mcp_resource", "list_mcp_resources"),
    }
)
"""Gemini CLI tool name -> what the tool does."""

tool_kind = tool_kind_reader(TOOL_KINDS, mcp_prefix=MCP_TOOL_PREFIX)
"""Return what the Gemini CLI tool ``name`` does (MCP for ``mcp_<server>_<tool>``, else OTHER
for a name it does not ship)."""


def tool_call(frame: Mapping[str, Any]) -> ToolCall:
    """Translate a ``tool_use`` frame (``tool_name``, ``tool_id``, ``parameters``)."""
    # Once per tool call: the type checks are inlined (__class__ keeps the values typed Any).
    name: Any = frame.get("tool_name")
    if name.__class__ is not str:
        name = ""
    tool_id: Any = frame.get("tool_id")
    if tool_id.__class__ is not str:
        tool_id = None
    params: Any = frame.get("parameters")
    args: Mapping[str, Any] | str | None = params
    if params.__class__ is not dict and params.__class__ is not str and params is not None:
        args = to_text(params)
    # Built as ToolCall(...) would, cheaper than the class call.
    return build_tool_call(tool_id, name, args, tool_kind(name))


def tool_result(frame: Mapping[str, Any], name: str, duration_s: float | None) -> ToolResult:
    """Translate a ``tool_result`` frame; ``status: "error"`` (or an error object) is a failure.

    A failure has an empty stdout, the CLI's error message on stderr and exit code 1 (the CLI
    reports no code of its own).
    """
    tool_id: Any = frame.get("tool_id")
    error = frame.get("error")
    failed = frame.get("status") == "error" or isinstance(error, dict)
    output: Any = frame.get("output")
    if output.__class__ is not str:  # text is the usual output; to_text renders the rest
        output = to_text(output)
    kind = tool_kind(name)
    tid: str | None = tool_id if tool_id.__class__ is str else None
    if not failed:
        # Built as ToolResult(...) would, cheaper than the class call.
        return build_tool_result(tid, name, output, "", 0, duration_s, kind)
    message = ""
    if isinstance(error, dict):
        message = to_text(cast("dict[str, Any]", error).get("message"))
    return ToolResult(
        tid,
        name,
        stdout="",
        stderr=message or output or "the tool failed",
        exit_code=1,
        duration_s=duration_s,
        kind=kind,
    )


def plan_from_args(args: object, tool_id: str | None) -> Plan | None:
    """Build a Plan from ``write_todos`` arguments (``todos: [{description, status}]``)."""
    return todo_plan(args, tool_id, "description")
