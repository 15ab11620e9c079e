"""Python callbacks on the agent's tool use and its stop: :class:`HookCallbacks`.

Claude Code on the stream transport calls them in band (its ``hook_callback`` requests), on
the thread that runs the turn. ``pre_tool_use`` sees each tool call before it runs and may
allow it, deny it (the agent reads the message as the tool's error) or rewrite its input;
``post_tool_use`` and ``stop`` only observe. A callback that raises counts as no opinion
(before a tool) or is ignored (after one), and is reported as a ``hook_failed`` Lifecycle
event: a broken hook never crashes the turn. See ``docs/tools.md``, "Hooks".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentshim.core._readonly import empty_mapping
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.errors import InvalidRequestError

__all__ = ["HookCallbacks", "HookEvent"]


@dataclass(frozen=True, slots=True)
class HookEvent:
    """What a ``post_tool_use`` or ``stop`` callback is told.

    ``name`` is the CLI's hook name (``PostToolUse``, ``Stop``); ``tool``, ``args``,
    ``tool_id`` and ``response`` describe the tool call a PostToolUse follows (None for a
    Stop); ``payload`` is the CLI's whole hook input, as it sent it.
    """

    name: str
    tool: str | None = None
    args: Mapping[str, Any] | None = None
    tool_id: str | None = None
    response: object = None
    payload: Mapping[str, Any] = field(default_factory=empty_mapping)


@dataclass(frozen=True, slots=True)
class HookCallbacks:
    """The callbacks of a conversation; each may be None (that hook is not registered).

    ``pre_tool_use(request)`` returns an ``ApprovalDecision`` (``allow(args)`` runs the tool,
    with ``args`` in place of the agent's input when given; ``deny(message)`` refuses it) or
    None for no opinion (the CLI's own permission rules decide). ``matcher`` limits
    ``pre_tool_use`` and ``post_tool_use`` to tools whose name matches it (the CLI's matcher
    syntax, such as ``"Bash"`` or ``"Edit|Write"``); None: every tool. ``timeout`` is how
    long the CLI waits for a callback.
    """

    pre_tool_use: Callable[[ApprovalRequest], ApprovalDecision | None] | None = None
    post_tool_use: Callable[[HookEvent], None] | None = None
    stop: Callable[[HookEvent], None] | None = None
    matcher: str | None = None
    timeout: float = 60.0

    def __post_init__(self) -> None:
        for name in ("pre_tool_use", "post_tool_use", "stop"):
            value = getattr(self, name)
            if value is not None and not callable(value):
                raise InvalidRequestError(
                    f"HookCallbacks.{name}",
                    f"{value!r:.60} is not callable",
                    f"HookCallbacks.{name} must be a function or None, not {value!r:.60}",
                )
        if self.matcher is not None and (not isinstance(self.matcher, str) or not self.matcher):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "HookCallbacks.matcher",
                f"{self.matcher!r} is not a tool name pattern",
                "HookCallbacks.matcher must be a non-empty tool name pattern or None",
            )
        from agentshim.core._checks import seconds

        object.__setattr__(
            self, "timeout", seconds("HookCallbacks", "timeout", self.timeout, positive=True)
        )

    @property
    def registered(self) -> bool:
        """Whether any callback is set."""
        return any(c is not None for c in (self.pre_tool_use, self.post_tool_use, self.stop))
