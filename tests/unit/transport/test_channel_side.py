"""A channel with a side channel serves it while it waits, and a wait keeps its meaning."""

from __future__ import annotations

import threading
import time

from agentshim.execution.process import ProcessOutput, StdoutLine
from agentshim.transport.channel import Channel


class _Quiet:
    """A process that prints ``lines`` after ``after`` seconds, and nothing else."""

    def __init__(self, after: float | None = None) -> None:
        self._woken = threading.Event()
        self._due = None if after is None else time.monotonic() + after

    def next_output(self, timeout: float | None) -> ProcessOutput | None:
        if self._due is not None and time.monotonic() >= self._due:
            self._due = None
            return StdoutLine("late\n")
        self._woken.wait(timeout)
        self._woken.clear()
        return None

    def wake(self) -> None:
        self._woken.set()


class _Side:
    def __init__(self) -> None:
        self.served = 0
        self.threads: set[int] = set()

    def fileno(self) -> int:
        return -1

    def ready(self) -> bool:
        self.served += 1
        self.threads.add(threading.get_ident())
        return False


def test_a_read_waits_for_its_deadline_serving_the_side_on_the_reading_thread() -> None:
    side = _Side()
    channel = Channel(_Quiet(), ["cli"], side=side)  # type: ignore[arg-type]
    started = time.monotonic()
    assert channel.read(started + 0.4) is None
    assert time.monotonic() - started >= 0.39
    assert side.served >= 5  # at least every 50 ms
    assert side.threads == {threading.get_ident()}


def test_output_still_comes_through_and_a_wake_still_ends_the_wait() -> None:
    side = _Side()
    channel = Channel(_Quiet(after=0.1), ["cli"], side=side)  # type: ignore[arg-type]
    assert channel.read(time.monotonic() + 5) == StdoutLine("late\n")
    timer = threading.Timer(0.1, channel.wake)
    timer.start()
    started = time.monotonic()
    assert channel.read(None) is None
    assert time.monotonic() - started < 2
    timer.join()
