"""Pairing a CLI's responses with the requests they answer, under deadlines."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from agentshim.transport.correlator import Correlator


class TestCorrelator:
    def test_a_response_pairs_once_with_its_request(self) -> None:
        control = Correlator("ours")
        first = control.issue("interrupt", None)
        second = control.issue("set_model", 10.0)
        assert first.request_id != second.request_id
        assert control.resolve(second.request_id) == second
        assert control.resolve(second.request_id) is None
        assert control.resolve("never-issued") is None
        assert control.resolve(None) is None
        assert len(control) == 1

    def test_expired_requests_leave_and_no_longer_pair(self) -> None:
        control = Correlator("ours")
        soon = control.issue("set_model", 1.0)
        later = control.issue("set_model", 5.0)
        assert control.next_deadline() == 1.0
        assert control.expire(0.5) == []
        assert control.expire(1.0) == [soon]
        assert control.resolve(soon.request_id) is None
        assert control.next_deadline() == 5.0
        control.resolve(later.request_id)
        assert control.next_deadline() is None

    @given(st.lists(st.tuples(st.booleans(), st.floats(0, 100)), max_size=30), st.floats(0, 100))
    def test_deadlines_and_pairing_agree_with_a_plain_model(
        self, issued: list[tuple[bool, float]], now: float
    ) -> None:
        control = Correlator("p")
        model: dict[str, float | None] = {}
        for has_deadline, deadline in issued:
            request = control.issue("x", deadline if has_deadline else None)
            model[request.request_id] = request.deadline
        expired = {r.request_id for r in control.expire(now)}
        assert expired == {i for i, d in model.items() if d is not None and d <= now}
        left = {i: d for i, d in model.items() if i not in expired}
        dated = [d for d in left.values() if d is not None]
        assert control.next_deadline() == (min(dated) if dated else None)
        assert len(control) == len(left)
