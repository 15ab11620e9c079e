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
from types import MappingProxyType
from typing import Any

from agentshim.core import lifecycle_kinds as lk
from agentshim.core.errors import FailureKind
from agentshim.core.events import (
    AgentContent,
    AssistantText,
    CommandsAvailable,
    ConfigOption,
    ConfigOptionsChanged,
    Emit,
    FileDiff,
    Lifecycle,
    ModeChanged,
    Plan,
    PlanItem,
    Reasoning,
    SessionTitle,
    ToolCall,
    ToolCallUpdated,
    ToolKind,
    ToolResult,
    UsageReport,
    UsageScope,
)
from agentshim.core.frames import UNKNOWN_DETAIL_CHARS
from agentshim.core.jsonvalues import as_count, as_int, as_mapping, as_str, list_or_empty
from agentshim.core.usage import ProviderUsage

__all__ = [
    "UpdateReader",
    "config_options",
    "content_event",
    "tool_call_event",
    "tool_kind",
]

_KINDS: Mapping[str, ToolKind] = {
    "read": ToolKind.FILE_READ,
    "edit": ToolKind.FILE_CHANGE,
    "delete": ToolKind.FILE_CHANGE,
    "move": ToolKind.FILE_CHANGE,
    "search": ToolKind.SEARCH,
    "execute": ToolKind.COMMAND,
    "fetch": ToolKind.WEB,
}


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


def _locations(update: Mapping[str, Any]) -> tuple[str, ...]:
    found: list[str] = []
    for item in list_or_empty(update.get("locations")):
        entry = as_mapping(item) or {}
        path = as_str(entry.get("path"))
        if path:
            line = as_int(entry.get("line"))
            found.append(path if line is None else f"{path}:{line}")
    return tuple(found)


def _diffs(update: Mapping[str, Any]) -> tuple[FileDiff, ...]:
    found: list[FileDiff] = []
    for item in list_or_empty(update.get("content")):
        entry = as_mapping(item) or {}
        path, new = as_str(entry.get("path")), as_str(entry.get("newText"))
        if entry.get("type") == "diff" and path is not None and new is not None:
            found.append(FileDiff(path, as_str(entry.get("oldText")), new))
    return tuple(found)


def config_options(value: object) -> tuple[ConfigOption, ...]:
    """The ``configOptions`` of a session answer or update, as ConfigOptions.

    A select's choices are its option values, grouped ones included; a boolean's value is
    ``"true"`` or ``"false"``. An entry without an id is skipped.
    """
    options: list[ConfigOption] = []
    for item in list_or_empty(value):
        entry = as_mapping(item) or {}
        option_id = as_str(entry.get("id"))
        if not option_id:
            continue
        current = entry.get("currentValue")
        shown = ("true" if current else "false") if isinstance(current, bool) else as_str(current)
        choices: list[str] = []
        for choice in list_or_empty(entry.get("options")):
            group = as_mapping(choice) or {}
            members = group.get("options") if "options" in group else [group]
            for member in list_or_empty(members):
                chosen = as_str((as_mapping(member) or {}).get("value"))
                if chosen is not None:
                    choices.append(chosen)
        options.append(
            ConfigOption(
                option_id,
                as_str(entry.get("name")) or option_id,
                as_str(entry.get("category")) or "",
                shown or "",
                tuple(choices),
            )
        )
    return tuple(options)


