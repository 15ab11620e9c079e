"""FrameRouter: one process's output shared by several sessions, read by whoever waits.

A CLI that serves several conversations from one process (Codex app-server threads, ACP
sessions) tags each frame with the conversation it belongs to. The router gives every
session a :class:`Mailbox` and reads the process on the thread of a session that is waiting:
there is no reader thread of its own and no polling.

How a wait works. A session waits for its next frame until a deadline. If its mailbox holds a
frame, it gets it at once. Otherwise, if no other session is reading the process, it becomes
the reader: it reads the process (blocking, with its own deadline as the timeout), and
delivers every output to the mailbox its ``route`` names, in the order read, waking every
waiting session, until a frame for itself arrives, it is woken, or its deadline passes; then
it gives up reading and the next waiting session takes over. A session that waits while
another reads sleeps on the router's condition until a frame is delivered to it, it is
woken, its deadline passes, or the reading is free. So:

- each session's frames reach it alone and in the order the process wrote them (mailboxes
  are FIFO, and outputs are routed one at a time, in the order read);
- frames for a session nobody waits on are kept for it, in order, until it next waits;
- one chatty session cannot starve another: a frame is delivered the moment it is read,
  whoever reads it, so a session waits only for the output written before its own frame;
  the reader stops reading as soon as its own frame is there, and never needs any other
  session to consume its frames;
- a wait ends on its own frame, its own wake (:meth:`FrameRouter.wake`) or its own deadline;
  the end of the process reaches every session (after the frames already delivered to it).

An output no route claims (a process-wide notice, stderr) goes to ``unrouted``.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Hashable

from agentshim.core.clock import Monotonic
from agentshim.core.errors import AgentShimError
from agentshim.execution.process import Process, ProcessExited, ProcessOutput

__all__ = ["FrameRouter", "Mailbox"]


class Mailbox:
    """One session's frames from a shared process, in the order the process wrote them.

    Made by :meth:`FrameRouter.open`; read only through :meth:`FrameRouter.wait`.
    """

    __slots__ = ("_frames", "_open", "_woken")

    def __init__(self) -> None:
        self._frames: deque[ProcessOutput] = deque()
        self._woken = False
        self._open = True

    def __len__(self) -> int:
        return len(self._frames)


class FrameRouter:
    """Routes the output of ``process`` to its sessions' mailboxes (see the module docstring).

    ``route`` names the routing key of one output (None: no session's); a key is made a
    session's with :meth:`bind`. ``unrouted`` receives every output no bound key claims.
    ``monotonic`` is the monotonic clock deadlines are read on. Every method is thread-safe.
    """

    def __init__(
        self,
        process: Process,
        route: Callable[[ProcessOutput], Hashable | None],
        *,
        unrouted: Callable[[ProcessOutput], None] | None = None,
        monotonic: Monotonic = time.monotonic,
    ) -> None:
        self._process = process
        self._route = route
        self._unrouted = unrouted
        self._clock = monotonic
        self._changed = threading.Condition(threading.Lock())
        self._bound: dict[Hashable, Mailbox] = {}
        self._reader: Mailbox | None = None
        self._exit: ProcessExited | None = None

    @property
    def exit(self) -> ProcessExited | None:
        """How the process ended, once a wait has read its end."""
        return self._exit

    def open(self) -> Mailbox:
        """A new, empty mailbox for one session."""
        return Mailbox()

    def bind(self, key: Hashable, mailbox: Mailbox) -> None:
        """Deliver the outputs routed to ``key`` to ``mailbox`` from now on."""
        with self._changed:
            if mailbox._open:  # pyright: ignore[reportPrivateUsage]
                self._bound[key] = mailbox

    def unbind(self, key: Hashable) -> None:
        """Stop delivering outputs routed to ``key`` (they go to ``unrouted``)."""
        with self._changed:
            self._bound.pop(key, None)

    def close(self, mailbox: Mailbox) -> None:
        """Forget ``mailbox``: its keys, and the frames it still held."""
        with self._changed:
            mailbox._open = False  # pyright: ignore[reportPrivateUsage]
            mailbox._frames.clear()  # pyright: ignore[reportPrivateUsage]
            for key in [key for key, box in self._bound.items() if box is mailbox]:
                del self._bound[key]
            self._wake_locked(mailbox)

    def wake(self, mailbox: Mailbox) -> None:
        """End ``mailbox``'s wait now (or its next one, when it is not waiting)."""
        with self._changed:
            self._wake_locked(mailbox)

    def _wake_locked(self, mailbox: Mailbox) -> None:
        mailbox._woken = True  # pyright: ignore[reportPrivateUsage]
        self._changed.notify_all()
        if self._reader is mailbox:
            self._process.wake()

    def wait(
        self,
        mailbox: Mailbox,
        deadline: float | None,
        *,
        serve: Callable[[], None] | None = None,
        serve_every: float = 0.05,
    ) -> ProcessOutput | None:
        """``mailbox``'s next output; None at ``deadline`` (on the clock) or on a wake.

        The process's exit comes once the frames delivered before it are taken, and then at
        every later wait. ``serve``, when given, runs at least every ``serve_every`` seconds
        while the wait lasts, on this thread (the session's tools).
        """
        frames = mailbox._frames  # pyright: ignore[reportPrivateUsage]
        with self._changed:
            while True:
                if frames:
                    return frames.popleft()
                if self._exit is not None:
                    return self._exit
                if mailbox._woken or not mailbox._open:  # pyright: ignore[reportPrivateUsage]
                    mailbox._woken = False  # pyright: ignore[reportPrivateUsage]
                    return None
                timeout = None if deadline is None else deadline - self._clock()
                if timeout is not None and timeout <= 0:
                    return None
                if serve is not None:
                    timeout = serve_every if timeout is None else min(timeout, serve_every)
                if self._reader is None:
                    self._reader = mailbox
                    self._changed.release()
                    try:
                        output = self._read(timeout, serve)
                    finally:
                        self._changed.acquire()
                        self._reader = None
                        self._changed.notify_all()  # the reading is free: another may take it
                    if output is not None:
                        self._deliver(output)
                else:
                    self._changed.wait(timeout)
                    if serve is not None:
                        self._changed.release()
                        try:
                            serve()
                        finally:
                            self._changed.acquire()

    def _read(
        self, timeout: float | None, serve: Callable[[], None] | None
    ) -> ProcessOutput | None:
        """One read of the process, outside the lock (only the reader gets here)."""
        if serve is not None:
            serve()
        try:
            return self._process.next_output(timeout)
        except AgentShimError:
            return None  # an output it could not deliver (a line over its limit) is dropped

    def _deliver(self, output: ProcessOutput) -> None:
        """Put ``output`` where it belongs (the lock held) and wake whoever waits for it."""
        if isinstance(output, ProcessExited):
            self._exit = output
        else:
            key = self._route(output)
            box = None if key is None else self._bound.get(key)
            if box is not None:
                box._frames.append(output)  # pyright: ignore[reportPrivateUsage]
            elif self._unrouted is not None:
                self._unrouted(output)
        self._changed.notify_all()
