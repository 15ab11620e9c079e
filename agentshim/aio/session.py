"""AsyncSession: a Session driven from an asyncio event loop, one worker thread per turn."""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import threading
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Sequence

from agentshim.core.errors import SessionStateError
from agentshim.core.events import AgentEvent, Emit, EventSink, event_callback
from agentshim.core.turn import TurnRequest
from agentshim.session import Session, Turn, TurnTicket

from ._bridge import bound_to
from ._pipe import DEFAULT_CAPACITY, EventPipe, PipeEnd
from ._threads import in_thread

__all__ = ["AsyncEventSink", "AsyncSession", "TurnStream"]

AsyncEventSink = EventSink | Callable[[AgentEvent], Awaitable[object]]
"""What the asyncio door takes as an event handler: what the synchronous door takes (an
object with ``on_event(event)``, or a plain function of one event), or a coroutine function of
one event. Every one of them runs on the event loop."""


class TurnStream:
    """One turn's events as an async iterator; the :class:`Turn` is readable afterwards.

    ``async for event in session.stream(prompt)`` starts the turn on a worker thread when the
    iteration starts and yields each event as it happens. When the turn fails, the iteration
    raises its error after the last event. Leaving the loop early (``break``, an exception, a
    cancelled task) interrupts the turn in band and waits for it to end; call :meth:`aclose`
    (or use ``async with``) to have that happen at a known point rather than when the iterator
    is collected. A stream runs once.
    """

    def __init__(
        self,
        session: AsyncSession,
        run: Callable[[Emit], Turn],
        handlers: Sequence[Emit],
        capacity: int,
    ) -> None:
        self._session = session
        self._run = run
        self._handlers = tuple(handlers)
        self._capacity = capacity
        self._iterator: AsyncGenerator[AgentEvent, None] | None = None
        self._turn: Turn | None = None
        self._error: BaseException | None = None
        self._ended = False

    @property
    def turn(self) -> Turn:
        """The finished turn.

        Raises:
            SessionStateError: the turn has not ended yet.
            AgentShimError: the turn failed (its error).
        """
        if not self._ended:
            raise SessionStateError("the turn has not ended yet; iterate the stream to its end")
        if self._error is not None:
            raise self._error
        assert self._turn is not None
        return self._turn

    def __aiter__(self) -> AsyncIterator[AgentEvent]:
        if self._iterator is None:
            self._iterator = self._events()
        return self._iterator

    async def aclose(self) -> None:
        """Interrupt the turn if it still runs, and wait for it to end (its outcome discarded)."""
        if self._iterator is not None:
            await self._iterator.aclose()

    async def __aenter__(self) -> TurnStream:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def _events(self) -> AsyncGenerator[AgentEvent, None]:
        loop = asyncio.get_running_loop()
        pipe: EventPipe[AgentEvent, Turn] = EventPipe(loop, self._capacity)
        run = self._run

        def work() -> None:
            turn: Turn | None = None
            error: BaseException | None = None
            with bound_to(loop):
                try:
                    turn = run(pipe.put)
                except BaseException as raised:
                    error = raised
            pipe.finish(turn, error)

        # The caller's context (its current span, say) goes with the turn onto the thread.
        context = contextvars.copy_context()
        thread = threading.Thread(
            target=context.run, args=(work,), name="agentshim-aio-turn", daemon=True
        )
        thread.start()
        try:
            end = await self._relay(pipe)
            while not isinstance(end, PipeEnd):
                yield end
                end = await self._relay(pipe)
        except BaseException:
            # Cancelled, closed early, or an event handler raised: stop the turn in band and
            # wait for its end, so no turn and no process outlives the awaiting task.
            pipe.drop()
            self._session.session.interrupt()
            end = await _drain(pipe)
            self._settle(end)
            raise
        finally:
            thread.join()
        self._settle(end)
        if end.error is not None:
            raise end.error

    async def _relay(self, pipe: EventPipe[AgentEvent, Turn]) -> AgentEvent | PipeEnd[Turn]:
        item = await pipe.get()
        if not isinstance(item, PipeEnd):
            for handler in self._handlers:
                answer: object = handler(item)
                if inspect.isawaitable(answer):
                    await answer
        return item

    def _settle(self, end: PipeEnd[Turn]) -> None:
        self._turn, self._error, self._ended = end.value, end.error, True