def content_event(content: Mapping[str, Any], *, thought: bool = False) -> AgentContent:
    """The AgentContent of a content block that is not text (image, audio, resource, link)."""
    kind = as_str(content.get("type")) or "unknown"
    resource = as_mapping(content.get("resource")) or {}
    return AgentContent(
        kind,
        as_str(content.get("mimeType")) or as_str(resource.get("mimeType")) or "",
        as_str(content.get("uri")) or as_str(resource.get("uri")) or "",
        as_str(resource.get("text")) or "",
        thought,
    )


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
        self.mode: str | None = None
        """The mode the agent last said the session is in, during this turn."""
        self.config: tuple[ConfigOption, ...] | None = None
        """The session's settings as the agent last reported them, during this turn."""
        self.context: tuple[int, int] | None = None
        """Tokens in the context and the window's size, as the last ``usage_update`` said."""
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
            content = as_mapping(update.get("content")) or {}
            if content.get("type") != "text":
                self._emit(content_event(content, thought=True))
            elif text := _chunk_text(update):
                self._emit(Reasoning(text))
        elif kind in ("tool_call", "tool_call_update"):
            self._tool_update(update)
        elif kind == "plan":
            self._plan(update)
        elif kind == "session_info_update":
            title = as_str(update.get("title"))
            if title:
                self._emit(SessionTitle(title, "session_info_update"))
        elif kind == "current_mode_update":
            mode = as_str(update.get("currentModeId"))
            if mode:
                self.mode = mode
                self._emit(ModeChanged(mode))
        elif kind == "config_option_update":
            self.config = config_options(update.get("configOptions"))
            self._emit(ConfigOptionsChanged(self.config))
        elif kind == "available_commands_update":
            names = [
                as_str((as_mapping(item) or {}).get("name"))
                for item in list_or_empty(update.get("availableCommands"))
            ]
            self._emit(CommandsAvailable(tuple(name for name in names if name)))
        elif kind == "usage_update":
            self._context_usage(update)
        elif kind == "user_message_chunk":
            self._emit(Lifecycle(lk.USER_MESSAGE_CHUNK, _short(update)))
        else:
            self._emit(Lifecycle(lk.UNKNOWN_UPDATE, _short(update)))

    def _context_usage(self, update: Mapping[str, Any]) -> None:
        """A ``usage_update``: how full the context is, reported live as a call's usage.

        It carries no token counts of a model call, so the usage's increment is not known;
        the counts are in its ``raw``, and the turn's result takes them as its context.
        """
        used, size = as_count(update.get("used")), as_count(update.get("size"))
        self.context = (used, size)
        cost = as_mapping(update.get("cost")) or {}
        amount = cost.get("amount")
        usd = (
            float(amount)
            if isinstance(amount, (int, float))
            and not isinstance(amount, bool)
            and cost.get("currency") == "USD"
            else None
        )
        usage = ProviderUsage(raw=MappingProxyType(dict(update)), increment_known=False)
        self._emit(UsageReport(usage, cost_usd=usd, scope=UsageScope.CALL))

    def _agent_text(self, update: Mapping[str, Any]) -> None:
        content = as_mapping(update.get("content")) or {}
        if content and content.get("type") != "text":
            self._emit(content_event(content))
            return
        text = _chunk_text(update)
        if not text:
            return
        if self._notice(text):
            self.notices.append(text)
            self._emit(Lifecycle(lk.AGENT_NOTICE, text.strip()[:UNKNOWN_DETAIL_CHARS]))
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
                self._emit(Lifecycle(lk.MESSAGE_SUPERSEDED, dropped[:UNKNOWN_DETAIL_CHARS]))
        self._message_id = message_id
        self._message_start = len(self._text)

    def _tool_update(self, update: Mapping[str, Any]) -> None:
        """A ``tool_call`` or ``tool_call_update``: a new call, a refinement, or its end."""
        tool_id = as_str(update.get("toolCallId"))
        if tool_id is None:
            self._emit(Lifecycle(lk.MALFORMED_UPDATE, "tool call without toolCallId"))
            return
        known = tool_id in self._calls
        call = self.announce(update)
        if tool_id in self._done:
            return
        if known:
            call = self._refine(call, update)
        status = as_str(update.get("status")) or ""
        locations, diffs = _locations(update), _diffs(update)
        if known or status == "in_progress" or locations or diffs:
            self._emit(
                ToolCallUpdated(tool_id, call.tool, status, call.args, call.kind, locations, diffs)
            )
        self._maybe_finished(update)

    def _refine(self, call: ToolCall, update: Mapping[str, Any]) -> ToolCall:
        """``call`` with the title, input and kind an update gives it."""
        title = as_str(update.get("title"))
        raw = as_mapping(update.get("rawInput"))
        kind = update.get("kind")
        refined = ToolCall(
            call.tool_id,
            title or call.tool,
            dict(raw) if raw else call.args,
            tool_kind(kind) if isinstance(kind, str) else call.kind,
        )
        if refined != call and call.tool_id is not None:
            self._calls[call.tool_id] = refined
        return refined

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
