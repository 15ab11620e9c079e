"""The items of one app-server turn as typed events: tool calls, their results, the answer.

Codex reports each item twice, ``item/started`` and ``item/completed``. A tool call is its
ToolCall at the start and its ToolResult at the end, named like on ``codex exec``
(``command_execution``, ``file_change``, ``mcp_tool_call``, ...). The answer is reported once,
whole, when its item completes; deltas are only kept in case it never does. A command's final
output is ``aggregatedOutput`` of the completed item: the output deltas can miss the first
chunk. An interrupted turn completes none of its open items, so :meth:`TurnItems.close_open`
ends them.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from agentshim.core.clock import Monotonic
from agentshim.core.events import AssistantText, Emit, Reasoning, ToolCall, ToolResult
from agentshim.core.stream import ToolArgs
from agentshim.providers.codex.events import (
    EDIT_TOOL,
    MCP_TOOL,
    SHELL_TOOL,
    SUBAGENT_TOOL,
    WEB_TOOL,
    mcp_output,
    tool_kind,
)

from . import protocol as p
from ._wire import encode

__all__ = ["TurnItems", "tool_name"]

_NAMES: Mapping[str, str] = {
    "commandExecution": SHELL_TOOL,
    "fileChange": EDIT_TOOL,
    "mcpToolCall": MCP_TOOL,
    "webSearch": WEB_TOOL,
    "collabAgentToolCall": SUBAGENT_TOOL,
}
# Items that are no tool call: said, thought or bookkeeping.
_NOT_TOOLS = frozenset(
    {"agentMessage", "userMessage", "reasoning", "plan", "contextCompaction", "hookPrompt"}
)
_FINAL = "final_answer"
_COMMENTARY = "commentary"


def _snake(name: str) -> str:
    return "".join(f"_{c.lower()}" if c.isupper() else c for c in name).lstrip("_")


def tool_name(item_type: str) -> str:
    """The tool name events carry for an item type (the ``codex exec`` spelling)."""
    return _NAMES.get(item_type) or _snake(item_type)


def _item_type(item: p.ThreadItem) -> str:
    if isinstance(item, p.UnknownThreadItem):
        return item.tag
    return type(item).TAG


def _args(item: p.ThreadItem) -> ToolArgs:
    if isinstance(item, p.CommandExecutionThreadItem):
        return {"command": item.command, "cwd": item.cwd}
    if isinstance(item, p.FileChangeThreadItem):
        return {"changes": [{"path": c.path, "kind": encode(c.kind)} for c in item.changes]}
    if isinstance(item, p.McpToolCallThreadItem):
        return {"server": item.server, "tool": item.tool, "arguments": item.arguments}
    if isinstance(item, p.WebSearchThreadItem):
        return {"query": item.query}
    wire = item.to_wire()
    return {k: v for k, v in wire.items() if k not in ("id", "type", "status")}


def _result(item: p.ThreadItem, name: str, duration: float | None) -> tuple[str, str, int | None]:
    """(stdout, stderr, exit code) of a completed tool item; a failure has no stdout."""
    status = str(encode(getattr(item, "status", "")) or "")
    if isinstance(item, p.CommandExecutionThreadItem):
        output = item.aggregated_output or ""
        code = item.exit_code
        if status in ("failed", "declined") or (code is not None and code != 0):
            return "", output or f"command {status or 'failed'}", code if code else 1
        return output, "", code if code is not None else 0
    if isinstance(item, p.FileChangeThreadItem):
        lines = "\n".join(f"{encode(c.kind)} {c.path}" for c in item.changes)
        if status in ("failed", "declined"):
            return "", f"patch {status}:\n{lines}" if lines else f"patch {status}", 1
        return lines, "", 0
    if isinstance(item, p.McpToolCallThreadItem):
        if item.error is not None or status == "failed":
            message = item.error.message if item.error is not None else "MCP tool call failed"
            return "", message, 1
        result = item.result
        if result is None:
            return "", "", 0
        return mcp_output(result.content, result.structured_content), "", 0
    del name, duration
    if status in ("failed", "declined"):
        return "", f"{status}", 1
    return "", "", 0


class TurnItems:
    """What one turn's items have said so far, and the events they make.

    ``emit`` gets every event; ``monotonic`` times tool calls.
    """

    def __init__(self, emit: Emit, *, monotonic: Monotonic = time.monotonic) -> None:
        self._emit = emit
        self._clock = monotonic
        self._open: dict[str, tuple[p.ThreadItem, float]] = {}
        self._deltas: dict[str, list[str]] = {}
        self._messages: list[tuple[str, str | None]] = []

    def started(self, item: p.ThreadItem) -> None:
        """An item began: a tool call is reported now."""
        kind = _item_type(item)
        item_id = getattr(item, "id", None)
        if kind in _NOT_TOOLS or not isinstance(item_id, str):
            if isinstance(item_id, str) and kind == "agentMessage":
                self._open[item_id] = (item, self._clock())
            return
        if item_id in self._open:
            return
        self._open[item_id] = (item, self._clock())
        name = tool_name(kind)
        self._emit(ToolCall(item_id, name, _args(item), tool_kind(name)))

    def delta(self, item_id: str, text: str) -> None:
        """A piece of an answer still being written (kept until its item completes)."""
        self._deltas.setdefault(item_id, []).append(text)

    def completed(self, item: p.ThreadItem) -> None:
        """An item ended: the answer, the reasoning, a tool's result."""
        kind = _item_type(item)
        item_id = getattr(item, "id", None)
        opened = self._open.pop(item_id, None) if isinstance(item_id, str) else None
        if isinstance(item_id, str):
            self._deltas.pop(item_id, None)
        if isinstance(item, p.AgentMessageThreadItem):
            phase = item.phase
            self._messages.append((item.text, str(encode(phase)) if phase else None))
            self._emit(AssistantText(item.text))
            return
        if isinstance(item, p.ReasoningThreadItem):
            text = "\n".join([*(item.summary or ()), *(item.content or ())])
            if text:
                self._emit(Reasoning(text))
            return
        if kind in _NOT_TOOLS or not isinstance(item_id, str):
            return
        name = tool_name(kind)
        if opened is None:
            # Codex reports some items only once they are done.
            self._emit(ToolCall(item_id, name, _args(item), tool_kind(name)))
            duration = None
        else:
            duration = max(0.0, self._clock() - opened[1])
        stdout, stderr, code = _result(item, name, duration)
        self._emit(ToolResult(item_id, name, stdout, stderr, code, duration, tool_kind(name)))

    def close_open(self, reason: str) -> None:
        """End every item still open (an interrupted turn completes none of them)."""
        for item_id, (item, started) in list(self._open.items()):
            kind = _item_type(item)
            if kind == "agentMessage":
                text = "".join(self._deltas.get(item_id, ()))
                if text:
                    self._messages.append((text, None))
                    self._emit(AssistantText(text))
                continue
            name = tool_name(kind)
            duration = max(0.0, self._clock() - started)
            self._emit(ToolResult(item_id, name, "", reason, 1, duration, tool_kind(name)))
        self._open.clear()
        self._deltas.clear()

    @property
    def open_tools(self) -> int:
        """How many tool calls are running."""
        return sum(1 for item, _ in self._open.values() if _item_type(item) != "agentMessage")

    def final_text(self) -> str:
        """The answer: the last final-answer message, else the last that is not commentary."""
        for text, phase in reversed(self._messages):
            if phase == _FINAL:
                return text
        for text, phase in reversed(self._messages):
            if phase != _COMMENTARY:
                return text
        return self._messages[-1][0] if self._messages else ""

    def item_args(self, item_id: str) -> Mapping[str, Any] | None:
        """The arguments of the open tool call ``item_id`` (what an approval is about)."""
        opened = self._open.get(item_id)
        if opened is None:
            return None
        args = _args(opened[0])
        return args if isinstance(args, Mapping) else None
