"""JsonlStreamParser: reads a harness's stdout, one stored event a line.

Frames and what they become: an object whose ``type`` is in the vocabulary
(:data:`agentshim.core.event_json.EVENT_TYPES`) is that event, decoded by
:func:`agentshim.core.event_json.event_from_json` (``"v"`` may be left out); any other line,
an object of another type included, is RawOutput with the line. A ``message`` is the answer,
``session.started`` names the conversation, ``usage`` reports tokens and cost, a fatal
``error`` fails the turn. The harness's own ``run.*`` events are passed on like the others.
"""

from __future__ import annotations

from dataclasses import replace

from agentshim.core.event_json import event_from_json
from agentshim.core.events import (
    AgentEvent,
    AssistantText,
    BackgroundTask,
    BackgroundTasksChanged,
    Emit,
    ProviderErrorReported,
    RawOutput,
    SessionStarted,
    ToolCall,
    ToolKind,
    UsageReport,
    UsageScope,
)
from agentshim.core.frames import Frame, FrameParser
from agentshim.core.turn import ParsedTurn
from agentshim.core.usage import ProviderUsage

from .events import tool_kind
from .failures import classify

__all__ = ["PROVIDER_NAME", "JsonlStreamParser"]

PROVIDER_NAME = "jsonl"


class JsonlStreamParser(FrameParser):
    """Turns a harness's JSONL into the events it names and a ParsedTurn.

    Never raises on input. The answer is the assistant messages joined (the pieces of a
    streamed one, ``delta: true``, joined without a separator); usage is the turn reports'
    sum, or the calls' when the harness reports only per call; a fatal ``error`` event
    fails the turn with its message.
    """

    def __init__(self, emit: Emit) -> None:
        """Parse one turn, sending events to ``emit``."""
        self._session_id: str | None = None
        self._texts: list[str] = []
        self._turn_usage: ProviderUsage | None = None
        self._call_usage: ProviderUsage | None = None
        self._context_tokens: int | None = None
        self._cost: float | None = None
        self._error: str | None = None
        self._background: tuple[BackgroundTask, ...] = ()
        handlers = {
            "message": self._on_message,
            "session.started": self._on_session_started,
            "usage": self._on_usage,
            "error": self._on_error,
            "tool.call": self._on_tool_call,
            "session.background": self._on_session_background,
            "session.title": self._on_session,
            "thinking": self._on_thinking,
            "tool.result": self._on_tool,
            "plan": self._on_plan,
            "lifecycle": self._on_lifecycle,
            "raw": self._on_raw,
            "stderr": self._on_stderr,
            "run.started": self._on_run,
            "run.finished": self._on_run,
            "turn.interrupted": self._on_turn,
            "approval.requested": self._on_approval,
            "approval.answered": self._on_approval,
        }
        super().__init__(handlers, emit)

    def unknown_frame(self, frame: Frame, line: str) -> AgentEvent:
        """An object whose type is not in the vocabulary: RawOutput with its line."""
        text = line.rstrip("\r\n")
        return RawOutput(text) if text else event_from_json(frame)

    # -- frame handlers ------------------------------------------------------------------------

    def _on_event(self, frame: Frame, out: list[AgentEvent]) -> None:
        """Pass an event the turn's summary does not need on as it is."""
        out.append(event_from_json(frame))

    _on_session = _on_thinking = _on_tool = _on_plan = _on_event
    _on_lifecycle = _on_raw = _on_stderr = _on_run = _on_turn = _on_approval = _on_event

    def _on_message(self, frame: Frame, out: list[AgentEvent]) -> None:
        event = event_from_json(frame)
        if isinstance(event, AssistantText):
            if event.delta and self._texts:
                self._texts[-1] += event.text
            else:
                self._texts.append(event.text)
        out.append(event)

    def _on_session_started(self, frame: Frame, out: list[AgentEvent]) -> None:
        event = event_from_json(frame)
        if isinstance(event, SessionStarted):
            if event.session_id == self._session_id:
                return
            self._session_id = event.session_id
        out.append(event)

    def _on_usage(self, frame: Frame, out: list[AgentEvent]) -> None:
        event = event_from_json(frame)
        if isinstance(event, UsageReport):
            usage = replace(event.usage, provider=event.usage.provider or PROVIDER_NAME)
            event = replace(event, usage=usage)
            if event.scope is UsageScope.CALL:
                self._call_usage = _sum(self._call_usage, usage)
                self._context_tokens = usage.tokens.input_tokens
            else:
                self._turn_usage = _sum(self._turn_usage, usage)
        out.append(event)

    def _on_error(self, frame: Frame, out: list[AgentEvent]) -> None:
        event = event_from_json(frame)
        if isinstance(event, ProviderErrorReported) and event.fatal:
            self._error = event.message
        out.append(event)

    def _on_tool_call(self, frame: Frame, out: list[AgentEvent]) -> None:
        event = event_from_json(frame)
        if isinstance(event, ToolCall) and event.kind is ToolKind.OTHER:
            event = replace(event, kind=tool_kind(event.tool))
        out.append(event)

    def _on_session_background(self, frame: Frame, out: list[AgentEvent]) -> None:
        event = event_from_json(frame)
        if isinstance(event, BackgroundTasksChanged):
            self._background = event.tasks
        out.append(event)

    # -- the StreamParser protocol -------------------------------------------------------------

    def finish(self) -> ParsedTurn:
        """Summarize the turn: its answer, session, usage and, when it failed, why."""
        usage = self._turn_usage or self._call_usage
        error = self._error
        return ParsedTurn(
            text="\n".join(self._texts),
            session_id=self._session_id,
            usage=usage,
            cost_usd=usage.total_cost_usd if usage is not None else None,
            error=error,
            error_kind=classify(error) if error is not None else None,
            context_tokens=self._context_tokens,
            background_tasks=self._background,
        )


def _sum(total: ProviderUsage | None, usage: ProviderUsage) -> ProviderUsage:
    return usage if total is None else total + usage
