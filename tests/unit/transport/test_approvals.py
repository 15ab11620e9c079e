"""Deciding one permission request: policies answer at once, handlers fail closed."""

from __future__ import annotations

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest, approvals_value
from agentshim.core.events import ToolKind
from agentshim.core.permissions import ApprovalPolicy
from agentshim.transport.approvals import decide

REQUEST = ApprovalRequest("Bash", {"command": "touch x"}, ToolKind.COMMAND, "t1")


def clock_of(*readings: float):  # type: ignore[no-untyped-def]
    values = iter(readings)
    return lambda: next(values)


class TestDecide:
    def test_policies(self) -> None:
        deny = decide(ApprovalPolicy.DENY, REQUEST, timeout=1, monotonic=clock_of())
        assert not deny.decision.allowed
        assert (deny.decided_by, deny.fail_turn) == ("policy", False)
        fail = decide(ApprovalPolicy.FAIL_TURN, REQUEST, timeout=1, monotonic=clock_of())
        assert not fail.decision.allowed
        assert fail.fail_turn

    def test_a_handler_in_time_decides(self) -> None:
        handler = approvals_value("t", lambda r: ApprovalDecision.allow({"command": "ls"}))
        answer = decide(handler, REQUEST, timeout=1, monotonic=clock_of(0.0, 0.5))
        assert answer.decided_by == "handler"
        assert answer.decision == ApprovalDecision(True, {"command": "ls"})

    def test_late_raising_or_nonsense_answers_are_denies(self) -> None:
        late = approvals_value("t", lambda r: ApprovalDecision.allow())
        assert decide(late, REQUEST, timeout=1, monotonic=clock_of(0.0, 1.5)).decided_by == (
            "handler_timeout"
        )

        def boom(request: ApprovalRequest) -> ApprovalDecision:
            raise ValueError("nope")

        raised = decide(approvals_value("t", boom), REQUEST, timeout=1, monotonic=clock_of(0.0))
        assert raised.decided_by == "handler_error"
        assert not raised.decision.allowed
        nonsense = approvals_value("t", lambda r: True)
        answer = decide(nonsense, REQUEST, timeout=1, monotonic=clock_of(0.0, 0.1))
        assert answer.decided_by == "handler_error"
        assert not answer.decision.allowed
