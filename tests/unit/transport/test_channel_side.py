"""A channel with a side channel serves it while it waits, and a wait keeps its meaning."""

from __future__ import annotations

import os
import sys
import threading
import time
from typing import Any

from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.host_process import HostProcess
from agentshim.execution.process import ProcessOutput, SpawnRequest, StdoutLine
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


class _PipeSide:
    """A side whose descriptor is readable while a byte waits on its pipe."""

    def __init__(self) -> None:
        self.read_end, self.write_end = os.pipe()
        os.set_blocking(self.read_end, False)
        self.served: list[bytes] = []

    def fileno(self) -> int:
        return self.read_end

    def ready(self) -> bool:
        try:
            data = os.read(self.read_end, 64)
        except BlockingIOError:
            return False
        self.served.append(data)
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


def _spawn_silent(seconds: float) -> HostProcess:
    script = f"import time; time.sleep({seconds}); print('done', flush=True)"
    return HostCommandExecutor().spawn(
        SpawnRequest([sys.executable, "-c", script], env=dict(os.environ))
    )


def test_a_silent_process_with_a_side_wakes_its_reader_only_when_something_happens() -> None:
    side = _PipeSide()
    process = _Counting(_spawn_silent(2.0))
    try:
        channel = Channel(process, ["cli"], side=side)  # type: ignore[arg-type]
        threading.Timer(0.5, lambda: os.write(side.write_end, b"x")).start()
        assert channel.read(time.monotonic() + 60) == StdoutLine("done\n")
        assert side.served == [b"x"], "the side was served when it had work"
        # Two seconds of silence: one wait, one for the side's work, none on a timer.
        assert process.waits <= 4, f"the reader woke {process.waits} times"
    finally:
        process.process.close()
        side.close()
