"""Stored events: every AgentEvent as a JSON object of this library's vocabulary, and back.

What gets stored is the library's vocabulary, never a CLI's own shape: a CLI's output is an
output format, not an API, and history kept in it would date the first time a vendor moves a
field. The format is documented in docs/context-and-usage.md ("Stored events"); each object
carries ``"v"`` (:data:`EVENT_FORMAT_VERSION`) and ``"type"``. Decoding never raises: an
object of an unknown type, a newer version or a wrong shape comes back as a RawOutput holding
the object's JSON text, so nothing is dropped and nothing stops a reader.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar, cast

from agentshim.core import events as ev
from agentshim.core.usage import ProviderUsage

__all__ = ["EVENT_FORMAT_VERSION", "EVENT_TYPES", "event_from_json", "event_to_json"]

EVENT_FORMAT_VERSION = 1
"""The version every encoded event carries as ``"v"``; a reader decodes this one and older."""

JsonObject = dict[str, Any]
_T = TypeVar("_T")


class _Unreadable(Exception):
    """An object that names a known type but does not have its shape."""


def _text(obj: Mapping[str, Any], key: str, default: str | None = None) -> str:
    value = obj.get(key, default)
    if type(value) is not str:
        raise _Unreadable(key)
    return value


def _optional_text(obj: Mapping[str, Any], key: str) -> str | None:
    value = obj.get(key)
    if value is not None and type(value) is not str:
        raise _Unreadable(key)
    return value


def _optional_int(obj: Mapping[str, Any], key: str) -> int | None:
    value = obj.get(key)
    if value is not None and type(value) is not int:
        raise _Unreadable(key)
    return value


def _optional_float(obj: Mapping[str, Any], key: str) -> float | None:
    value = obj.get(key)
    if value is None:
        return None
    if type(value) not in (int, float) or not math.isfinite(value):
        raise _Unreadable(key)
    return float(value)


def _flag(obj: Mapping[str, Any], key: str) -> bool:
    value = obj.get(key, False)
    if type(value) is not bool:
        raise _Unreadable(key)
    return value


def _list(obj: Mapping[str, Any], key: str) -> list[Any]:
    value = obj.get(key, [])
    if type(value) is not list:
        raise _Unreadable(key)
    return value  # pyright: ignore[reportUnknownVariableType]


def _object(value: object, key: str) -> Mapping[str, Any]:
    if type(value) is not dict:
        raise _Unreadable(key)
    return value  # pyright: ignore[reportReturnType, reportUnknownVariableType]


def _objects(
    obj: Mapping[str, Any], key: str, decode: Callable[[Mapping[str, Any]], _T]
) -> tuple[_T, ...]:
    """The list of objects under ``key``, each decoded by ``decode``."""
    return tuple(decode(_object(entry, key)) for entry in _list(obj, key))


def _kind(obj: Mapping[str, Any]) -> ev.ToolKind:
    try:
        return ev.ToolKind(obj.get("kind", ev.ToolKind.OTHER.value))
    except ValueError:
        return ev.ToolKind.OTHER


def _plain(value: Any) -> Any:
    """A JSON-ready copy of a mapping's values (read-only views become dicts)."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]  # pyright: ignore[reportUnknownVariableType]
    return value


def _tool_event(
    event_type: str, event: ev.ToolCall | ev.ToolResult | ev.ToolCallUpdated, **fields: Any
) -> JsonObject:
    """A tool call's, result's or update's object: the tool's identity first, its kind last."""
    return {
        "type": event_type,
        "tool_id": event.tool_id,
        "tool": event.tool,
        **fields,
        "kind": event.kind.value,
    }


