"""Answering one permission request from a conversation's approvals, fail closed.

The handler runs on the caller's thread, here and now: a transport calls :func:`decide` from
the thread that runs the turn. It cannot be preempted, so a handler that overruns the
timeout is not cut short; its late answer is replaced by a deny.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import cast

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest, Approvals
from agentshim.core.clock import Monotonic
from agentshim.core.events import ApprovalAnswered, ApprovalRequested
from agentshim.core.permissions import ApprovalPolicy, NativeMode, NativePermissions

__all__ = ["Answer", "answered", "decide", "decide_for_turn", "requested"]


@dataclass(frozen=True, slots=True)
class Answer:
    """The decision to send, who made it, and whether the turn must fail for it.

    ``decided_by`` is what ApprovalAnswered reports; ``fail_turn`` is set by
    ``ApprovalPolicy.FAIL_TURN``.
    """

    decision: ApprovalDecision
    decided_by: str
    fail_turn: bool = False


def decide(
    approvals: Approvals,
    request: ApprovalRequest,
    *,
    timeout: float,
    monotonic: Monotonic,
) -> Answer:
    """What ``approvals`` answers to ``request``; a handler gets ``timeout`` seconds.

    A policy answers at once: DENY denies, FAIL_TURN denies and fails the turn. A handler's
    decision counts when it returns one in time; raising, returning something that is not
    an ApprovalDecision, or returning late all count as a deny, with the reason.
    """
    if approvals is ApprovalPolicy.DENY:
        return Answer(ApprovalDecision.deny("denied by ApprovalPolicy.DENY"), "policy")
    if approvals is ApprovalPolicy.FAIL_TURN:
        message = "denied by ApprovalPolicy.FAIL_TURN; the turn fails"
        return Answer(ApprovalDecision.deny(message), "policy", fail_turn=True)
    assert not isinstance(approvals, ApprovalPolicy)
    started = monotonic()
    try:
        # Typed as object: a handler is the caller's code and may return anything.
        decision = cast(object, approvals.decide(request))
    except Exception as error:
        message = f"the approval handler raised {error!r:.300}; denied"
        return Answer(ApprovalDecision.deny(message), "handler_error")
    elapsed = monotonic() - started
    if not isinstance(decision, ApprovalDecision):
        message = f"the approval handler returned {decision!r:.100}, not an ApprovalDecision"
        return Answer(ApprovalDecision.deny(message + "; denied"), "handler_error")
    if elapsed > timeout:
        message = (
            f"the approval handler took {elapsed:.1f} s, over approval_timeout ({timeout:g} s); "
            "denied"
        )
        return Answer(ApprovalDecision.deny(message), "handler_timeout")
    return Answer(decision, "handler")


def decide_for_turn(
    approvals: Approvals,
    permissions: NativePermissions,
    request: ApprovalRequest,
    *,
    interrupted: bool,
    timeout: float,
    monotonic: Monotonic,
) -> Answer:
    """What a long-lived conversation answers to ``request`` during a turn.

    A turn being interrupted denies without asking (``"interrupted"``); read-only permissions
    deny every request the CLI makes, which is for a write or a command it cannot tell is
    read-only (``"read_only"``); otherwise :func:`decide`.
    """
    if interrupted:
        return Answer(ApprovalDecision.deny("the turn is being interrupted"), "interrupted")
    if permissions.mode is NativeMode.READ_ONLY:
        message = "denied: this conversation is read-only (NativePermissions.read_only())"
        return Answer(ApprovalDecision.deny(message), "read_only")
    return decide(approvals, request, timeout=timeout, monotonic=monotonic)


def requested(request: ApprovalRequest) -> ApprovalRequested:
    """The event that reports ``request``."""
    return ApprovalRequested(
        request.tool, request.args, request.kind, request.tool_id, request.description
    )


def answered(
    request: ApprovalRequest, decision: ApprovalDecision, decided_by: str
) -> ApprovalAnswered:
    """The event that reports the answer sent for ``request``."""
    rewritten = decision.args if decision.allowed else None
    return ApprovalAnswered(
        request.tool_id, decision.allowed, decided_by, decision.message, rewritten
    )
