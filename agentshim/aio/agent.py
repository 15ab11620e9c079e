"""AsyncAgent: an Agent whose sessions are driven from an asyncio event loop."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentshim.agent import Agent
from agentshim.core.conversation import Transport
from agentshim.core.events import event_callbacks
from agentshim.core.permissions import NativePermissions

from ._bridge import approvals_for_agent
from ._pipe import DEFAULT_CAPACITY
from .session import AsyncEventSink, AsyncSession

__all__ = ["AsyncAgent"]

_APPROVAL_TIMEOUT = 60.0


class AsyncAgent:
    """An :class:`~agentshim.agent.Agent` for asyncio services; it takes what Agent takes.

    ``approvals`` may also be a coroutine function of an ApprovalRequest (or an object whose
    ``decide`` is one): it runs on the event loop that awaits the turn, and the turn waits for
    its decision (at most ``approval_timeout`` seconds; late or raising counts as a deny).
    ``event_handlers`` run on the loop too, and may be coroutine functions. Tools may be
    coroutine functions made with :func:`agentshim.aio.tool`. ``event_capacity`` is how many
    events may wait for a slow consumer before the turn waits for it.

    Everything else (the transport, the recovery policy, checkpoints, leases, limits) is the
    synchronous Agent's, available as :attr:`agent`.

    Raises:
        InvalidRequestError, ProviderCapabilityError: as :class:`~agentshim.agent.Agent`.
    """

    def __init__(
        self,
        provider: str | Transport,
        *,
        permissions: NativePermissions,
        approvals: object,
        event_handlers: AsyncEventSink | Sequence[AsyncEventSink] = (),
        approval_timeout: float = _APPROVAL_TIMEOUT,
        event_capacity: int = DEFAULT_CAPACITY,
        **options: Any,
    ) -> None:
        handlers = event_callbacks("AsyncAgent", "event_handlers", event_handlers)
        agent = Agent(
            provider,
            permissions=permissions,
            approvals=approvals_for_agent(approvals, approval_timeout),
            approval_timeout=approval_timeout,
            **options,
        )
        self._setup(agent, handlers, event_capacity)

    def _setup(self, agent: Agent, handlers: Sequence[Any], capacity: int) -> None:
        self._agent = agent
        self._handlers = tuple(handlers)
        if isinstance(capacity, bool) or not isinstance(capacity, int) or capacity < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
            from agentshim.core.errors import InvalidRequestError

            raise InvalidRequestError(
                "event_capacity",
                f"{capacity!r} is not a positive int",
                f"AsyncAgent event_capacity must be a positive int, not {capacity!r}",
            )
        self._capacity = capacity

    @property
    def agent(self) -> Agent:
        """The synchronous Agent underneath: its profile, probe, transport and settings."""
        return self._agent

    def start_session(self, cwd: str | None = None, **options: Any) -> AsyncSession:
        """Open an :class:`AsyncSession` in ``cwd``; the options are those of Agent.start_session.

        Use it as ``async with agent.start_session(cwd) as session:``.

        Raises:
            InvalidRequestError: as :meth:`Agent.start_session`.
        """
        session = self._agent.start_session(cwd, **options)
        return AsyncSession(session, event_handlers=self._handlers, capacity=self._capacity)
