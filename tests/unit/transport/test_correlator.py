"""Pairing a CLI's responses with the requests they answer."""

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

    def test_the_oldest_pending_request_of_a_subtype_is_found_until_cleared(self) -> None:
        control = Correlator("ours")
        first = control.issue("set_model", 1.0)
        control.issue("set_model", None)
        assert control.pending("set_model") == first
        assert control.pending("interrupt") is None
        control.clear()
        assert control.pending("set_model") is None
        assert control.resolve(first.request_id) is None
        assert len(control) == 0

    @given(st.lists(st.tuples(st.sampled_from("ab"), st.booleans()), max_size=30))
    def test_pairing_agrees_with_a_plain_model(self, issued: list[tuple[str, bool]]) -> None:
        control = Correlator("p")
        model: dict[str, str] = {}
        for subtype, answered in issued:
            request = control.issue(subtype, None)
            model[request.request_id] = subtype
            if answered:
                assert control.resolve(request.request_id) == request
                del model[request.request_id]
        assert len(control) == len(model)
        for subtype in "ab":
            oldest = next((i for i, s in model.items() if s == subtype), None)
            found = control.pending(subtype)
            assert (found.request_id if found else None) == oldest
