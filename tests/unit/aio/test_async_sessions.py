"""Driving sessions from asyncio: awaited turns, streamed events, cancellation, handlers."""

from __future__ import annotations

import asyncio
import threading

import pytest

from agentshim.aio import tool
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.errors import FailureKind, InvalidRequestError, TurnFailedError
from agentshim.core.events import (
    AgentEvent,
    ApprovalAnswered,
    AssistantText,
    RunFinished,
    ToolCall,
    ToolResult,
)
from agentshim.core.permissions import NativePermissions
from agentshim.session import Turn
from agentshim.testing import FakeOutcome
from agentshim.testing.claude_stream import ClaudePeerTurn

from .helpers import SLEEP, TOUCH, fake_agent, stream_agent, turn_threads


def test_an_awaited_turn_returns_the_turn_and_events_reach_a_coroutine_handler() -> None:
    seen: list[AgentEvent] = []

    async def collect(event: AgentEvent) -> None:
        await asyncio.sleep(0)
        seen.append(event)

    async def main() -> Turn:
        agent, _ = stream_agent([ClaudePeerTurn("hello")])
        async with agent.start_session() as session:
            return await session.turn("hi", on_event=collect)

    turn = asyncio.run(main())
    assert turn.result.text == "hello"
    assert turn.session_id is not None
    assert [e.text for e in seen if isinstance(e, AssistantText)] == ["hello"]
    assert not turn_threads()


def test_a_stream_yields_events_as_they_happen_and_the_turn_afterwards() -> None:
    async def main() -> tuple[list[AgentEvent], Turn]:
        agent, _ = stream_agent([ClaudePeerTurn("one"), ClaudePeerTurn("two")])
        async with agent.start_session() as session:
            await session.turn("first")
            stream = session.stream("second")
            events = [event async for event in stream]
            return events, stream.turn

    events, turn = asyncio.run(main())
    assert turn.result.text == "two"
    assert [e.text for e in events if isinstance(e, AssistantText)] == ["two"]


def test_a_failed_turn_raises_its_error_after_its_events() -> None:
    seen: list[AgentEvent] = []

    async def main() -> None:
        agent, _ = fake_agent([FakeOutcome.failure(FailureKind.AUTH, detail="no key")])
        async with agent.start_session() as session:
            async for event in session.stream("go"):
                seen.append(event)

    with pytest.raises(TurnFailedError, match="no key"):
        asyncio.run(main())

    assert any(isinstance(e, RunFinished) for e in seen)


def test_cancelling_the_awaiting_task_interrupts_the_turn_and_the_next_turn_works() -> None:
    async def main() -> tuple[Turn, int]:
        agent, executor = stream_agent(
            [ClaudePeerTurn(tool="Bash", tool_input=SLEEP, hang=True), ClaudePeerTurn("next")]
        )
        async with agent.start_session() as session:
            running = asyncio.Event()

            def on_event(event: AgentEvent) -> None:
                if isinstance(event, ToolCall):
                    running.set()

            task = asyncio.create_task(session.turn("slow", on_event=on_event))
            await running.wait()
            task.cancel()
            with pytest.raises(asyncio.CancelledError):
                await task
            assert not turn_threads(), "the turn's thread outlived the cancelled task"
            following = await session.turn("again")
        assert all(process.stdin_closed for process in executor.processes)
        return following, len(executor.spawned)

    following, spawned = asyncio.run(main())
    assert following.result.text == "next"
    assert spawned == 1, "the interrupt was not in band: the process was replaced"


def test_leaving_a_stream_early_interrupts_the_turn() -> None:
    async def main() -> Turn:
        agent, _ = fake_agent([FakeOutcome.hang(), FakeOutcome.success("after")])
        async with agent.start_session() as session:
            stream = session.stream("go")
            async with stream:
                async for _ in stream:
                    break
            assert stream.turn.result.interrupted
            return await session.turn("again")

    assert asyncio.run(main()).result.text == "after"
    assert not turn_threads()


