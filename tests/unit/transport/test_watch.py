"""The pure clock of one turn: budget, stall window, and the grace of an interrupt."""

from __future__ import annotations

from hypothesis import example, given
from hypothesis import strategies as st

from agentshim.transport.watch import Due, TurnWatch


class TestTurnWatch:
    def test_nothing_is_ever_due_without_limits(self) -> None:
        watch = TurnWatch(0.0, timeout=None, stall_timeout=None)
        assert watch.deadline() is None
        assert watch.due(1e9) is None

    def test_output_pushes_the_stall_back_but_not_the_budget(self) -> None:
        watch = TurnWatch(0.0, timeout=10.0, stall_timeout=3.0)
        assert watch.deadline() == 3.0
        watch.heard(2.5)
        assert watch.deadline() == 5.5
        assert watch.due(5.0) is None
        assert watch.due(5.5) is Due.STALL
        watch.heard(9.0)
        assert watch.due(10.0) is Due.TIMEOUT

    def test_after_an_interrupt_only_the_kill_is_due(self) -> None:
        watch = TurnWatch(0.0, timeout=1.0, stall_timeout=1.0)
        watch.interrupted(2.0, 5.0, Due.STALL)
        assert watch.reason is Due.STALL
        assert watch.deadline() == 7.0
        assert watch.due(6.9) is None
        assert watch.due(7.0) is Due.KILL
        watch.interrupted(3.0, 5.0, Due.TIMEOUT)
        assert watch.reason is Due.STALL, "the first reason stands"
        assert watch.deadline() == 7.0

    def test_a_stall_keeps_the_silence_that_made_it(self) -> None:
        watch = TurnWatch(0.0, timeout=None, stall_timeout=1.0)
        watch.heard(0.5)
        watch.interrupted(1.75, 5.0, Due.STALL)
        watch.heard(1.8)  # the interrupt's answer
        assert watch.stalled_for == 1.25
        other = TurnWatch(0.0, timeout=1.0, stall_timeout=None)
        other.interrupted(1.0, 5.0, Due.TIMEOUT)
        assert other.stalled_for is None

    @given(
        st.floats(0.01, 100),
        st.floats(0.01, 100),
        st.lists(st.floats(0, 200), max_size=10),
        st.floats(0, 300),
    )
    # heard + stall rounds up here: "now - heard >= stall" was False at the deadline.
    @example(timeout=9.0, stall=1.8281250363304453, heard=[7.0], probe=0.0)
    def test_the_deadline_is_exactly_when_something_first_becomes_due(
        self, timeout: float, stall: float, heard: list[float], probe: float
    ) -> None:
        watch = TurnWatch(0.0, timeout=timeout, stall_timeout=stall)
        for moment in sorted(heard):
            watch.heard(moment)
        deadline = watch.deadline()
        assert deadline is not None
        if probe < deadline:
            assert watch.due(probe) is None
        assert watch.due(deadline) is not None
