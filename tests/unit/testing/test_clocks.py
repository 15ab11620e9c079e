from __future__ import annotations

import threading
import time

import pytest

from agentshim.core.clock import SystemClock
from agentshim.core.ids import IdAllocator, RandomIds
from agentshim.testing._liveness import returns_within
from agentshim.testing.clock import FakeClock, SequentialIds
from agentshim.testing.contracts import ClockContract

# How long a wait that should end may block before the test fails as hung (never a speed limit).
LIVENESS_S = 60.0


class TestSystemClockContract(ClockContract):
    def make_clock(self) -> SystemClock:
        return SystemClock()


class TestFakeClockContract(ClockContract):
    def make_clock(self) -> FakeClock:
        return FakeClock()


class TestFakeClock:
    def test_waits_are_instant_recorded_and_advance_time(self) -> None:
        clock = FakeClock(start=100.0)
        # A fake that really slept its hour would block, and fail the guard.
        assert returns_within(LIVENESS_S, lambda: clock.wait(3600)) is False
        assert returns_within(LIVENESS_S, lambda: clock.wait(-1)) is False
        assert clock.monotonic() == 3700.0
        assert clock.waits == [3600, 0.0]

    def test_a_set_stop_returns_true_without_advancing(self) -> None:
        clock = FakeClock()
        stop = threading.Event()
        stop.set()
        assert clock.wait(10, stop) is True
        assert clock.monotonic() == 0.0
        assert clock.waits == [10]

    def test_advance_never_goes_backwards(self) -> None:
        clock = FakeClock()
        clock.advance(2)
        clock.advance(-5)
        assert clock.monotonic() == 2


def test_a_system_clock_wait_is_cut_short_by_a_stop_from_another_thread() -> None:
    stop = threading.Event()
    timer = threading.Timer(0.05, stop.set)
    timer.start()
    # An hour's wait: only the stop can end it before the guard fails.
    assert returns_within(LIVENESS_S, lambda: SystemClock().wait(3600, stop)) is True
    timer.join()


@pytest.mark.parametrize("seconds", [float("inf"), 1e300, threading.TIMEOUT_MAX * 4])
def test_a_system_clock_wait_longer_than_any_timer_lasts_until_stopped(seconds: float) -> None:
    stop = threading.Event()
    timer = threading.Timer(0.2, stop.set)
    timer.start()
    started = time.monotonic()
    assert returns_within(LIVENESS_S, lambda: SystemClock().wait(seconds, stop)) is True
    assert time.monotonic() - started >= 0.15  # it waited for the stop, not returned at once
    timer.join()


class TestSequentialIds:
    def test_ids_count_up_across_prefixes(self) -> None:
        ids = SequentialIds()
        assert [ids.new_id("turn"), ids.new_id("turn"), ids.new_id("session")] == [
            "turn_1",
            "turn_2",
            "session_3",
        ]

    def test_both_allocators_satisfy_the_protocol_and_never_repeat(self) -> None:
        allocators: list[IdAllocator] = [SequentialIds(), RandomIds()]
        for allocator in allocators:
            assert isinstance(allocator, IdAllocator)
            made = {allocator.new_id("x") for _ in range(1000)}
            assert len(made) == 1000
            assert all(item.startswith("x_") for item in made)