@pytest.mark.parametrize(("allow", "answer"), [(True, "handler"), (False, "handler")])
def test_a_coroutine_approval_handler_decides_on_the_loop(allow: bool, answer: str) -> None:
    asked: list[tuple[str, bool]] = []

    async def decide(request: ApprovalRequest) -> ApprovalDecision:
        await asyncio.sleep(0)
        asked.append((request.tool, threading.current_thread() is threading.main_thread()))
        return ApprovalDecision.allow() if allow else ApprovalDecision.deny("not today")

    async def main() -> list[AgentEvent]:
        agent, _ = stream_agent(
            [ClaudePeerTurn("done", tool="Bash", tool_input=TOUCH, ask=True)],
            permissions=NativePermissions.workspace_write(),
            approvals=decide,
        )
        events: list[AgentEvent] = []
        async with agent.start_session() as session:
            await session.turn("touch it", on_event=events.append)
        return events

    events = asyncio.run(main())
    assert asked == [("Bash", True)], "the handler did not run on the loop's thread"
    (answered,) = [e for e in events if isinstance(e, ApprovalAnswered)]
    assert (answered.allowed, answered.decided_by) == (allow, answer)
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert ("not today" in result.stdout + result.stderr) is not allow


def test_a_coroutine_tool_runs_on_the_loop() -> None:
    ran_on: list[bool] = []

    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        await asyncio.sleep(0)
        ran_on.append(threading.current_thread() is threading.main_thread())
        return f"value of {key}"

    async def main() -> list[AgentEvent]:
        agent, _ = stream_agent(
            [ClaudePeerTurn("done", tool="mcp__agentshim__lookup", tool_input={"key": "k"})]
        )
        events: list[AgentEvent] = []
        async with agent.start_session(tools=[lookup]) as session:
            await session.turn("look", on_event=events.append)
        return events

    events = asyncio.run(main())
    assert ran_on == [True]
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.stdout == "value of k"


def test_a_coroutine_tool_outside_an_async_turn_is_a_typed_error() -> None:
    @tool
    async def lookup(key: str) -> str:
        """Look a key up."""
        return key

    with pytest.raises(InvalidRequestError, match="AsyncSession"):
        lookup.function(key="k")


def test_a_raising_coroutine_handler_interrupts_the_turn_and_raises() -> None:
    async def explode(event: AgentEvent) -> None:
        raise RuntimeError("handler broke")

    async def main() -> Turn:
        agent, _ = fake_agent([FakeOutcome.hang(), FakeOutcome.success("after")])
        async with agent.start_session() as session:
            with pytest.raises(RuntimeError, match="handler broke"):
                await session.turn("go", on_event=explode)
            return await session.turn("again")

    assert asyncio.run(main()).result.text == "after"


def test_steer_and_interrupt_are_awaitable() -> None:
    async def main() -> tuple[Turn, list[str]]:
        agent, transport = fake_agent([FakeOutcome.hang()])
        async with agent.start_session() as session:
            started = asyncio.Event()

            def on_event(event: AgentEvent) -> None:
                started.set()

            task = asyncio.create_task(session.turn("go", on_event=on_event))
            await started.wait()
            await session.steer("also this")
            await session.interrupt()
            turn = await task
        return turn, transport.conversations[0].steered  # type: ignore[attr-defined]

    turn, steered = asyncio.run(main())
    assert turn.result.interrupted
    assert steered == ["also this"]


def test_a_spending_limit_stops_an_async_turn_with_the_typed_error() -> None:
    from agentshim.core.errors import SpendingLimitError

    async def main() -> Turn:
        agent, _ = stream_agent(
            [ClaudePeerTurn(tool="Bash", tool_input=SLEEP, hang=True), ClaudePeerTurn("next")],
            max_cost_usd=0.001,
        )
        async with agent.start_session() as session:
            with pytest.raises(SpendingLimitError):
                await session.turn("spend")
            return await session.turn("go on", max_cost_usd=1.0)

    assert asyncio.run(main()).result.text == "next"


def test_a_coroutine_tool_past_its_timeout_is_cancelled_and_the_turn_goes_on() -> None:
    cancelled: list[bool] = []

    @tool(timeout=0.2)
    async def lookup(key: str) -> str:
        """Never answers."""
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return key

    async def main() -> list[AgentEvent]:
        agent, _ = stream_agent(
            [ClaudePeerTurn("went on", tool="mcp__agentshim__lookup", tool_input={"key": "k"})]
        )
        events: list[AgentEvent] = []
        async with agent.start_session(tools=[lookup]) as session:
            turn = await session.turn("look", on_event=events.append)
        assert turn.result.text == "went on"
        return events

    events = asyncio.run(main())
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert result.failed
    assert cancelled == [True]
