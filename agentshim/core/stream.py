"""Shared pieces of stream parsing: JSON lines, tool call/result pairing, the line limit."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple, cast

from agentshim.core.clock import Monotonic
from agentshim.core.events import Plan, PlanItem, ToolKind

__all__ = [
    "DEFAULT_MAX_LINE_BYTES",
    "FinishedTool",
    "ToolArgs",
    "ToolTracker",
    "parse_json_object",
    "printed_exit_code",
    "scan_json",
    "split_complete_lines",
    "todo_plan",
    "tool_kind_in",
]

#: What a tool call's arguments can be: a JSON object, a bare string (a shell command), or nothing.
ToolArgs = Mapping[str, Any] | str | None

DEFAULT_MAX_LINE_BYTES = 64 * 1024 * 1024
"""The default cap, in bytes before the newline, on one line of CLI output, in every layer.

A tool result can carry a whole file as base64 (a 32 MB PDF, the largest request the model
APIs take, is about 43 MiB of base64), so the cap leaves room for that; it exists so a
runaway line costs a bounded amount of memory instead of all of it.
"""


def _reject_constant(name: str) -> Any:
    # NaN and Infinity are not JSON; a line carrying them is not a JSON object.
    raise ValueError(f"{name} is not JSON")


# One scanner for every call: json.loads with a custom hook builds a new decoder each time,
# which costs as much as decoding a short line. Calling the decoder's C scanner directly also
# skips the Python layers of json.loads (two whitespace scans and two wrapper calls): the text
# is stripped first, so the value must start at 0 and end at the end. The scanner keeps no
# state between calls.
# (JSONDecoder sets scan_once in __init__ and the type stubs do not declare it.)
scan_json: Callable[[str, int], tuple[Any, int]] = vars(
    json.JSONDecoder(parse_constant=_reject_constant)
)["scan_once"]
"""``scan_json(text, start)``: the JSON value starting at ``text[start]`` and where it ends.

