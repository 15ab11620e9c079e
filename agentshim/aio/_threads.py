"""One short-lived thread for one blocking call, awaited without blocking the loop."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from typing import TypeVar

__all__ = ["in_thread"]

R = TypeVar("R")


async def in_thread(name: str, call: Callable[[], R]) -> R:
    """Run ``call`` on a thread of its own, await its result, and join the thread.

    The thread exists only while ``call`` runs: no pool is left behind. Cancelling the
    awaiting task does not cut ``call`` short (a thread cannot be preempted): the task waits
    for it to end and then raises CancelledError.
    """
    loop = asyncio.get_running_loop()
    done: asyncio.Future[R] = loop.create_future()

    def settle(value: R | None, error: BaseException | None) -> None:
        if done.cancelled():
            return
        if error is not None:
            done.set_exception(error)
        else:
            done.set_result(value)  # type: ignore[arg-type]

    def run() -> None:
        value: R | None = None
        error: BaseException | None = None
        try:
            value = call()
        except BaseException as raised:
            error = raised
        try:
            loop.call_soon_threadsafe(settle, value, error)
        except RuntimeError:
            pass  # the loop is closed: nobody waits for the answer

    thread = threading.Thread(target=run, name=f"agentshim-aio-{name}", daemon=True)
    thread.start()
    cancelled = False
    try:
        while True:
            try:
                result = await asyncio.shield(done)
                break
            except asyncio.CancelledError:
                if done.done():
                    raise
                cancelled = True
    finally:
        thread.join()
    if cancelled:
        raise asyncio.CancelledError
    return result
