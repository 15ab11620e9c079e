"""The bounded crossing of a turn's events from its worker thread to the event loop.

The worker thread calls :meth:`EventPipe.put` for every event; the loop awaits
:meth:`EventPipe.get`. At most ``capacity`` events wait for the consumer: a worker that gets
ahead of it blocks on a condition until the consumer takes one, so a slow consumer slows the
turn and memory never grows without limit. The loop is woken with
``loop.call_soon_threadsafe``, once per batch: while a wake-up is on its way, further events
join the batch without another one, so a fast turn costs the loop one callback per batch
rather than one per event. The loop never blocks on the worker (it holds the condition's
lock only to move one item). The end of the turn is delivered outside the bound, after
every event put before it.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from dataclasses import dataclass
from typing import Generic, TypeVar

__all__ = ["DEFAULT_CAPACITY", "EventPipe", "PipeEnd"]

DEFAULT_CAPACITY = 256
"""How many events may wait for the consumer before the turn's thread waits for it."""

_FAIR_SHARE = 32
"""How many waiting events a consumer takes before it lets the loop run other tasks."""

T = TypeVar("T")
R = TypeVar("R")


@dataclass(frozen=True, slots=True)
class PipeEnd(Generic[R]):
    """The last item of a pipe: what the worker's call returned, or what it raised."""

    value: R | None
    error: BaseException | None


class EventPipe(Generic[T, R]):
    """One turn's events, from one worker thread to the loop that created the pipe.

    Create it on the loop. ``put`` and ``finish`` belong to the worker thread, ``get`` and
    ``drop`` to the loop.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop, capacity: int = DEFAULT_CAPACITY) -> None:
        self._loop = loop
        self._capacity = capacity
        self._room = threading.Condition()
        self._items: deque[T] = deque()
        self._end: PipeEnd[R] | None = None
        self._dropping = False
        # True while a wake-up is queued on the loop: it will see whatever is added meanwhile.
        self._wake_queued = False
        self._waiter: asyncio.Future[None] | None = None
        self._streak = 0

    def put(self, item: T) -> None:
        """Hand ``item`` to the loop; blocks while ``capacity`` items wait for the consumer.

        After :meth:`drop` it returns at once and the item is discarded.
        """
        with self._room:
            while len(self._items) >= self._capacity and not self._dropping:
                self._room.wait()
            if self._dropping:
                return
            self._items.append(item)
            wake = self._queue_wake()
        if wake:
            self._send_wake()

    def finish(self, value: R | None, error: BaseException | None) -> None:
        """Deliver the end of the turn; never blocks, and reaches the loop after every event."""
        with self._room:
            self._end = PipeEnd(value, error)
            wake = self._queue_wake()
        if wake:
            self._send_wake()

    async def get(self) -> T | PipeEnd[R]:
        """The next event, or the :class:`PipeEnd` after the last one."""
        self._streak += 1
        if self._streak > _FAIR_SHARE:
            # Events waiting mean get() never suspends: without this a busy turn's consumer
            # would keep the loop from every other task for as long as its turn kept up.
            self._streak = 0
            await asyncio.sleep(0)
        while True:
            with self._room:
                if self._items:
                    item = self._items.popleft()
                    self._room.notify()
                    return item
                if self._end is not None:
                    return self._end
                waiter = self._loop.create_future()
                self._waiter = waiter
            self._streak = 0
            await waiter

    def drop(self) -> None:
        """Stop carrying events: the consumer is gone; the worker never waits for room again."""
        with self._room:
            self._dropping = True
            self._items.clear()
            self._room.notify_all()

    def _queue_wake(self) -> bool:
        """Whether the caller must send a wake-up; the caller holds the lock."""
        if self._wake_queued:
            return False
        self._wake_queued = True
        return True

    def _send_wake(self) -> None:
        try:
            self._loop.call_soon_threadsafe(self._wake)
        except RuntimeError:
            # The loop was closed under a running turn: nobody is left to read what it says.
            with self._room:
                self._dropping = True
                self._room.notify_all()

    def _wake(self) -> None:
        with self._room:
            self._wake_queued = False
            waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            waiter.set_result(None)
