"""A FakeExecutor that plays contract turns in Claude Code's real stream format."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence

from agentshim.cli_agent import CliAgent
from agentshim.execution.executor import CommandRequest
from agentshim.testing import FakeExecutor, FakeRun, scripted_turn
from agentshim.testing.session_contracts import ContractTurn

PROVIDER = "claude"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home"}


def resumed_id(request: CommandRequest) -> str | None:
    argv = list(request.argv)
    return argv[argv.index("--resume") + 1] if "--resume" in argv else None


class UntilStopped(Sequence[str]):
    """Lines that arrive only once the run's handle is stopped: a CLI that works until killed."""

    def __init__(self, executor: FakeExecutor, limit_s: float = 10.0) -> None:
        self._executor = executor
        self._limit = limit_s

    def __iter__(self) -> Iterator[str]:
        handle = self._executor.handles[-1]
        deadline = time.monotonic() + self._limit
        while handle.stopped_code() is None and time.monotonic() < deadline:
            time.sleep(0.005)
        return iter(())

    def __len__(self) -> int:
        return 0

    def __getitem__(self, index: int) -> str:  # type: ignore[override]
        raise IndexError(index)


class ScriptedClaude:
    """Serves one FakeRun per turn: a scripted Claude turn, or one that runs until stopped."""

    def __init__(self, turns: Sequence[ContractTurn]) -> None:
        self._turns = list(turns)
        self._fresh = 0
        self.executor = FakeExecutor(self._next)

    def _next(self, request: CommandRequest) -> FakeRun:
        turn = self._turns.pop(0)
        session_id = resumed_id(request)
        if session_id is None:
            self._fresh += 1
            session_id = f"sess-{self._fresh}"
        if turn.hang:
            return FakeRun(stdout=UntilStopped(self.executor))
        return scripted_turn(PROVIDER, text=turn.text, session_id=session_id)

    def agent(self) -> CliAgent:
        return CliAgent(PROVIDER, executor=self.executor, env=ENV)
