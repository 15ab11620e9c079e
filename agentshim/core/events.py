"""Typed events a turn emits while it runs, and the handlers that receive them.

Every event is a frozen, slotted dataclass; ``AgentEvent`` is their union. Handlers run on the
thread that called ``turn()``.
"""

from __future__ import annotations

import enum
import os
import sys
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Protocol, TextIO, cast, runtime_checkable

from agentshim.core._checks import sequence
from agentshim.core._error_base import InvalidRequestError
from agentshim.core._slots import fast_value
from agentshim.core.usage import ProviderUsage

__all__ = [
    "AgentContent",
    "AgentEvent",
    "AgentEventHandler",
    "ApprovalAnswered",
    "ApprovalRequested",
    "AssistantText",
    "BackgroundTask",
    "BackgroundTasksChanged",
    "CallbackEventHandler",
    "CommandsAvailable",
    "CompositeEventHandler",
    "ConfigOption",
    "ConfigOptionsChanged",
    "ConsoleEventHandler",
    "EventHandlerBase",
    "EventSink",
    "FileDiff",
    "HistoryReplayed",
    "Lifecycle",
    "ModeChanged",
    "NullEventHandler",
    "Plan",
    "PlanItem",
    "ProviderErrorReported",
    "RawOutput",
    "Reasoning",
    "RunFinished",
    "RunStarted",
    "SessionStarted",
    "SessionTitle",
    "Stderr",
    "ToolCall",
    "ToolCallUpdated",
    "ToolKind",
    "ToolResult",
    "TurnInterrupted",
    "UsageReport",
    "UsageScope",
    "event_callback",
    "event_callbacks",
]


class ToolKind(enum.Enum):
    """What a tool call does, independent of the provider's name for the tool."""

    COMMAND = "command"
    FILE_CHANGE = "file_change"
    FILE_READ = "file_read"
    SEARCH = "search"
    WEB = "web"
    PLAN = "plan"
    SUBAGENT = "subagent"
    MCP = "mcp"
    OTHER = "other"


@fast_value
class RunStarted:
    """The CLI process is about to start with ``argv``."""

    argv: tuple[str, ...]


@fast_value
class RunFinished:
    """The CLI process ended; ``exit_code`` is None when it never produced one (a timeout)."""

    exit_code: int | None


@fast_value
class SessionStarted:
    """The provider named the conversation; ``session_id`` resumes it later."""

    session_id: str


@fast_value
class AssistantText:
    """Assistant message text.

    ``delta`` is True for a streamed piece of a message; a parser emits either the pieces or
    the whole message, never both, so joining every AssistantText of a message rebuilds it.
    """

    text: str
    delta: bool = False


@fast_value
class Reasoning:
    """Thinking or reasoning text the model showed, as the CLI printed it (never in the answer)."""

    text: str


@fast_value
class ToolCall:
    """The agent invoked a tool.

    ``tool_id`` pairs the call with its ToolResult (None when the CLI names no id); ``tool``
    is the tool's name as the CLI spells it; ``args`` its arguments (a mapping, a bare command
    string, or None); ``kind`` what sort of tool it is, from the provider's table.
    """

    tool_id: str | None
    tool: str
    args: Mapping[str, Any] | str | None = None
    kind: ToolKind = ToolKind.OTHER


@fast_value
class ToolResult:
    """A tool finished. A failure has empty stdout, its message on stderr, a nonzero exit_code."""

    tool_id: str | None
    tool: str
    stdout: str = ""
    stderr: str = ""
    exit_code: int | None = None
    duration_s: float | None = None
    kind: ToolKind = ToolKind.OTHER

    @property
    def failed(self) -> bool:
        """True when the tool reported failure."""
        return self.exit_code is not None and self.exit_code != 0


@fast_value
class PlanItem:
    """One entry of the agent's plan or todo list; ``status`` as the CLI names it."""

    text: str
    status: str