Raises ValueError for invalid JSON (and for NaN or Infinity), StopIteration when nothing
starts there, RecursionError for nesting too deep. :func:`parse_json_object` wraps it.
"""


def parse_json_object(line: str | bytes) -> dict[str, Any] | None:
    """Decode ``line`` as one JSON object; None for anything else. Never raises.

    Surrounding whitespace (including the trailing newline) is ignored. Arrays, strings,
    numbers, invalid JSON, NaN/Infinity, nesting too deep to decode, and bytes that are not
    UTF-8 all give None, so a caller can turn the line into a RawOutput event instead.
    """
    if isinstance(line, str):
        text = line.strip()
    elif isinstance(line, (bytes, bytearray)):  # pyright: ignore[reportUnnecessaryIsInstance]
        try:
            text = line.decode("utf-8").strip()
        except UnicodeDecodeError:
            return None
    else:
        return None
    # Most non-JSON lines (banners, progress text) are rejected here without a decode attempt.
    if text[:1] != "{":
        return None
    try:
        value, end = scan_json(text, 0)
    except (ValueError, RecursionError, StopIteration):
        return None
    if end == len(text) and type(value) is dict:
        return value  # pyright: ignore[reportUnknownVariableType]
    return None


def split_complete_lines(chunk: bytes | bytearray | memoryview) -> tuple[list[str], int]:
    r"""The whole lines in ``chunk`` and how many bytes they take, for tailing a log by offset.

    A line is whole once its ``\n`` is in the chunk; what follows the last one is left for the
    next read, so a long line that straddles two reads comes out whole from the second.
    Advance the offset by ``consumed`` only. Lines come without their ``\n`` (and a ``\r``
    before it); bytes that are not UTF-8 become U+FFFD, so no line is lost to an encoding.
    """
    data = bytes(chunk)
    end = data.rfind(b"\n")
    if end < 0:
        return [], 0
    lines = [
        part.decode("utf-8", errors="replace").removesuffix("\r")
        for part in data[:end].split(b"\n")
    ]
    return lines, end + 1


def printed_exit_code(pattern: re.Pattern[str], text: str) -> int:
    """The nonzero exit code ``pattern`` (one group of digits) finds in a failed tool's text.

    CLIs that flag a failed shell command only as "an error" print its status in the result
    text ("Exit code 2"); without one, or with a 0, a failure reads as 1.
    """
    match = pattern.search(text)
    code = int(match.group(1)) if match is not None else 0
    return code or 1


# Looking an enum member up on its class costs ~0.1 us on CPython 3.11, and tool kinds are
# read for every tool call.
_MCP = ToolKind.MCP
_OTHER = ToolKind.OTHER


def tool_kind_in(
    kinds: Mapping[str, ToolKind], name: str, *, mcp_prefix: str | None = None
) -> ToolKind:
    """What the tool ``name`` does, by a provider's ``kinds`` table of its own tools.

    A name the table lacks is MCP when it starts with ``mcp_prefix`` (for a CLI that names MCP
    tools that way), else OTHER.
    """
    kind = kinds.get(name)
    if kind is not None:
        return kind
    if mcp_prefix is not None and name.startswith(mcp_prefix):
        return _MCP
    return _OTHER


def todo_plan(args: object, tool_id: str | None, *text_keys: str) -> Plan | None:
    """The Plan a todo-list tool call sets, or None when ``args`` holds no ``todos`` list.

    Each todo is an object whose text is under the first of ``text_keys`` that holds a
    non-empty string and whose ``status`` (a non-empty string) defaults to ``pending``; a todo
    without such a text is left out.
    """
    todos: object = (
        cast("Mapping[str, object]", args).get("todos") if isinstance(args, Mapping) else None
    )
    if not isinstance(todos, list):
        return None
    items: list[PlanItem] = []
    for todo in cast("list[object]", todos):
        if not isinstance(todo, Mapping):
            continue
        fields = cast("Mapping[str, object]", todo)
        texts = (fields.get(key) for key in text_keys)
        text = next((t for t in texts if isinstance(t, str) and t), None)
        if text is not None:
            status = fields.get("status")
            items.append(
                PlanItem(text, status if isinstance(status, str) and status else "pending")
            )
    return Plan(tuple(items), tool_id)


class FinishedTool(NamedTuple):
    """A tool call paired with its result: its name, its arguments and how long it ran."""

    name: str
    args: ToolArgs
    duration_s: float


class ToolTracker:
    """Pairs tool calls with their results by id, remembering each call's name and start time.

    Most CLIs name the tool only on the call, not on the result, and report no duration; a
    parser calls ``start`` when a call appears and ``finish`` when its result does.
    """

    def __init__(self, monotonic: Monotonic = time.monotonic) -> None:
        """Track calls, timing them with ``monotonic`` (seconds; ``time.monotonic`` by default)."""
        self._clock = monotonic
        # tool id -> (name, args, start time); plain tuples, as one is made for every call.
        self._pending: dict[str, tuple[str, ToolArgs, float]] = {}

    def start(self, tool_id: str, name: str, args: ToolArgs = None) -> None:
        """Record that the call ``tool_id`` started.

        Starting an id that is already pending (a CLI that reports a call as started and then
        updated) replaces its name and arguments but keeps the original start time.
        """
        previous = self._pending.get(tool_id)
        started_at = previous[2] if previous is not None else self._clock()
        self._pending[tool_id] = (name, args, started_at)

    def finish(self, tool_id: str) -> FinishedTool | None:
        """Pair a result with its call and forget the call; None if ``tool_id`` is not pending.

        The duration is never negative, even with a clock that goes backwards.
        """
        pending = self._pending.pop(tool_id, None)
        if pending is None:
            return None
        name, args, started_at = pending
        duration = self._clock() - started_at
        # The same FinishedTool, made by tuple.__new__ without the Python-level __new__ a
        # NamedTuple call goes through (half the cost): one is made for every tool result.
        parts = (name, args, duration if duration > 0.0 else 0.0)
        return tuple.__new__(FinishedTool, parts)  # pyright: ignore[reportUnknownMemberType]

    def name_of(self, tool_id: str) -> str | None:
        """The tool name of a pending call, or None if ``tool_id`` is not pending."""
        pending = self._pending.get(tool_id)
        return pending[0] if pending is not None else None

    def pending(self) -> tuple[str, ...]:
        """Ids of the calls still waiting for a result, in the order they started."""
        return tuple(self._pending)

    def __contains__(self, tool_id: object) -> bool:
        return tool_id in self._pending

    def __len__(self) -> int:
        return len(self._pending)
