"""RecordingEventHandler: keeps every event a turn emitted, for assertions."""

from __future__ import annotations

from typing import TypeVar

from agentshim.core.events import AgentEvent

__all__ = ["RecordingEventHandler"]

EventT = TypeVar("EventT")


class RecordingEventHandler:
    """Records events in order; ``of_type`` filters them by class."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []

    def on_event(self, event: AgentEvent) -> None:
        """Append ``event`` to ``events``."""
        self.events.append(event)

    def of_type(self, kind: type[EventT]) -> list[EventT]:
        """Return the recorded events that are instances of ``kind``, in order."""
        return [e for e in self.events if isinstance(e, kind)]

    def clear(self) -> None:
        """Forget everything recorded so far."""
        self.events.clear()