@fast_value
class Plan:
    """The agent's current plan (a todo-list tool call), every item with its status."""

    items: tuple[PlanItem, ...]
    tool_id: str | None = None


class UsageScope(enum.Enum):
    """What a UsageReport covers."""

    CALL = "call"
    """One model call (a request and its answer): reported while the turn runs."""
    TURN = "turn"
    """The whole turn (or what it used since the previous turn report), reported at its end."""


@fast_value
class UsageReport:
    """Provider accounting for one model call or for the turn (``scope``).

    ``usage`` is this report's share in the normalized breakdown (see ``ProviderUsage``);
    ``cost_usd`` its cost when the CLI reported it or the provider priced it, else None.
    Call reports are parts of the turn's report that follows them: add either the calls or
    the turns, never both. ``duration_ms`` is how long the turn took by the CLI's own
    account, where it says (turn reports only).
    """

    usage: ProviderUsage
    cost_usd: float | None = None
    scope: UsageScope = UsageScope.TURN
    duration_ms: int | None = None


@fast_value
class SessionTitle:
    """The conversation's title, as the CLI named it; ``source`` is the line it was read from."""

    title: str
    source: str = ""


@fast_value
class BackgroundTask:
    """One task the agent left running in the background (a shell, a subagent, ...).

    The fields are Claude Code's: ``task_id``, ``task_type`` (``local_bash``,
    ``local_agent``, ...) and ``description``.
    """

    task_id: str
    task_type: str = ""
    description: str = ""


@fast_value
class BackgroundTasksChanged:
    """The set of background tasks still running changed; ``tasks`` is the whole new set.

    While it is not empty the agent may start a turn of its own when a task finishes.
    """

    tasks: tuple[BackgroundTask, ...] = ()


@fast_value
class Lifecycle:
    """Provider plumbing: a retry, a warning, a frame nobody knows, a policy decision.

    ``kind`` is always one of the constants of :mod:`agentshim.core.lifecycle_kinds` (or a name
    built by one of its prefix helpers, such as ``unknown_frame:<type>``); that module says
    when each is emitted. ``detail`` is free text for people, not for code.
    """

    kind: str
    detail: str = ""


@fast_value
class Stderr:
    """One line the CLI wrote to stderr (without its newline)."""

    text: str


@fast_value
class RawOutput:
    """One stdout line that was not a provider event (without its newline)."""

    text: str


@fast_value
class ProviderErrorReported:
    """The provider reported an error (it may or may not end the turn)."""

    message: str
    fatal: bool = False


@fast_value
class TurnInterrupted:
    """The running turn was interrupted on request; its result is marked interrupted."""

    reason: str = "interrupted"


@fast_value
class ApprovalRequested:
    """The agent asked permission to run ``tool`` with ``args`` (``tool_id`` pairs it)."""

    tool: str
    args: Mapping[str, Any]
    kind: ToolKind
    tool_id: str | None = None
    description: str = ""


@fast_value
class ApprovalAnswered:
    """The answer sent for the request of ``tool_id``, and who gave it.

    ``decided_by`` is ``"handler"`` (the caller's handler answered in time), ``"policy"``
    (the conversation's ApprovalPolicy), ``"handler_error"`` (the handler raised: denied),
    ``"handler_timeout"`` (the handler answered after ``approval_timeout``: denied),
    ``"read_only"`` (a write the read-only permissions forbid: denied without asking) or
    ``"interrupted"`` (the turn was being interrupted: denied without asking). ``args`` is
    set when an allow rewrote the tool's arguments.
    """

    tool_id: str | None
    allowed: bool
    decided_by: str
    message: str = ""
    args: Mapping[str, Any] | None = None


@fast_value
class FileDiff:
    """An edit a tool made or proposes: the file, its text before (None: a new file) and after."""

    path: str
    old_text: str | None
    new_text: str


