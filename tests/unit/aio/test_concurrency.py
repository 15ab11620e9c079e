"""Many turns on one loop: the loop stays responsive, threads come and go with their turns."""

from __future__ import annotations

import asyncio
import importlib.util
import threading

import pytest

from agentshim.core.events import AgentEvent, AssistantText
from agentshim.session import Turn
from agentshim.testing import FakeOutcome
from agentshim.testing.claude_stream import ClaudePeerTurn

from .helpers import fake_agent, stream_agent, turn_threads

TURNS = 50
TICK_S = 0.01


def test_concurrent_turns_on_fake_processes_each_get_their_own_answer() -> None:
    baseline = set(threading.enumerate())  # threads of earlier tests may still end meanwhile

    async def one(number: int) -> Turn:
        agent, _ = stream_agent([ClaudePeerTurn(f"answer {number}")])
        async with agent.start_session() as session:
            return await session.turn(f"question {number}")

    async def main() -> list[Turn]:
        return await asyncio.gather(*(one(n) for n in range(20)))

    turns = asyncio.run(main())
    assert [t.result.text for t in turns] == [f"answer {n}" for n in range(20)]
    assert set(threading.enumerate()) <= baseline, "a thread outlived its turn"


def test_the_loop_keeps_ticking_while_fifty_turns_run() -> None:
    """A ticker's ticks keep pace with loop time while 50 turns run on worker threads.

    Were a turn to run on the loop, the ticker would not tick at all until it ended (the turns
    here end only when interrupted, after the ticker's ticks). The bound is deliberately loose:
    a quarter of the ticks the loop's own clock allows; benchmarks/aio_lag.py measures it.
    """
    baseline = set(threading.enumerate())

    async def main() -> tuple[int, float, list[Turn]]:
        agent, _ = fake_agent([FakeOutcome.hang() for _ in range(TURNS)])
        sessions = [agent.start_session() for _ in range(TURNS)]
        started = 0
        all_started = asyncio.Event()

        def on_event(event: AgentEvent) -> None:
            nonlocal started
            started += 1
            if started == TURNS:
                all_started.set()

        tasks = [asyncio.create_task(s.turn("go", on_event=on_event)) for s in sessions]
        await all_started.wait()
        loop = asyncio.get_running_loop()
        begin = loop.time()
        ticks = 0
        while ticks < 40:
            await asyncio.sleep(TICK_S)
            ticks += 1
        elapsed = loop.time() - begin
        await asyncio.gather(*(s.interrupt() for s in sessions))
        turns = await asyncio.gather(*tasks)
        await asyncio.gather(*(s.close() for s in sessions))
        return ticks, elapsed, turns

    ticks, elapsed, turns = asyncio.run(main())
    assert all(t.result.interrupted for t in turns)
    assert ticks >= 0.25 * (elapsed / TICK_S), f"{ticks} ticks in {elapsed:.3f} s of loop time"
    assert set(threading.enumerate()) <= baseline
    assert not turn_threads()


def test_a_slow_consumer_holds_the_turn_back_instead_of_buffering() -> None:
    events = tuple(AssistantText(f"part {n}", delta=True) for n in range(20))

    async def main() -> tuple[bool, Turn]:
        agent, _ = fake_agent([FakeOutcome.success("done", events=events)], event_capacity=2)
        async with agent.start_session() as session:
            stream = session.stream("go")
            iterator = stream.__aiter__()
            await iterator.__anext__()
            # Give the worker every chance to run ahead; it must stay blocked on the pipe.
            for _ in range(20):
                await asyncio.sleep(0.005)
            held = bool(turn_threads())
            rest = [event async for event in iterator]
            assert len(rest) > len(events)
            return held, stream.turn

    held, turn = asyncio.run(main())
    assert held, "the turn ended while its consumer had read one event"
    assert turn.result.text == "done"


@pytest.mark.skipif(importlib.util.find_spec("anyio") is None, reason="anyio is not installed")
def test_turns_run_under_anyio_on_asyncio() -> None:
    import anyio

    async def main() -> str:
        agent, _ = stream_agent([ClaudePeerTurn("from anyio")])
        async with agent.start_session() as session:
            return (await session.turn("hi")).result.text

    assert anyio.run(main, backend="asyncio") == "from anyio"
