"""A channel with a side channel serves it while it waits, and a wait keeps its meaning."""

from __future__ import annotations

import os
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.host_process import HostProcess
from agentshim.execution.process import ProcessOutput, SpawnRequest, StdoutLine
from agentshim.testing import FakeClock
from agentshim.transport.channel import SIDE_POLL, Channel


class _Quiet:
    """A process on a fake clock that prints one line ``after`` seconds, and nothing else.

    Its waits take no real time: they advance the clock (and are recorded there).
    """

    def __init__(self, clock: FakeClock, after: float | None = None) -> None:
        self._clock = clock
        self._due = None if after is None else clock.monotonic() + after

    def next_output(self, timeout: float | None) -> ProcessOutput | None:
        assert timeout is not None, "a wait with no end on a fake clock would never return"
        now = self._clock.monotonic()
        if self._due is not None and now + timeout >= self._due:
            self._clock.advance(self._due - now)
            self._due = None
            return StdoutLine("late\n")
        self._clock.wait(timeout)
        return None

    def wake(self) -> None:
        pass


class _Waiting:
    """A process that prints nothing and waits for real until it is woken."""

    def __init__(self) -> None:
        self._woken = threading.Event()
        self.waiting = threading.Event()

    def next_output(self, timeout: float | None) -> ProcessOutput | None:
        self.waiting.set()
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
    clock = FakeClock()
    side = _Side()
    channel = Channel(_Quiet(clock), ["cli"], side=side, monotonic=clock.monotonic)  # type: ignore[arg-type]
    assert channel.read(0.4) is None
    assert clock.monotonic() >= 0.4, "the read ended before its deadline"
    # The side is served before every wait, and no wait is longer than SIDE_POLL.
    assert clock.waits
    assert max(clock.waits) <= SIDE_POLL
    assert side.served == len(clock.waits) >= 0.4 / SIDE_POLL
    assert side.threads == {threading.get_ident()}


def test_output_still_comes_through_and_a_wake_still_ends_the_wait() -> None:
    clock = FakeClock()
    side = _Side()
    channel = Channel(_Quiet(clock, after=0.1), ["cli"], side=side, monotonic=clock.monotonic)  # type: ignore[arg-type]
    assert channel.read(5) == StdoutLine("late\n")
    assert clock.monotonic() < 5, "the line waited for the deadline"

    process = _Waiting()
    channel = Channel(process, ["cli"], side=_Side())  # type: ignore[arg-type]
    ended: list[ProcessOutput | None] = []
    # A read with no deadline on a process that prints nothing: only the wake can end it.
    reader = threading.Thread(target=lambda: ended.append(channel.read(None)))
    reader.start()
    assert process.waiting.wait(60), "the read never waited"
    channel.wake()
    reader.join(60)
    assert not reader.is_alive(), "the wake did not end the read"
    assert ended == [None]


class _PipeSide:
    """A side whose descriptor is readable while a byte waits on its pipe.

    ``on_work`` runs each time it is served some.
    """

    def __init__(self, on_work: Callable[[], None]) -> None:
        self.read_end, self.write_end = os.pipe()
        os.set_blocking(self.read_end, False)
        self.served: list[bytes] = []
        self.on_work = on_work

    def fileno(self) -> int:
        return self.read_end

    def ready(self) -> bool:
        try:
            data = os.read(self.read_end, 64)
        except BlockingIOError:
            return False
        self.served.append(data)
        self.on_work()
        return True

    def close(self) -> None:
        os.close(self.read_end)
        os.close(self.write_end)


class _Counting:
    """A process that counts how often its reader waits on it."""

    def __init__(self, process: HostProcess) -> None:
        self.process = process
        self.waits = 0

    def next_output(self, timeout: float | None) -> ProcessOutput | None:
        self.waits += 1
        return self.process.next_output(timeout)

    def __getattr__(self, name: str) -> Any:
        return getattr(self.process, name)


def _spawn_until_told() -> HostProcess:
    """A process that prints ``done`` once it reads a line, and nothing before."""
    script = "import sys; sys.stdin.readline(); print('done', flush=True)"
    return HostCommandExecutor().spawn(
        SpawnRequest([sys.executable, "-c", script], env=dict(os.environ))
    )


def test_a_silent_process_with_a_side_wakes_its_reader_only_when_something_happens() -> None:
    process = _Counting(_spawn_until_told())
    # The process speaks only once the side was served, so the order is fixed.
    side = _PipeSide(lambda: process.write("go\n"))
    try:
        channel = Channel(process, ["cli"], side=side)  # type: ignore[arg-type]
        # At least half a second of silence before the side gets work (longer on a busy
        # machine, which only gives a reader that polls more chances to show it).
        threading.Timer(0.5, lambda: os.write(side.write_end, b"x")).start()
        assert channel.read(time.monotonic() + 60) == StdoutLine("done\n")
        assert side.served == [b"x"], "the side was served when it had work"
        # One wait through the silence, one after the side's work, none on a timer: a reader
        # that looked every SIDE_POLL would have waited about ten times in the silence alone.
        assert process.waits <= 4, f"the reader woke {process.waits} times"
    finally:
        process.process.close()
        side.close()
