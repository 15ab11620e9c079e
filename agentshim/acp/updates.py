"""``session/update`` notifications, read as the library's events.

One :class:`UpdateReader` per turn. It keeps the tool calls it has seen, since agents do not
announce every call the same way: a ``tool_call_update`` for an id never announced creates
the call, and so does the ``toolCall`` of a permission request (Gemini CLI's only
announcement of a call that needs permission). Agent text the dialect calls a notice (a
CLI's status line in the message stream) is reported as ``Lifecycle("agent_notice")`` and
kept out of the answer; a notice the dialect reads as a failure is kept as the turn's
``failure``. With ``superseded`` on, an agent message followed by another one with no tool
call between is not the answer (opencode's compaction summary): its text leaves the answer
and is reported as ``Lifecycle("message_superseded")``. An update the reader does not know
costs only itself.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentshim.core.errors import FailureKind
from agentshim.core.events import (
    AssistantText,
    Emit,
    Lifecycle,
    Plan,
    PlanItem,
    Reasoning,
    SessionTitle,
    ToolCall,
    ToolKind,
    ToolResult,
)
from agentshim.core.frames import UNKNOWN_DETAIL_CHARS
from agentshim.core.jsonvalues import as_mapping, as_str, list_or_empty

__all__ = ["UpdateReader", "tool_call_event", "tool_kind"]

_KINDS: Mapping[str, ToolKind] = {
    "read": ToolKind.FILE_READ,
    "edit": ToolKind.FILE_CHANGE,
    "delete": ToolKind.FILE_CHANGE,
    "move": ToolKind.FILE_CHANGE,
    "search": ToolKind.SEARCH,
    "execute": ToolKind.COMMAND,
    "fetch": ToolKind.WEB,
}

# Updates that describe the session, not the turn: reported by name only.
_SESSION_UPDATES = frozenset(
    {
        "available_commands_update",
        "current_mode_update",
        "config_option_update",
        "usage_update",
        "user_message_chunk",
    }
)


def tool_kind(kind: object) -> ToolKind:
    """The ToolKind of an ACP tool ``kind`` (``execute``, ``edit``, ...); OTHER when unknown."""
    return _KINDS.get(kind, ToolKind.OTHER) if isinstance(kind, str) else ToolKind.OTHER


def _tool_name(call: Mapping[str, Any]) -> str:
    return as_str(call.get("title")) or as_str(call.get("kind")) or "tool"


def tool_call_event(call: Mapping[str, Any]) -> ToolCall:
    """The ToolCall an ACP tool call (``tool_call`` update or ``toolCall``) announces.

    ``args`` is the agent's ``rawInput`` when it sends one, else the call's title (Gemini CLI
    sends no ``rawInput``; the command is only in the title).
    """
    raw = as_mapping(call.get("rawInput"))
    args: Mapping[str, Any] | str | None = dict(raw) if raw else as_str(call.get("title"))
    return ToolCall(
        as_str(call.get("toolCallId")), _tool_name(call), args, tool_kind(call.get("kind"))
    )


def _content_text(update: Mapping[str, Any]) -> str:
    parts: list[str] = []
    for item in list_or_empty(update.get("content")):
        entry = as_mapping(item) or {}
        kind = entry.get("type")
        if kind == "content":
            text = as_str((as_mapping(entry.get("content")) or {}).get("text"))
            if text:
                parts.append(text)
        elif kind == "diff":
            parts.append(f"edited {as_str(entry.get('path')) or 'a file'}")
    if not parts:
        raw = as_mapping(update.get("rawOutput")) or {}
        text = as_str(raw.get("content")) or as_str(raw.get("message"))
        if text:
            parts.append(text)
    return "\n".join(parts)


class UpdateReader:
    """Reads one turn's ``session/update`` notifications into events for ``emit``.

    ``notice`` tells agent text that is the CLI's own status line. ``text`` is the answer so
    far: every agent message chunk that is not a notice, joined.
    """

    def __init__(
        self,
        emit: Emit,
        notice: Callable[[str], bool],
        *,
        failed: Callable[[str], FailureKind | None] | None = None,
        superseded: bool = False,
    ) -> None:
        self._emit = emit
        self._notice = notice
        self._failed = failed
        self._superseded = superseded
        self._calls: dict[str, ToolCall] = {}
        self._done: set[str] = set()
        self._text: list[str] = []
        # The agent message being streamed: its id, and where its text starts in _text.
        self._message_id: str | None = None
        self._message_start = 0
        self.notices: list[str] = []
        """Agent text read as the CLI's status lines, in order."""
        self.failure: tuple[FailureKind, str] | None = None
        """The kind and text of a notice that said the turn failed, unless an answer followed."""

    @property
    def text(self) -> str:
        """The answer so far."""
        return "".join(self._text)

    def announce(self, call: Mapping[str, Any]) -> ToolCall:
        """The call ``call`` describes, announced with a ToolCall the first time it is seen."""
        event = tool_call_event(call)
        # A tool call between two messages makes the first one part of the answer.
        self._message_id = None
        known = self._calls.get(event.tool_id or "")
        if known is not None:
            return known
        if event.tool_id is not None:
            self._calls[event.tool_id] = event
        self._emit(event)
        return event

    @property
    def calls(self) -> list[ToolCall]:
        """Every tool call of the turn, in the order they were announced."""
        return list(self._calls.values())

    def open_calls(self) -> list[ToolCall]:
        """Calls announced that never reported an end (a cancel ends them without one)."""
        return [call for key, call in self._calls.items() if key not in self._done]

    def read(self, update: Mapping[str, Any]) -> None:
        """Report one ``update`` (the ``params.update`` of a ``session/update``)."""
        kind = as_str(update.get("sessionUpdate")) or ""
        if kind == "agent_message_chunk":
            self._agent_text(update)
        elif kind == "agent_thought_chunk":
            text = _chunk_text(update)
            if text:
                self._emit(Reasoning(text))
        elif kind == "tool_call":
            self.announce(update)
            self._maybe_finished(update)
        elif kind == "tool_call_update":
            self._tool_update(update)
        elif kind == "plan":
            self._plan(update)
        elif kind == "session_info_update":
            title = as_str(update.get("title"))
            if title:
                self._emit(SessionTitle(title, "session_info_update"))
        elif kind in _SESSION_UPDATES:
            self._emit(Lifecycle(kind, _short(update)))
        else:
            self._emit(Lifecycle("unknown_update", _short(update)))

    def _agent_text(self, update: Mapping[str, Any]) -> None:
        text = _chunk_text(update)
        if not text:
            return
        if self._notice(text):
            self.notices.append(text)
            self._emit(Lifecycle("agent_notice", text.strip()[:UNKNOWN_DETAIL_CHARS]))
            kind = self._failed(text) if self._failed is not None else None
            if kind is not None:
                self.failure = (kind, text.strip())
            return
        if self._superseded:
            self._follow_message(as_str(update.get("messageId")))
        self.failure = None
        self._text.append(text)
        self._emit(AssistantText(text, delta=True))

    def _follow_message(self, message_id: str | None) -> None:
        """Drop the text of a message that a new one follows with no tool call between."""
        if message_id is None or message_id == self._message_id:
            return
        if self._message_id is not None:
            dropped = "".join(self._text[self._message_start :]).strip()
            del self._text[self._message_start :]
            if dropped:
                self._emit(Lifecycle("message_superseded", dropped[:UNKNOWN_DETAIL_CHARS]))
        self._message_id = message_id
        self._message_start = len(self._text)

    def _tool_update(self, update: Mapping[str, Any]) -> None:
        tool_id = as_str(update.get("toolCallId"))
        if tool_id is None:
            self._emit(Lifecycle("malformed_update", "tool_call_update without toolCallId"))
            return
        self.announce(update)
        self._maybe_finished(update)

    def _maybe_finished(self, update: Mapping[str, Any]) -> None:
        status = update.get("status")
        tool_id = as_str(update.get("toolCallId"))
        if status not in ("completed", "failed") or tool_id is None or tool_id in self._done:
            return
        self._done.add(tool_id)
        call = self._calls[tool_id]
        text = _content_text(update)
        failed = status == "failed"
        self._emit(
            ToolResult(
                tool_id,
                call.tool,
                stdout="" if failed else text,
                stderr=text if failed else "",
                exit_code=1 if failed else 0,
                kind=call.kind,
            )
        )

    def _plan(self, update: Mapping[str, Any]) -> None:
        items: list[PlanItem] = []
        for entry in list_or_empty(update.get("entries")):
            item = as_mapping(entry) or {}
            text = as_str(item.get("content"))
            if text:
                items.append(PlanItem(text, as_str(item.get("status")) or "pending"))
        self._emit(Plan(tuple(items)))


def _chunk_text(update: Mapping[str, Any]) -> str:
    content = as_mapping(update.get("content")) or {}
    if content.get("type") != "text":
        return ""
    return as_str(content.get("text")) or ""


def _short(update: Mapping[str, Any]) -> str:
    kind = as_str(update.get("sessionUpdate")) or "?"
    if kind == "usage_update":
        return f"used {update.get('used')} of {update.get('size')}"
    if kind == "current_mode_update":
        return as_str(update.get("currentModeId")) or ""
    return kind[:UNKNOWN_DETAIL_CHARS]
