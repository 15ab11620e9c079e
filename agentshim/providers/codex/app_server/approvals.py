"""The app-server's approval requests as ApprovalRequests, and the decisions as its replies.

Codex asks with a server request after the item it is about started:
``item/commandExecution/requestApproval`` (a command) or ``item/fileChange/requestApproval``
(a patch). The reply is ``{"decision": "accept" | "decline" | "cancel"}``: an allow accepts,
a deny declines (the agent carries on with the tool's error), and a deny sent because the turn
is being interrupted cancels, which also stops the turn.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.events import ToolKind
from agentshim.providers.codex.events import EDIT_TOOL, SHELL_TOOL

from . import protocol as p

__all__ = ["APPROVAL_METHODS", "approval_reply", "approval_request"]

COMMAND_APPROVAL = "item/commandExecution/requestApproval"
FILE_CHANGE_APPROVAL = "item/fileChange/requestApproval"
APPROVAL_METHODS = frozenset({COMMAND_APPROVAL, FILE_CHANGE_APPROVAL})
"""The server requests that are permission prompts."""


def approval_request(params: object, item_args: Mapping[str, Any] | None) -> ApprovalRequest | None:
    """The request ``params`` describe (None for params of no approval method).

    ``item_args`` are the arguments of the item it is about, when that item is known (a patch's
    changes are only on its item).
    """
    if isinstance(params, p.CommandExecutionRequestApprovalParams):
        args: dict[str, Any] = {"command": params.command or "", "cwd": params.cwd or ""}
        if item_args:
            args = {**item_args, **{k: v for k, v in args.items() if v}}
        return ApprovalRequest(
            tool=SHELL_TOOL,
            args=args,
            kind=ToolKind.COMMAND,
            tool_id=params.item_id,
            description=params.reason or params.command or "",
        )
    if isinstance(params, p.FileChangeRequestApprovalParams):
        args = dict(item_args or {})
        if params.grant_root:
            args["grant_root"] = params.grant_root
        return ApprovalRequest(
            tool=EDIT_TOOL,
            args=args,
            kind=ToolKind.FILE_CHANGE,
            tool_id=params.item_id,
            description=params.reason or "",
        )
    return None


def approval_reply(
    params: object, decision: ApprovalDecision, *, interrupted: bool
) -> p.CommandExecutionRequestApprovalResponse | p.FileChangeRequestApprovalResponse:
    """The reply to an approval request: accept, decline, or cancel while interrupting."""
    if isinstance(params, p.FileChangeRequestApprovalParams):
        choice = p.FileChangeApprovalDecision
        answer = choice.ACCEPT if decision.allowed else choice.DECLINE
        if interrupted and not decision.allowed:
            answer = choice.CANCEL
        return p.FileChangeRequestApprovalResponse(decision=answer)
    said = "accept" if decision.allowed else "decline"
    if interrupted and not decision.allowed:
        said = "cancel"
    return p.CommandExecutionRequestApprovalResponse(decision=said)