def _encode(event: ev.AgentEvent) -> JsonObject:
    if isinstance(event, ev.AssistantText):
        return {"type": "message", "role": "assistant", "text": event.text, "delta": event.delta}
    if isinstance(event, ev.ToolCall):
        args = _plain(event.args) if isinstance(event.args, Mapping) else event.args
        return _tool_event("tool.call", event, args=args)
    if isinstance(event, ev.ToolResult):
        return _tool_event(
            "tool.result",
            event,
            stdout=event.stdout,
            stderr=event.stderr,
            exit_code=event.exit_code,
            duration_s=event.duration_s,
        )
    if isinstance(event, ev.UsageReport):
        return {
            "type": "usage",
            "scope": event.scope.value,
            "usage": _plain(event.usage.to_dict()),
            "cost_usd": event.cost_usd,
            "duration_ms": event.duration_ms,
        }
    if isinstance(event, ev.Reasoning):
        return {"type": "thinking", "text": event.text}
    if isinstance(event, ev.Plan):
        items = [{"text": item.text, "status": item.status} for item in event.items]
        return {"type": "plan", "items": items, "tool_id": event.tool_id}
    if isinstance(event, ev.SessionStarted):
        return {"type": "session.started", "session_id": event.session_id}
    if isinstance(event, ev.SessionTitle):
        return {"type": "session.title", "title": event.title, "source": event.source}
    if isinstance(event, ev.BackgroundTasksChanged):
        tasks = [
            {"task_id": t.task_id, "task_type": t.task_type, "description": t.description}
            for t in event.tasks
        ]
        return {"type": "session.background", "tasks": tasks}
    if isinstance(event, ev.Lifecycle):
        return {"type": "lifecycle", "kind": event.kind, "detail": event.detail}
    if isinstance(event, ev.ProviderErrorReported):
        return {"type": "error", "message": event.message, "fatal": event.fatal}
    if isinstance(event, ev.RawOutput):
        return {"type": "raw", "text": event.text}
    if isinstance(event, ev.Stderr):
        return {"type": "stderr", "text": event.text}
    if isinstance(event, ev.RunStarted):
        return {"type": "run.started", "argv": list(event.argv)}
    if isinstance(event, ev.RunFinished):
        return {"type": "run.finished", "exit_code": event.exit_code}
    if isinstance(event, ev.ApprovalRequested):
        return {
            "type": "approval.requested",
            "tool": event.tool,
            "args": _plain(event.args),
            "kind": event.kind.value,
            "tool_id": event.tool_id,
            "description": event.description,
        }
    if isinstance(event, ev.ApprovalAnswered):
        return {
            "type": "approval.answered",
            "tool_id": event.tool_id,
            "allowed": event.allowed,
            "decided_by": event.decided_by,
            "message": event.message,
            "args": _plain(event.args) if event.args is not None else None,
        }
    if isinstance(event, ev.TurnInterrupted):
        return {"type": "turn.interrupted", "reason": event.reason}
    return _encode_session_update(event)


def _encode_session_update(
    event: ev.ToolCallUpdated
    | ev.AgentContent
    | ev.ModeChanged
    | ev.ConfigOptionsChanged
    | ev.CommandsAvailable
    | ev.HistoryReplayed,
) -> JsonObject:
    if isinstance(event, ev.ToolCallUpdated):
        args = _plain(event.args) if isinstance(event.args, Mapping) else event.args
        diffs = [
            {"path": diff.path, "old_text": diff.old_text, "new_text": diff.new_text}
            for diff in event.diffs
        ]
        return _tool_event(
            "tool.update",
            event,
            status=event.status,
            args=args,
            locations=list(event.locations),
            diffs=diffs,
        )
    if isinstance(event, ev.AgentContent):
        return {
            "type": "content",
            "content_type": event.content_type,
            "mime_type": event.mime_type,
            "uri": event.uri,
            "text": event.text,
            "thought": event.thought,
        }
    if isinstance(event, ev.ModeChanged):
        return {"type": "session.mode", "mode_id": event.mode_id}
    if isinstance(event, ev.ConfigOptionsChanged):
        options = [
            {
                "option_id": option.option_id,
                "name": option.name,
                "category": option.category,
                "value": option.value,
                "choices": list(option.choices),
            }
            for option in event.options
        ]
        return {"type": "session.config", "options": options}
    if isinstance(event, ev.CommandsAvailable):
        return {"type": "session.commands", "commands": list(event.commands)}
    return {"type": "history", "role": event.role, "text": event.text}


