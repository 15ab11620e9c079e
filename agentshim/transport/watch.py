"""The clock of one turn on a long-lived process: its budget, its stall window, its interrupt.

Pure: it is told the time and what happened, and answers when the turn's reader must wake
next and what is due then. The transport reads with ``deadline()`` as its timeout, so there
is no polling interval: a read returns on output, on a wake from another thread, or when
the next thing is due.
"""

from __future__ import annotations

import enum

__all__ = ["Due", "TurnWatch"]


class Due(enum.Enum):
    """What the reader must act on when a read returns with nothing."""

    TIMEOUT = "timeout"
    """The turn's budget is spent: interrupt it."""
    STALL = "stall"
    """The CLI has been silent for ``stall_timeout``: interrupt it."""
    KILL = "kill"
    """An interrupt got no answer within its grace: stop the process."""


class TurnWatch:
    """Deadlines of one turn, from ``started`` (seconds on the transport's clock).

    ``timeout`` is the turn's budget and ``stall_timeout`` the longest silence allowed (None:
    no limit). After :meth:`interrupted`, neither is due again; the interrupt's ``grace``
    runs instead, and :class:`Due.KILL` comes when it is over.
    """

    __slots__ = (
        "_budget_end",
        "_kill_at",
        "_last_heard",
        "_stall",
        "reason",
        "stalled_for",
        "timeout",
    )

    def __init__(
        self, started: float, *, timeout: float | None, stall_timeout: float | None
    ) -> None:
        self.timeout = timeout
        """The turn's budget in seconds (None: no limit)."""
        self._budget_end = None if timeout is None else started + timeout
        self._stall = stall_timeout
        self._last_heard = started
        self._kill_at: float | None = None
        self.reason: Due | None = None
        """What made the transport interrupt the turn itself, if it did."""
        self.stalled_for: float | None = None
        """How long the CLI had been silent when a stall interrupted the turn."""

    def heard(self, now: float) -> None:
        """The CLI printed something at ``now``."""
        self._last_heard = now

    def silent_for(self, now: float) -> float:
        """How long the CLI has said nothing, at ``now``."""
        return now - self._last_heard

    def interrupted(self, now: float, grace: float, reason: Due | None = None) -> None:
        """An interrupt went out at ``now`` (for ``reason``, when the watch itself asked)."""
        if self._kill_at is None:
            self._kill_at = now + grace
        if reason is not None and self.reason is None:
            self.reason = reason
            if reason is Due.STALL:
                # Kept now: the interrupt's own answer ends the silence it is about.
                self.stalled_for = now - self._last_heard

    def deadline(self) -> float | None:
        """When the reader must wake next, or None when nothing is due ever."""
        if self._kill_at is not None:
            return self._kill_at
        stall_end = None if self._stall is None else self._last_heard + self._stall
        if stall_end is None:
            return self._budget_end
        if self._budget_end is None:
            return stall_end
        return min(stall_end, self._budget_end)

    def due(self, now: float) -> Due | None:
        """What is due at ``now``: the budget, the stall, the kill; or nothing yet."""
        if self._kill_at is not None:
            return Due.KILL if now >= self._kill_at else None
        if self._budget_end is not None and now >= self._budget_end:
            return Due.TIMEOUT
        # The same sum as deadline(): "now - heard >= stall" can round the other way, and a
        # reader woken at the deadline would find nothing due and spin until it does.
        if self._stall is not None and now >= self._last_heard + self._stall:
            return Due.STALL
        return None
