"""Live: concurrent AsyncSession turns on Claude Code's stream transport, offline.

Run with ``pytest tests/live/test_claude_aio.py``; skipped when the pinned claude is not
installed.
"""

from __future__ import annotations

import asyncio
import threading

from agentshim.aio import AsyncAgent
from agentshim.doctor.model_server import Rule, Text
from agentshim.session import Turn

from .claude_checks import LONG_TOOL, LONG_TOOL_SEEN
from .streams import HELLO, NEEDS_PROC, Live, suite_fixtures, tool_then_text

pytestmark = NEEDS_PROC

rig, live = suite_fixtures("claude")

SESSIONS = 4


def test_concurrent_turns_each_on_their_own_process(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    baseline = threading.active_count()

    async def one(agent: AsyncAgent) -> Turn:
        async with agent.start_session(str(live.work)) as session:
            return await session.turn("Say hello.")

    async def main() -> list[Turn]:
        agent = AsyncAgent(live.rig.provider, **live.agent_options())
        return await asyncio.gather(*(one(agent) for _ in range(SESSIONS)))

    turns = asyncio.run(main())
    assert [t.result.text for t in turns] == [HELLO] * SESSIONS
    assert len({t.session_id for t in turns}) == SESSIONS
    assert len(live.executor.spawned) == SESSIONS
    assert threading.active_count() == baseline


def test_cancelling_the_awaiting_task_stops_the_tool_and_the_next_turn_works(live: Live) -> None:
    live.script(*tool_then_text(LONG_TOOL))

    async def main() -> Turn:
        agent = AsyncAgent(live.rig.provider, **live.agent_options())
        async with agent.start_session(str(live.work)) as session:
            task = asyncio.create_task(session.turn("Sleep for a while."))
            loop = asyncio.get_running_loop()
            started = loop.time()
            while not live.running(LONG_TOOL_SEEN):
                await asyncio.sleep(0.05)
                assert not task.done()
                assert loop.time() < started + 60, "the tool never started"
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            else:
                raise AssertionError("the turn was not cancelled")
            assert not live.running(LONG_TOOL_SEEN), "the tool outlived the cancelled turn"
            live.script(Rule(respond=Text(HELLO)))
            return await session.turn("Now just say hello.")

    after = asyncio.run(main())
    assert after.result.text == HELLO
    assert len(live.executor.spawned) == 1
