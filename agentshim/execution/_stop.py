"""Ending a child's process group from any thread: SIGTERM, then SIGKILL after a grace."""

from __future__ import annotations

import threading
import time

from ._child import ChildProcess
from ._streams import Streams

__all__ = ["GroupStop", "sooner"]


class GroupStop:
    """Stops one child's process group; ``terminate`` and ``kill`` are safe from any thread.

    ``terminate`` sends SIGTERM once and sets ``kill_at``, the monotonic time after which the
    loop reading the child's output sends SIGKILL if the group is still there; ``kill`` sends
    SIGKILL now. Both wake that loop's poll and mark the child :attr:`stopped`.
    """

    __slots__ = ("_child", "_grace", "_lock", "_stopped", "_streams", "kill_at")

    def __init__(self, child: ChildProcess, streams: Streams, grace: float) -> None:
        self._child = child
        self._streams = streams
        self._grace = grace
        self._lock = threading.Lock()
        self._stopped = False
        self.kill_at: float | None = None
        """When the reading loop escalates a terminate to SIGKILL (monotonic time)."""

    @property
    def stopped(self) -> bool:
        """Whether ``terminate()`` or ``kill()`` was called."""
        return self._stopped

    def terminate(self) -> None:
        """Send SIGTERM to the group (the first call only) and set :attr:`kill_at`."""
        with self._lock:
            if self._stopped:
                return
            self._stopped = True
            self.kill_at = time.monotonic() + self._grace
        self._child.terminate_group()
        self._streams.wake()

    def kill(self) -> None:
        """Send SIGKILL to the group now."""
        self._stopped = True
        self._child.kill_group()
        self._streams.wake()


def sooner(wait: float | None, other: float) -> float:
    """The shorter of two waits in seconds; ``wait`` None (no limit) yields ``other``."""
    return other if wait is None or other < wait else wait
