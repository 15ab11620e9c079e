"""How late a ticker task runs while 50 turns stream their events through one event loop.

A ticker sleeps 1 ms at a time and records how late each wake-up is (loop time). It runs
once on an idle loop (the baseline) and once while 50 AsyncSessions run turns back to back.
Each turn emits an event every ``PACE_S`` seconds (a CLI streaming a fast model: 200 events a
second per turn, 10,000 a second in all), through the bounded pipe to a consumer on the
loop. Reported: the p50/p99/max lateness of both runs and the ratio of the p99s. Target:
busy p99 <= 5 ms. ``flood`` instead emits every event at once (CPU-bound producers: the
figure then measures GIL contention between 51 busy threads, not the pipe).
"""

from __future__ import annotations

import asyncio
import statistics
import sys

from agentshim.aio import AsyncAgent
from agentshim.core.conversation import ConversationSpec, TurnStop
from agentshim.core.events import AssistantText, Emit
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.profile import ProviderProfile
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.testing import FAKE_PROFILE, FakeOutcome, FakeTransport

SESSIONS = 50
EVENTS = tuple(AssistantText(f"part {n} ", delta=True) for n in range(200))
SECONDS = 3.0
TICK_S = 0.001
PACE_S = 0.005


class PacedConversation:
    def __init__(self, number: int) -> None:
        self.session_id: str | None = f"paced-{number}"

    def turn(self, request: TurnRequest, emit: Emit, stop: TurnStop | None = None) -> TurnResult:
        for event in EVENTS[:50]:
            if stop is not None and stop.wait(PACE_S):
                break
            emit(event)
        return TurnResult(
            text="done", structured_output=None, session_id=self.session_id, resumed=False
        )

    def interrupt(self) -> None:
        pass

    def close(self) -> None:
        pass


class PacedTransport:
    def __init__(self) -> None:
        self.opened = 0

    @property
    def profile(self) -> ProviderProfile:
        return FAKE_PROFILE

    def open(self, spec: ConversationSpec) -> PacedConversation:
        self.opened += 1
        return PacedConversation(self.opened)


async def ticker(seconds: float) -> list[float]:
    loop = asyncio.get_running_loop()
    late: list[float] = []
    end = loop.time() + seconds
    while loop.time() < end:
        before = loop.time()
        await asyncio.sleep(TICK_S)
        late.append(loop.time() - before - TICK_S)
    return late


async def busy(seconds: float, flood: bool) -> tuple[list[float], int]:
    transport = (
        FakeTransport(lambda call: FakeOutcome.success("done", events=EVENTS))
        if flood
        else PacedTransport()
    )
    agent = AsyncAgent(
        transport, permissions=NativePermissions.bypass(), approvals=ApprovalPolicy.DENY
    )
    stop = asyncio.Event()
    turns = 0

    async def worker() -> None:
        nonlocal turns
        async with agent.start_session() as session:
            while not stop.is_set():
                async for _ in session.stream("go"):
                    pass
                turns += 1

    workers = [asyncio.create_task(worker()) for _ in range(SESSIONS)]
    late = await ticker(seconds)
    stop.set()
    await asyncio.gather(*workers)
    return late, turns


def summary(late: list[float]) -> tuple[float, float, float]:
    ordered = sorted(late)
    p99 = ordered[int(len(ordered) * 0.99) - 1]
    return statistics.median(ordered) * 1000, p99 * 1000, ordered[-1] * 1000


def main() -> int:
    idle = asyncio.run(ticker(SECONDS))
    late, turns = asyncio.run(busy(SECONDS, flood="flood" in sys.argv[1:]))
    i50, i99, imax = summary(idle)
    b50, b99, bmax = summary(late)
    print(f"idle  p50_ms={i50:.3f}  p99_ms={i99:.3f}  max_ms={imax:.3f}")
    print(f"busy  p50_ms={b50:.3f}  p99_ms={b99:.3f}  max_ms={bmax:.3f}  turns={turns}")
    print(f"ratio p99_busy/p99_idle={b99 / max(i99, 1e-6):.2f}")
    return 0 if b99 <= 5.0 else 1


if __name__ == "__main__":
    sys.exit(main())
