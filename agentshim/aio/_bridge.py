"""Running the caller's coroutine functions on its event loop from a turn's worker thread.

A turn of an :class:`~agentshim.aio.AsyncSession` runs on a worker thread that is bound to the
loop that awaits the turn. Approval handlers and tools are called on that thread by the
synchronous core; when they are coroutine functions, :func:`call_on_loop` schedules them on
the bound loop with ``asyncio.run_coroutine_threadsafe`` and the thread waits for the answer.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextvars
import functools
import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import Any, cast

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest, Approvals
from agentshim.core.errors import InvalidRequestError, TurnCancelledError
from agentshim.core.tools import DEFAULT_TOOL_TIMEOUT, Tool
from agentshim.core.tools import tool as sync_tool

__all__ = ["approvals_for_agent", "bound_to", "call_on_loop", "tool"]

# A context variable, not a thread-local: what the turn's thread calls on a thread of its own
# (a tool's function, which the tool host runs in a copy of the caller's context) still
# finds the loop.
_bound: contextvars.ContextVar[asyncio.AbstractEventLoop | None] = contextvars.ContextVar(
    "agentshim_aio_loop", default=None
)


class bound_to:
    """Bind the current (worker) thread to ``loop`` for the block: coroutines run there."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._token: contextvars.Token[asyncio.AbstractEventLoop | None] | None = None

    def __enter__(self) -> None:
        self._token = _bound.set(self._loop)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _bound.reset(self._token)
            self._token = None


def call_on_loop(what: str, awaitable: Awaitable[Any], timeout: float | None) -> Any:
    """Run ``awaitable`` on the loop this thread is bound to and return its result.

    Waits at most ``timeout`` seconds (None: until it ends); on timeout the coroutine is
    cancelled and TimeoutError raised.

    Raises:
        InvalidRequestError: this thread runs no turn of an AsyncSession (``what`` names the
            coroutine function for the message).
    """
    loop = _bound.get()
    if loop is None:
        if inspect.iscoroutine(awaitable):
            awaitable.close()
        raise InvalidRequestError(
            what,
            "a coroutine function outside an AsyncSession turn",
            f"{what} is a coroutine function: it can only run in a turn of an "
            "agentshim.aio.AsyncSession, which runs it on the session's event loop; use a "
            "plain function with the synchronous Agent",
        )
    future = asyncio.run_coroutine_threadsafe(_awaited(awaitable), loop)
    try:
        return future.result(timeout)
    except concurrent.futures.TimeoutError:
        future.cancel()
        raise TimeoutError(f"{what} did not answer within {timeout:g} s") from None
    except concurrent.futures.CancelledError:
        raise TurnCancelledError(f"{what} was cancelled on the event loop") from None


async def _awaited(awaitable: Awaitable[Any]) -> Any:
    return await awaitable


class _LoopApprovals:
    """An approval handler whose ``decide`` is a coroutine, answered on the session's loop."""

    def __init__(
        self, decide: Callable[[ApprovalRequest], Awaitable[ApprovalDecision]], timeout: float
    ) -> None:
        self._decide = decide
        self._timeout = timeout

    def decide(self, request: ApprovalRequest) -> ApprovalDecision:
        # Raising (a timeout included) counts as a deny, as for any handler.
        return cast(
            "ApprovalDecision",
            call_on_loop("the approval handler", self._decide(request), self._timeout),
        )


def _loop_approvals(approvals: object, timeout: float) -> object:
    """``approvals`` as the synchronous core takes them: a coroutine handler is wrapped.

    A coroutine function, or an object whose ``decide`` is one, is answered on the session's
    loop; anything else is returned as it is (the Agent checks it).
    """
    if inspect.iscoroutinefunction(approvals):
        return _LoopApprovals(
            cast("Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]", approvals), timeout
        )
    decide = getattr(approvals, "decide", None)
    if decide is not None and inspect.iscoroutinefunction(decide):
        return _LoopApprovals(
            cast("Callable[[ApprovalRequest], Awaitable[ApprovalDecision]]", decide), timeout
        )
    return approvals


def tool(
    function: Callable[..., object] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    input_schema: Mapping[str, Any] | None = None,
    timeout: float = DEFAULT_TOOL_TIMEOUT,
) -> Any:
    """Make ``function`` a :class:`~agentshim.core.tools.Tool`, a coroutine function too.

    Used like :func:`agentshim.tool` (bare, with options, or called). A coroutine function
    runs on the event loop of the AsyncSession turn that calls it, with its schema derived from
    its own annotations; a plain function is passed to :func:`agentshim.tool` as it is.

    Raises:
        InvalidRequestError: as :func:`agentshim.tool` does.
    """

    def make(fn: Callable[..., object]) -> Tool:
        if not inspect.iscoroutinefunction(fn):
            return sync_tool(
                name=name, description=description, input_schema=input_schema, timeout=timeout
            )(fn)
        label = f"tool {name or getattr(fn, '__name__', '')!r}"

        @functools.wraps(fn)
        def on_loop(*args: Any, **kwargs: Any) -> object:
            # Unlike a plain function, a coroutine can be cut short: past timeout it is
            # cancelled, and the agent gets the timeout as the tool's error.
            return call_on_loop(label, cast("Awaitable[Any]", fn(*args, **kwargs)), timeout)

        return sync_tool(
            name=name, description=description, input_schema=input_schema, timeout=timeout
        )(on_loop)

    if function is not None:
        return make(function)
    return make


def approvals_for_agent(approvals: object, timeout: float) -> Approvals:
    """Typed shim for the Agent's ``approvals`` argument (checked by the Agent itself)."""
    return cast("Approvals", _loop_approvals(approvals, timeout))
