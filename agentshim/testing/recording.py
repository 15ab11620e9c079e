"""RecordingEventHandler: keeps every event a turn emitted, for assertions."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from typing import TypeVar

from agentshim.core.events import AgentEvent, AssistantText, Lifecycle, ToolCall

__all__ = ["RecordingEventHandler"]

EventT = TypeVar("EventT")


class RecordingEventHandler:
    """Records events in order, and the threads they arrived on.

    Pass it where an event handler or a plain ``emit`` function is taken (it is callable);
    ``of_type`` filters the events by class, ``lifecycle`` reads the plumbing events of one
    kind, ``texts`` and ``tool_calls`` what the agent said and did.
    """

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []
        self.threads: set[int] = set()

    def on_event(self, event: AgentEvent) -> None:
        """Append ``event`` to ``events`` and note the thread it arrived on."""
        self.events.append(event)
        self.threads.add(threading.get_ident())

    def __call__(self, event: AgentEvent) -> None:
        """The same as :meth:`on_event`, for a caller that takes a function."""
        self.on_event(event)

    def __iter__(self) -> Iterator[AgentEvent]:
        """The recorded events, in order."""
        return iter(self.events)

    def __len__(self) -> int:
        """How many events were recorded."""
        return len(self.events)

    def of_type(self, kind: type[EventT]) -> list[EventT]:
        """Return the recorded events that are instances of ``kind``, in order."""
        return [e for e in self.events if isinstance(e, kind)]

    def lifecycle(self, kind: str) -> list[str]:
        """The ``detail`` of every recorded :class:`Lifecycle` event of ``kind``, in order."""
        return [e.detail for e in self.of_type(Lifecycle) if e.kind == kind]

    def lifecycle_kinds(self) -> list[str]:
        """The ``kind`` of every recorded :class:`Lifecycle` event, in order."""
        return [e.kind for e in self.of_type(Lifecycle)]

    def texts(self) -> list[str]:
        """The text of every recorded :class:`AssistantText`, in order."""
        return [e.text for e in self.of_type(AssistantText)]

    def tool_calls(self) -> list[ToolCall]:
        """Every recorded :class:`ToolCall`, in order."""
        return self.of_type(ToolCall)

    def clear(self) -> None:
        """Forget everything recorded so far."""
        self.events.clear()
        self.threads.clear()