@fast_value
class ToolCallUpdated:
    """What the agent says of a tool call it announced, after the ToolCall.

    ``status`` is the call's state as the agent names it (``pending``, ``in_progress``,
    ``completed``, ``failed``); ``tool``, ``args`` and ``kind`` are the call as it now stands
    (refined titles, inputs and kinds included); ``locations`` the files it touches
    (``path`` or ``path:line``); ``diffs`` the edits it made or proposes. A call's end is
    still its ToolResult.
    """

    tool_id: str | None
    tool: str
    status: str = ""
    args: Mapping[str, Any] | str | None = None
    kind: ToolKind = ToolKind.OTHER
    locations: tuple[str, ...] = ()
    diffs: tuple[FileDiff, ...] = ()


@fast_value
class AgentContent:
    """Content the agent sent that is not text: an image, audio, a resource or a link to one.

    ``content_type`` is the protocol's (``image``, ``audio``, ``resource``,
    ``resource_link``); ``text`` is an embedded resource's text (empty otherwise);
    ``thought`` is True for content of the agent's reasoning rather than its answer. It is
    never part of the answer text.
    """

    content_type: str
    mime_type: str = ""
    uri: str = ""
    text: str = ""
    thought: bool = False


@fast_value
class ModeChanged:
    """The session is now in mode ``mode_id`` (the agent's own mode ids, such as ``plan``)."""

    mode_id: str


@fast_value
class ConfigOption:
    """One of the session's settings: its id, name, category, current value and choices.

    ``value`` is a select's value id or ``"true"`` / ``"false"`` for a boolean; ``choices``
    are a select's value ids (empty for a boolean).
    """

    option_id: str
    name: str
    category: str = ""
    value: str = ""
    choices: tuple[str, ...] = ()


@fast_value
class ConfigOptionsChanged:
    """The session's settings as they now stand, every one of them."""

    options: tuple[ConfigOption, ...]


@fast_value
class CommandsAvailable:
    """The commands the agent now offers (slash commands), by name."""

    commands: tuple[str, ...]


@fast_value
class HistoryReplayed:
    """A message of a reopened conversation's history, as the agent replayed it.

    Reported by the turn that reopened the conversation, before its own events; ``role`` is
    ``user``, ``assistant``, ``thought`` or ``tool`` (a tool call's title). Never part of the
    answer text.
    """

    role: str
    text: str


AgentEvent = (
    RunStarted
    | RunFinished
    | SessionStarted
    | AssistantText
    | Reasoning
    | ToolCall
    | ToolResult
    | Plan
    | UsageReport
    | Lifecycle
    | Stderr
    | RawOutput
    | ProviderErrorReported
    | TurnInterrupted
    | SessionTitle
    | BackgroundTasksChanged
    | ApprovalRequested
    | ApprovalAnswered
    | ToolCallUpdated
    | AgentContent
    | ModeChanged
    | ConfigOptionsChanged
    | CommandsAvailable
    | HistoryReplayed
)
"""Every event a turn can emit."""


@runtime_checkable
class AgentEventHandler(Protocol):
    """Receives the events of a turn, on the thread that called ``turn()``."""

    def on_event(self, event: AgentEvent) -> None:
        """Handle one event; raising fails the turn being watched."""
        ...


Emit = Callable[[AgentEvent], None]
"""Where a turn's events go: called once per event, in order, on the thread that runs the turn."""

EventSink = AgentEventHandler | Emit
"""What every door that takes an event handler accepts: an object with ``on_event(event)``,
or a plain function of one event."""


def event_callback(field: str, handler: object) -> Emit:
    """The function to call with each event: ``handler.on_event``, or ``handler`` itself.

    Raises:
        InvalidRequestError: ``handler`` (passed as ``field``) is neither an
            AgentEventHandler nor a callable.
    """
    on_event: object = getattr(handler, "on_event", None)
    if callable(on_event):
        return cast("Emit", on_event)
    if callable(handler):
        return cast("Emit", handler)
    raise InvalidRequestError(
        field,
        f"{handler!r:.200} is neither callable nor has an on_event(event) method",
        f"{field} must be an AgentEventHandler (an object with on_event(event)) or a "
        f"function of one event, not {handler!r:.200}",
    )


