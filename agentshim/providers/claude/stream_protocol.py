"""The frames a long-lived Claude Code process reads on stdin, and its control requests.

Both directions are JSON lines. What we send: a user message; a ``control_request`` (ours
carry a top-level ``request_id``) such as ``interrupt`` or ``set_model``; and the
``control_response`` that answers one of the CLI's own requests, with the id nested in
``response``. What the CLI asks (``control_request``): ``can_use_tool`` when it wants
permission, ``hook_callback`` and ``mcp_message`` for hooks and in-process MCP servers
registered with ``initialize`` (see :mod:`.stream_callbacks`); it may withdraw a
request with ``control_cancel_request``. See docs/providers/claude.md, "Stream transport".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.jsonvalues import as_mapping, as_str

from .events import tool_kind

__all__ = [
    "approval_request",
    "control_error",
    "control_request",
    "control_success",
    "decision_response",
    "user_message",
]


def user_message(text: str) -> dict[str, Any]:
    """A user turn (or, while a turn runs, a message folded into it)."""
    return {"type": "user", "message": {"role": "user", "content": text}}


def control_request(request_id: str, subtype: str, **fields: Any) -> dict[str, Any]:
    """Our request ``subtype`` (``interrupt``, ``set_model``, ...) with id ``request_id``."""
    return {
        "type": "control_request",
        "request_id": request_id,
        "request": {"subtype": subtype, **fields},
    }


def control_success(request_id: str, response: Mapping[str, Any]) -> dict[str, Any]:
    """The answer to the CLI's request ``request_id``."""
    body = {"subtype": "success", "request_id": request_id, "response": dict(response)}
    return {"type": "control_response", "response": body}


def control_error(request_id: str, message: str) -> dict[str, Any]:
    """A refusal of the CLI's request ``request_id``."""
    body = {"subtype": "error", "request_id": request_id, "error": message}
    return {"type": "control_response", "response": body}


def approval_request(request: Mapping[str, Any]) -> ApprovalRequest:
    """The ApprovalRequest a ``can_use_tool`` request body describes."""
    tool = as_str(request.get("tool_name")) or "unknown"
    args = as_mapping(request.get("input")) or {}
    return ApprovalRequest(
        tool=tool,
        args=dict(args),
        kind=tool_kind(tool),
        tool_id=as_str(request.get("tool_use_id")),
        description=as_str(request.get("description")) or "",
    )


def decision_response(decision: ApprovalDecision, request: ApprovalRequest) -> dict[str, Any]:
    """What answers ``can_use_tool``: allow (with the input to run) or deny with a message.

    An allow always carries ``updatedInput``: the rewritten arguments, else the original.
    """
    if decision.allowed:
        args = decision.args if decision.args is not None else request.args
        return {"behavior": "allow", "updatedInput": dict(args)}
    return {"behavior": "deny", "message": decision.message or "denied"}
