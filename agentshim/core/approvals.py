"""Answering the agent's permission requests from code: the request, the decision, the handler.

A long-lived transport that can ask before a tool runs (Claude Code's stream-json with
``--permission-prompt-tool stdio``) hands each request to the conversation's approvals: an
:class:`~agentshim.core.permissions.ApprovalPolicy` answers every request the same way, an
:class:`ApprovalHandler` decides each one. A handler runs on the thread that runs the turn,
never on a reader; one that raises, or answers after the transport's ``approval_timeout``,
counts as a deny (fail closed), and the events say so.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, cast, runtime_checkable

from agentshim.core.errors import InvalidRequestError
from agentshim.core.events import ToolKind
from agentshim.core.permissions import ApprovalPolicy

__all__ = [
    "ApprovalDecision",
    "ApprovalFunction",
    "ApprovalHandler",
    "ApprovalRequest",
    "Approvals",
    "ApprovalsArgument",
    "approvals_value",
]


@dataclass(frozen=True, slots=True)
class ApprovalRequest:
    """The agent asks to run ``tool`` with ``args``; ``tool_id`` pairs it with its ToolCall.

    ``kind`` is what the tool does (the same classification ToolCall carries);
    ``description`` is the CLI's own one-line summary, when it gives one.
    """

    tool: str
    args: Mapping[str, Any]
    kind: ToolKind
    tool_id: str | None = None
    description: str = ""


@dataclass(frozen=True, slots=True)
class ApprovalDecision:
    """Allow the tool (with ``args`` rewritten, when given) or deny it with ``message``.

    Build one with :meth:`allow` or :meth:`deny`. A denied tool does not run; the agent sees
    ``message`` as the tool's error and carries on with its turn.
    """

    allowed: bool
    args: Mapping[str, Any] | None = None
    message: str = ""

    @classmethod
    def allow(cls, args: Mapping[str, Any] | None = None) -> ApprovalDecision:
        """Let the tool run, with ``args`` in place of what the agent asked for when given."""
        return cls(True, dict(args) if args is not None else None)

    @classmethod
    def deny(cls, message: str = "denied by the caller's approval handler") -> ApprovalDecision:
        """Refuse the tool; the agent is told ``message``."""
        return cls(False, None, message)


@runtime_checkable
class ApprovalHandler(Protocol):
    """Decides each permission request of a conversation, on the turn's thread."""

    def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        """Return the decision for ``request``; raising counts as a deny."""
        ...


Approvals = ApprovalPolicy | ApprovalHandler
"""What a conversation does with the agent's permission requests."""

ApprovalFunction = Callable[[ApprovalRequest], ApprovalDecision]
"""A plain function that decides each request, as ``Agent(approvals=decide)`` takes it."""

ApprovalsArgument = ApprovalPolicy | ApprovalHandler | ApprovalFunction
"""What ``approvals=`` accepts: a policy, a handler object, or a plain function of a request."""


@dataclass(frozen=True, slots=True)
class _FunctionHandler:
    decide_fn: Callable[[ApprovalRequest], ApprovalDecision]

    def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        return self.decide_fn(request)


def approvals_value(owner: str, value: object) -> Approvals:
    """``value`` as a conversation's approvals: a policy, a handler, or a function of a request.

    Raises:
        InvalidRequestError: ``value`` is none of those.
    """
    if isinstance(value, (ApprovalPolicy, ApprovalHandler)):
        return value
    if callable(value):
        return _FunctionHandler(cast("Callable[[ApprovalRequest], ApprovalDecision]", value))
    raise InvalidRequestError(
        f"{owner}.approvals",
        f"{value!r:.100} is not an ApprovalPolicy or an approval handler",
        f"{owner} approvals must be an ApprovalPolicy such as ApprovalPolicy.DENY, an object "
        f"with decide(request) -> ApprovalDecision, or such a function, not {value!r:.100}",
    )
