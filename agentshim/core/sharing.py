"""ProcessSharing: how a long-lived transport's conversations share CLI processes.

A value, cheap to import: ``Agent(share_processes=ProcessSharing(...))`` takes it, and
:mod:`agentshim.transport.shared` does the sharing. See ``docs/sessions.md``.
"""

from __future__ import annotations

from dataclasses import dataclass

from agentshim.core.errors import InvalidRequestError

__all__ = ["ProcessSharing"]


@dataclass(frozen=True, slots=True)
class ProcessSharing:
    """How a long-lived transport shares CLI processes between its conversations.

    Attributes:
        max_processes: At most this many processes per distinct process-wide configuration
            (argv and environment). A new conversation joins the running process with the
            fewest conversations; another process starts only while there are fewer than this
            and each running one already serves a conversation.
        recycle_after: A process that has taken this many conversations takes no more; it
            ends once they have all left (None: never recycled).

    Raises:
        InvalidRequestError: ``max_processes`` or ``recycle_after`` is below 1.
    """

    max_processes: int = 1
    recycle_after: int | None = 200

    def __post_init__(self) -> None:
        if type(self.max_processes) is not int or self.max_processes < 1:
            raise InvalidRequestError(
                "max_processes", f"{self.max_processes!r} is not an integer of 1 or more"
            )
        recycle = self.recycle_after
        if recycle is not None and (type(recycle) is not int or recycle < 1):
            raise InvalidRequestError(
                "recycle_after", f"{recycle!r} is not an integer of 1 or more, nor None"
            )