async def _drain(pipe: EventPipe[AgentEvent, Turn]) -> PipeEnd[Turn]:
    """Wait for the end of the turn, through any further cancellation."""
    while True:
        try:
            item = await pipe.get()
        except asyncio.CancelledError:
            continue
        if isinstance(item, PipeEnd):
            return item


class AsyncSession:
    """A :class:`~agentshim.session.Session` for asyncio: its turns awaitable, its events async.

    Each turn runs the synchronous session on a worker thread of its own, started when the
    turn starts and joined when it ends; the loop is never blocked on it. Events cross to the
    loop through a bounded pipe: a consumer slower than the agent slows the turn down instead
    of buffering without limit. Event handlers (the agent's and a turn's ``on_event``) run on
    the loop and may be coroutine functions. Use it as ``async with agent.start_session(...)
    as session:``; leaving the block closes it.
    """

    def __init__(
        self,
        session: Session,
        *,
        event_handlers: Sequence[Emit] = (),
        capacity: int = DEFAULT_CAPACITY,
    ) -> None:
        self._session = session
        self._handlers = tuple(event_handlers)
        self._capacity = capacity

    @property
    def session(self) -> Session:
        """The synchronous Session underneath (its ids, checkpoints and settings)."""
        return self._session

    @property
    def session_id(self) -> str | None:
        """The provider conversation the next turn continues (None: it starts fresh)."""
        return self._session.session_id

    @property
    def last_turn_session_id(self) -> str | None:
        """The conversation the last finished turn ran in."""
        return self._session.last_turn_session_id

    @property
    def closed(self) -> bool:
        """True once ``close`` was called."""
        return self._session.closed

    def stream(
        self,
        request: TurnRequest | str | TurnTicket,
        *,
        expect_session_id: str | None = None,
        pin: bool = False,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
    ) -> TurnStream:
        """Run one turn and yield its events as they happen: ``async for event in ...``.

        The arguments are those of :meth:`Session.turn`; the turn starts when the iteration
        does, and ``stream.turn`` holds the Turn once it has ended.
        """
        return self._stream(request, None, expect_session_id, pin, (max_cost_usd, max_tokens))

    async def turn(
        self,
        request: TurnRequest | str | TurnTicket,
        *,
        on_event: AsyncEventSink | None = None,
        expect_session_id: str | None = None,
        pin: bool = False,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
    ) -> Turn:
        """Run one turn and return its :class:`Turn`; see :meth:`Session.turn`.

        ``on_event`` (a function of one event, a coroutine function, or an AgentEventHandler)
        runs on the loop after the agent's handlers. Cancelling the awaiting task interrupts the
        turn in band, waits for it to end (the CLI process included), then raises
        CancelledError; the session stays usable.

        Raises:
            AgentShimError: as :meth:`Session.turn`.
        """
        stream = self._stream(request, on_event, expect_session_id, pin, (max_cost_usd, max_tokens))
        iterator = stream.__aiter__()
        try:
            async for _ in iterator:
                pass
        finally:
            await stream.aclose()
        return stream.turn

    def _stream(
        self,
        request: TurnRequest | str | TurnTicket,
        on_event: AsyncEventSink | None,
        expect_session_id: str | None,
        pin: bool,
        limits: tuple[float | None, int | None],
    ) -> TurnStream:
        handlers = list(self._handlers)
        if on_event is not None:
            handlers.append(event_callback("on_event", on_event))
        session = self._session
        # Prepared here, on the loop, so an interrupt that comes before the worker thread
        # reaches the turn still finds it (and the turn then runs nothing).
        ticket = (
            request
            if isinstance(request, TurnTicket)
            else session.prepare_turn(request, expect_session_id=expect_session_id, pin=pin)
        )

        def run(emit: Emit) -> Turn:
            return session.turn(ticket, on_event=emit, max_cost_usd=limits[0], max_tokens=limits[1])

        return TurnStream(self, run, handlers, self._capacity)

    async def interrupt(self) -> None:
        """Cut the running turn short, as :meth:`Session.interrupt` does."""
        await in_thread("interrupt", self._session.interrupt)

    async def steer(self, text: str) -> None:
        """Send ``text`` into the running turn, as :meth:`Session.steer` does.

        Raises:
            ProviderCapabilityError, NoRunningTurnError: as :meth:`Session.steer`.
        """
        await in_thread("steer", lambda: self._session.steer(text))

    async def close(self) -> None:
        """Close the session, as :meth:`Session.close` does, without blocking the loop."""
        await in_thread("close", self._session.close)

    async def __aenter__(self) -> AsyncSession:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