def event_to_json(event: ev.AgentEvent) -> JsonObject:
    """``event`` as a JSON-ready object: ``{"v": 1, "type": ..., <its fields>}``.

    :func:`event_from_json` turns the object (or its JSON text, decoded) back into an equal
    event. Read-only mappings (a tool call's arguments, a usage report's raw counts) become
    plain dicts.
    """
    return {"v": EVENT_FORMAT_VERSION, **_encode(event)}


def _message(obj: Mapping[str, Any]) -> ev.AgentEvent:
    if obj.get("role", "assistant") != "assistant":
        raise _Unreadable("role")
    return ev.AssistantText(_text(obj, "text"), _flag(obj, "delta"))


def _tool_identity(obj: Mapping[str, Any]) -> tuple[str | None, str]:
    """A tool event's ``tool_id`` and ``tool``: what :func:`_tool_event` writes first."""
    return _optional_text(obj, "tool_id"), _text(obj, "tool")


def _tool_call(obj: Mapping[str, Any]) -> ev.AgentEvent:
    args: Any = obj.get("args")
    if args is not None and type(args) not in (dict, str):
        raise _Unreadable("args")
    return ev.ToolCall(*_tool_identity(obj), args, _kind(obj))


def _tool_result(obj: Mapping[str, Any]) -> ev.AgentEvent:
    return ev.ToolResult(
        *_tool_identity(obj),
        _text(obj, "stdout", ""),
        _text(obj, "stderr", ""),
        _optional_int(obj, "exit_code"),
        _optional_float(obj, "duration_s"),
        _kind(obj),
    )


def _usage(obj: Mapping[str, Any]) -> ev.AgentEvent:
    data = dict(_object(obj.get("usage", {}), "usage"))
    data["raw"] = MappingProxyType(dict(_object(data.get("raw", {}), "raw")))
    try:
        usage = ProviderUsage.from_dict(data)
        scope = ev.UsageScope(obj.get("scope", ev.UsageScope.TURN.value))
    except (TypeError, ValueError) as error:
        raise _Unreadable("usage") from error
    return ev.UsageReport(
        usage, _optional_float(obj, "cost_usd"), scope, _optional_int(obj, "duration_ms")
    )


def _plan(obj: Mapping[str, Any]) -> ev.AgentEvent:
    items = _objects(
        obj, "items", lambda item: ev.PlanItem(_text(item, "text"), _text(item, "status"))
    )
    return ev.Plan(items, _optional_text(obj, "tool_id"))


def _background(obj: Mapping[str, Any]) -> ev.AgentEvent:
    def task(entry: Mapping[str, Any]) -> ev.BackgroundTask:
        return ev.BackgroundTask(
            _text(entry, "task_id"), _text(entry, "task_type", ""), _text(entry, "description", "")
        )

    return ev.BackgroundTasksChanged(_objects(obj, "tasks", task))


def _approval_requested(obj: Mapping[str, Any]) -> ev.AgentEvent:
    return ev.ApprovalRequested(
        _text(obj, "tool"),
        _object(obj.get("args", {}), "args"),
        _kind(obj),
        _optional_text(obj, "tool_id"),
        _text(obj, "description", ""),
    )


def _approval_answered(obj: Mapping[str, Any]) -> ev.AgentEvent:
    args = obj.get("args")
    if args is not None and type(args) is not dict:
        raise _Unreadable("args")
    allowed = obj.get("allowed")
    if type(allowed) is not bool:
        raise _Unreadable("allowed")
    return ev.ApprovalAnswered(
        _optional_text(obj, "tool_id"),
        allowed,
        _text(obj, "decided_by"),
        _text(obj, "message", ""),
        args,  # pyright: ignore[reportUnknownArgumentType]
    )


def _run_started(obj: Mapping[str, Any]) -> ev.AgentEvent:
    argv = _list(obj, "argv")
    if any(type(a) is not str for a in argv):
        raise _Unreadable("argv")
    return ev.RunStarted(tuple(argv))


def _texts(obj: Mapping[str, Any], key: str) -> tuple[str, ...]:
    values = _list(obj, key)
    if any(type(value) is not str for value in values):
        raise _Unreadable(key)
    return tuple(values)


