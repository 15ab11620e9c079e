"""Channel: one long-lived CLI process, written through the one encoder and read on demand.

The thread that runs a turn reads (``read`` blocks until output, the deadline, or a
``wake`` from another thread); any thread may ``send``, since one write is never interleaved
with another. Closing is orderly first: end of stdin, then SIGTERM, then SIGKILL, each after
its grace, so nothing the CLI started outlives the conversation. A channel given a
``side`` (a conversation's tools, :class:`~agentshim.execution.executor.SideChannel`) serves it
from ``read``, on the reading thread: the process waits on the side's descriptor next to its
pipes (``watch``), so the reader wakes when a tool call comes and at no other time. Only a
process that cannot wait on it (a test double) has the side looked at every ``SIDE_POLL``
seconds instead.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentshim.core.clock import Monotonic
from agentshim.execution.executor import SideChannel
from agentshim.execution.process import Process, ProcessExited, ProcessOutput, end_process

from .ndjson import encode_frame

__all__ = ["SIDE_POLL", "Channel"]

SIDE_POLL = 0.05
"""Seconds a read waits at most before it serves the side channel again, on a process that
cannot wait on the side's descriptor itself."""


class Channel:
    """A :class:`~agentshim.execution.process.Process` spoken to in JSON lines.

    ``argv`` is what started it (for errors and events); ``monotonic`` the monotonic clock its
    deadlines are read on.
    """

    __slots__ = ("_clock", "_exit", "_process", "_side", "_side_watched", "_woken", "argv")

    def __init__(
        self,
        process: Process,
        argv: Sequence[str],
        *,
        monotonic: Monotonic = time.monotonic,
        side: SideChannel | None = None,
    ) -> None:
        self._process = process
        self._clock = monotonic
        self._side = side
        self._woken = threading.Event()
        self._exit: ProcessExited | None = None
        self.argv = tuple(argv)
        watch: Callable[[int], bool] | None = getattr(process, "watch", None)
        self._side_watched = side is not None and watch is not None and watch(side.fileno())

    @property
    def exit(self) -> ProcessExited | None:
        """How the process ended, once a read has returned its exit."""
        return self._exit

    def ended(self) -> ProcessExited | None:
        """How the process ended, looked at now without blocking; None while it runs.

        Sees also a process that died while nobody read it (killed between turns); what it
        printed stays readable.
        """
        if self._exit is not None:
            return self._exit
        code = self._process.wait(0)
        return None if code is None else ProcessExited(code)

    def send(self, frame: Mapping[str, Any]) -> None:
        """Write ``frame`` as one JSON line; thread-safe.

        Raises:
            InvalidRequestError: the frame cannot be JSON (nothing is written).
            ProcessClosedError: stdin is closed or the process is gone.
        """
        self._process.write(encode_frame(frame))

    def read_until(self, deadline: float) -> ProcessOutput | None:
        """The next output, or None once ``deadline`` (on this clock) has passed.

        Unlike :meth:`read`, a ``wake`` does not end the wait.
        """
        while True:
            output = self.read(deadline)
            if output is not None or self._clock() >= deadline:
                return output

    def read(self, deadline: float | None) -> ProcessOutput | None:
        """The next output, or None at ``deadline`` (on this clock) or on a ``wake``."""
        if self._exit is not None:
            return self._exit
        if self._side is not None:
            output = self._read_serving(self._side, deadline)
        else:
            timeout = None if deadline is None else max(deadline - self._clock(), 0.0)
            output = self._process.next_output(timeout)
        if isinstance(output, ProcessExited):
            self._exit = output
        return output

    def _read_serving(self, side: SideChannel, deadline: float | None) -> ProcessOutput | None:
        """``read``, serving ``side`` whenever the wait ends with nothing to return.

        The wait ends when the side has work (the process watches its descriptor), or
        after SIDE_POLL seconds on a process that cannot.
        """
        while True:
            side.ready()
            timeout = None if self._side_watched else SIDE_POLL
            if deadline is not None:
                left = max(deadline - self._clock(), 0.0)
                timeout = left if timeout is None else min(timeout, left)
            output = self._process.next_output(timeout)
            if output is not None:
                return output
            if self._woken.is_set():
                self._woken.clear()
                return None
            if deadline is not None and self._clock() >= deadline:
                return None

    def wake(self) -> None:
        """End a ``read`` blocked on another thread now; thread-safe."""
        self._woken.set()
        self._process.wake()

    def kill(self, wait: float = 5.0) -> None:
        """Kill the process group now and wait up to ``wait`` seconds for it to be reaped."""
        self._process.kill()
        self._process.wait(wait)

    def close(self, grace: float) -> int | None:
        """End the process: stdin EOF, then SIGTERM, then SIGKILL, ``grace`` seconds apart.

        Returns its exit status (None if even SIGKILL could not be confirmed).
        """
        return end_process(self._process, grace)