def event_callbacks(owner: str, field: str, handlers: object) -> tuple[Emit, ...]:
    """The functions to call with each event, for a door's ``event_handlers``.

    ``handlers`` is a sequence of handlers, or a single one (an AgentEventHandler or a plain
    function of one event); each becomes what :func:`event_callback` makes of it.

    Raises:
        InvalidRequestError: ``handlers`` is neither a handler nor a sequence of them (None
            included), or one of them is not a handler.
    """
    if callable(handlers) or callable(getattr(handlers, "on_event", None)):
        return (event_callback(field, handlers),)
    each = sequence(owner, field, handlers, "event handlers (AgentEventHandler or functions)")
    return tuple(event_callback(field, handler) for handler in each)


class EventHandlerBase:
    """A handler that ignores everything; subclass and override ``on_event``."""

    def on_event(self, event: AgentEvent) -> None:
        """Ignore ``event``."""


class NullEventHandler(EventHandlerBase):
    """A handler that ignores every event."""


class CallbackEventHandler:
    """Adapts a plain callable to the handler protocol."""

    def __init__(self, callback: Emit) -> None:
        self._callback = callback

    def on_event(self, event: AgentEvent) -> None:
        """Call the callback with ``event``."""
        self._callback(event)


class CompositeEventHandler:
    """Fans each event out to several handlers, in order."""

    def __init__(self, handlers: Iterable[AgentEventHandler]) -> None:
        self.handlers: tuple[AgentEventHandler, ...] = tuple(handlers)

    def on_event(self, event: AgentEvent) -> None:
        """Pass ``event`` to every handler in order; the first that raises stops the fan-out."""
        for handler in self.handlers:
            handler.on_event(event)


_RESET = "\033[0m"
_STYLES = {"dim": "\033[2m", "bold": "\033[1m", "red": "\033[31m", "cyan": "\033[36m"}

# Control characters in what an agent or a tool printed would drive the terminal (move the
# cursor, retitle the window, clear the screen); they are shown escaped instead.
_C0_C1_CONTROLS = (*range(0x20), 0x7F, *range(0x80, 0xA0))
# Bidirectional embeddings, overrides, isolates and marks reorder the text shown around them,
# so a line can read differently from what it holds (a command that looks harmless).
_BIDI_CONTROLS = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))
_ESCAPED_CONTROLS = MappingProxyType(
    {
        **{code: f"\\x{code:02x}" for code in _C0_C1_CONTROLS if code not in (0x09, 0x0A)},
        **{code: f"\\u{code:04x}" for code in _BIDI_CONTROLS},
    }
)


def _printable(text: str) -> str:
    return text.translate(_ESCAPED_CONTROLS)