def _tool_update(obj: Mapping[str, Any]) -> ev.AgentEvent:
    args: Any = obj.get("args")
    if args is not None and type(args) not in (dict, str):
        raise _Unreadable("args")
    diffs = _objects(
        obj,
        "diffs",
        lambda d: ev.FileDiff(
            _text(d, "path"), _optional_text(d, "old_text"), _text(d, "new_text")
        ),
    )
    return ev.ToolCallUpdated(
        *_tool_identity(obj),
        _text(obj, "status", ""),
        args,
        _kind(obj),
        _texts(obj, "locations"),
        diffs,
    )


def _content(obj: Mapping[str, Any]) -> ev.AgentEvent:
    return ev.AgentContent(
        _text(obj, "content_type"),
        _text(obj, "mime_type", ""),
        _text(obj, "uri", ""),
        _text(obj, "text", ""),
        _flag(obj, "thought"),
    )


def _config(obj: Mapping[str, Any]) -> ev.AgentEvent:
    def option(entry: Mapping[str, Any]) -> ev.ConfigOption:
        return ev.ConfigOption(
            _text(entry, "option_id"),
            _text(entry, "name"),
            _text(entry, "category", ""),
            _text(entry, "value", ""),
            _texts(entry, "choices"),
        )

    return ev.ConfigOptionsChanged(_objects(obj, "options", option))


_DECODERS: Mapping[str, Callable[[Mapping[str, Any]], ev.AgentEvent]] = MappingProxyType(
    {
        "message": _message,
        "thinking": lambda o: ev.Reasoning(_text(o, "text")),
        "tool.call": _tool_call,
        "tool.result": _tool_result,
        "usage": _usage,
        "plan": _plan,
        "session.started": lambda o: ev.SessionStarted(_text(o, "session_id")),
        "session.title": lambda o: ev.SessionTitle(_text(o, "title"), _text(o, "source", "")),
        "session.background": _background,
        "lifecycle": lambda o: ev.Lifecycle(_text(o, "kind"), _text(o, "detail", "")),
        "error": lambda o: ev.ProviderErrorReported(_text(o, "message"), _flag(o, "fatal")),
        "raw": lambda o: ev.RawOutput(_text(o, "text")),
        "stderr": lambda o: ev.Stderr(_text(o, "text")),
        "run.started": _run_started,
        "run.finished": lambda o: ev.RunFinished(_optional_int(o, "exit_code")),
        "turn.interrupted": lambda o: ev.TurnInterrupted(_text(o, "reason", "interrupted")),
        "approval.requested": _approval_requested,
        "approval.answered": _approval_answered,
        "tool.update": _tool_update,
        "content": _content,
        "session.mode": lambda o: ev.ModeChanged(_text(o, "mode_id")),
        "session.config": _config,
        "session.commands": lambda o: ev.CommandsAvailable(_texts(o, "commands")),
        "history": lambda o: ev.HistoryReplayed(_text(o, "role"), _text(o, "text")),
    }
)

EVENT_TYPES = frozenset(_DECODERS)
"""Every ``type`` of the vocabulary :func:`event_from_json` reads."""


def _raw(value: object) -> ev.RawOutput:
    try:
        text = json.dumps(value, sort_keys=True, separators=(",", ":"), default=repr)
    except (TypeError, ValueError, RecursionError):
        text = repr(value)
    return ev.RawOutput(text)


def event_from_json(value: object) -> ev.AgentEvent:
    """The event a stored object holds; never raises.

    ``value`` is an object as :func:`event_to_json` made it (a missing ``"v"`` reads as the
    current version). Anything else (not an object, an unknown ``type``, a newer ``"v"``, a
    field of the wrong type) comes back as a RawOutput of the value's JSON text.
    """
    if not isinstance(value, dict):
        return _raw(value)
    obj = cast("Mapping[str, Any]", value)
    version: Any = obj.get("v", EVENT_FORMAT_VERSION)
    kind: Any = obj.get("type")
    decoder = _DECODERS.get(kind) if type(kind) is str else None
    if decoder is None or type(version) is not int or version > EVENT_FORMAT_VERSION:
        return _raw(obj)
    try:
        return decoder(obj)
    except (_Unreadable, ValueError, TypeError):
        # Any shape the vocabulary does not allow is kept, not dropped.
        return _raw(obj)
