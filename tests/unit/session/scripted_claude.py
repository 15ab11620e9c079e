"""A FakeExecutor that plays contract turns in Claude Code's real stream format."""

from __future__ import annotations

from collections.abc import Sequence

from agentshim.execution.executor import CommandRequest
from agentshim.providers import get_plugin
from agentshim.testing import FakeExecutor, FakeRun, scripted_turn
from agentshim.testing.session_contracts import ContractTurn
from agentshim.transport.installed import InstalledCli
from tests.unit.providers.fixtures import flag_value

PROVIDER = "claude"
ENV = {"PATH": "/usr/bin:/bin", "HOME": "/nonexistent-home"}


def resumed_id(request: CommandRequest) -> str | None:
    """The session a Claude run was told to resume, or None for a fresh one."""
    return flag_value(request.argv, "--resume")


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
            return FakeRun(until_stopped=True)
        return scripted_turn(PROVIDER, text=turn.text, session_id=session_id)

    def cli(self) -> InstalledCli:
        return InstalledCli.find(get_plugin(PROVIDER).create_provider(), self.executor, ENV)
