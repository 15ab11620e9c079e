"""agentshim for asyncio: :class:`AsyncAgent`, :class:`AsyncSession`, and coroutine tools.

The library's core is synchronous. This layer drives it from an event loop: every turn runs
the synchronous :class:`~agentshim.session.Session` on a worker thread of its own (started
with the turn, joined at its end, none left idle), its events cross to the loop through a
bounded pipe with backpressure, and coroutine approval handlers, tools and event handlers run
on the loop. Stdlib only; it works under plain asyncio and anything running on an asyncio
loop (anyio's asyncio backend included). See ``docs/sessions.md``.
"""

from __future__ import annotations

from ._bridge import tool
from .agent import AsyncAgent
from .session import AsyncEventSink, AsyncSession, TurnStream

__all__ = ["AsyncAgent", "AsyncEventSink", "AsyncSession", "TurnStream", "tool"]