@dataclass
class ConsoleEventHandler:
    r"""Renders events readably to a text stream; colour only on a TTY without ``NO_COLOR``.

    Tool output is cut to ``max_tool_output_lines`` lines of at most ``max_line_chars``
    characters each; streamed assistant text is written as it arrives. Control characters in
    anything the agent or its tools printed are shown escaped (as ``\x1b``), never sent to the
    terminal; so are the bidirectional overrides, isolates and marks (as ``\u202e``), which
    would make a line read differently from what it holds.
    """

    stream: TextIO = field(default_factory=lambda: sys.stdout)
    max_tool_output_lines: int = 8
    max_line_chars: int = 200
    show_reasoning: bool = True
    color: bool | None = None
    _mid_line: bool = field(default=False, init=False, repr=False)

    def _paint(self, text: str, style: str) -> str:
        color = self.color
        if color is None:
            isatty = getattr(self.stream, "isatty", None)
            color = bool(isatty()) and not os.environ.get("NO_COLOR") if callable(isatty) else False
        return f"{_STYLES[style]}{text}{_RESET}" if color else text

    def _write(self, text: str) -> None:
        self.end_line()
        self.stream.write(text + "\n")
        self.stream.flush()

    def end_line(self) -> None:
        """End a line of streamed text left open, so what the caller writes next starts afresh."""
        if self._mid_line:
            self.stream.write("\n")
            self.stream.flush()
            self._mid_line = False

    def on_event(self, event: AgentEvent) -> None:
        """Write one readable line (or a few) for ``event``; streamed text is written inline."""
        if isinstance(event, AssistantText):
            if event.delta:
                self.stream.write(_printable(event.text))
                self.stream.flush()
                self._mid_line = not event.text.endswith("\n")
            else:
                self._write(_printable(event.text))
        elif isinstance(event, Reasoning):
            if self.show_reasoning:
                self._write(self._paint(f"(thinking) {_printable(event.text)}", "dim"))
        elif isinstance(event, ToolCall):
            call = _printable(f"> {event.tool} {_render_args(event.args)}")
            self._write(self._paint(call, "cyan"))
        elif isinstance(event, ToolResult):
            self._render_tool_result(event)
        elif isinstance(event, UsageReport):
            # A call's counts are partial (the turn's report has the totals): one line a turn.
            if event.scope is UsageScope.TURN:
                self._write(self._paint(_render_usage(event), "dim"))
        elif isinstance(event, ProviderErrorReported):
            self._write(self._paint(f"error: {_printable(event.message)}", "red"))
        elif isinstance(event, Plan):
            for item in event.items:
                mark = {"completed": "x", "in_progress": "~"}.get(item.status, " ")
                self._write(f"  [{mark}] {_printable(item.text)}")
        elif isinstance(event, SessionStarted):
            self._write(self._paint(f"session {_printable(event.session_id)}", "dim"))
        elif isinstance(event, TurnInterrupted):
            reason = _printable(event.reason)
            said = reason if reason.startswith("interrupted") else f"interrupted: {reason}"
            self._write(self._paint(said, "red"))

    def _render_tool_result(self, event: ToolResult) -> None:
        body = event.stderr if event.failed else event.stdout
        lines = body.splitlines()
        shown = _truncate_lines(lines, self.max_tool_output_lines)
        status = f"exit {event.exit_code}" if event.exit_code is not None else "done"
        style = "red" if event.failed else "dim"
        self._write(self._paint(_printable(f"  {event.tool}: {status}"), style))
        limit = self.max_line_chars
        for line in shown:
            if len(line) > limit:
                line = f"{line[:limit]}... ({len(line) - limit} more characters)"
            self._write(f"  | {_printable(line)}")


def _truncate_lines(lines: Sequence[str], limit: int) -> list[str]:
    if len(lines) <= limit:
        return list(lines)
    return [*lines[:limit], f"... ({len(lines) - limit} more lines)"]


def _render_args(args: Mapping[str, Any] | str | None) -> str:
    if args is None:
        return ""
    if isinstance(args, str):
        text = args
    elif "command" in args and isinstance(args["command"], str):
        text = str(args["command"])
    else:
        text = ", ".join(f"{k}={v!r}" for k, v in args.items())
    return text if len(text) <= 200 else text[:197] + "..."


def _render_usage(event: UsageReport) -> str:
    tokens = event.usage.tokens
    cost = event.cost_usd if event.cost_usd is not None else event.usage.total_cost_usd
    cost_text = f", ${cost:.4f}" if cost is not None else ""
    known = "" if event.usage.increment_known else " (increment unknown)"
    return (
        f"usage: {tokens.input_tokens} in ({tokens.cache_read_input_tokens} cached), "
        f"{tokens.output_tokens} out{cost_text}{known}"
    )
