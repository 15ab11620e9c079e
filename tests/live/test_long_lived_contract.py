"""Live: the shipped long-lived conversation contract, on each real pinned CLI.

:class:`~agentshim.testing.long_lived_contract.LongLivedConversationContract` (and the
conversation and transport contracts it inherits) run on every long-lived transport's real
CLI, offline against the model server: the CLI killed mid-turn and while idle, a silent turn,
a turn over its budget, an interrupt the CLI never reads (its process group stopped), steer
with no turn, refused approvals and close. The rig sees what an operator would: the CLI
processes it spawned, and the model requests the CLI sent (a prompt reached the CLI when the
model server holds its request).

Run with ``pytest tests/live/test_long_lived_contract.py``; a CLI's class is skipped when its
pinned binary is not installed.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from agentshim.acp.client import AcpTransport
from agentshim.acp.dialect import AcpDialect
from agentshim.core.conversation import Transport, TransportKind
from agentshim.core.permissions import NativePermissions
from agentshim.doctor.model_server import Hang, Match, Message, Rule, Text, ToolCall
from agentshim.providers import get_plugin
from agentshim.providers.claude.stream_transport import ClaudeStreamTransport
from agentshim.providers.claude.tui_transport import ClaudeTuiTransport
from agentshim.providers.codex.app_server.transport import CodexAppServerTransport
from agentshim.providers.copilot.acp import COPILOT_ACP
from agentshim.providers.gemini.acp import GEMINI_ACP
from agentshim.providers.opencode.acp import OPENCODE_ACP
from agentshim.providers.pi.rpc_transport import PiRpcTransport
from agentshim.testing.long_lived_contract import (
    PROMPT_MARK,
    LongLivedCapability,
    LongLivedConversationContract,
)
from agentshim.testing.session_contracts import ContractTurn
from agentshim.transport.conversation import ProcessOptions
from agentshim.transport.installed import InstalledCli

from .stream_contracts import (
    ContractRig,
    claude_seed,
    codex_script,
    codex_seed,
    codex_template,
    contract_test,
    pi_seed,
    seeded_script,
)
from .streams import NEEDS_PROC, CountingExecutor, StreamRig, alive, exited, stream_rig, wait_for

pytestmark = NEEDS_PROC


def marked_rules(turns: Sequence[ContractTurn], write: str) -> tuple[Rule, ...]:
    """The answers to the contract's own prompts (they carry PROMPT_MARK), one per turn in order.

    An asking turn first calls the shell tool with ``write`` (a command the CLI asks about),
    then answers once the (refused) result is back.
    """
    rules: list[Rule] = []
    for turn in turns:
        if turn.ask:
            call = Message((Text("Writing it."), ToolCall(command=write)))
            asked = Match(user_text_contains=PROMPT_MARK, last_input_is_tool_result=False)
            rules.append(Rule(match=asked, respond=call, times=1))
            after = Match(user_text_contains=PROMPT_MARK, last_input_is_tool_result=True)
            rules.append(Rule(match=after, respond=Text(turn.text), times=1))
            continue
        answer = Hang(60.0) if turn.hang else Text(turn.text)
        rules.append(Rule(match=Match(user_text_contains=PROMPT_MARK), respond=answer, times=1))
    return tuple(rules)


@pytest.fixture(scope="class")
def rig(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StreamRig]:
    """The class's pinned CLI set up offline, and the model server its scenarios share."""
    yield from stream_rig(request.cls.provider, tmp_path_factory, request.cls.kind)


@pytest.fixture(scope="class")
def codex_thread(rig: StreamRig) -> Path:
    """The rollout of one real Codex thread, copied to make the threads a scenario resumes."""
    return codex_template(rig)


@pytest.fixture
def contract_rig(
    rig: StreamRig, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[ContractRig]:
    """One scenario's work dir and conversations; nothing of the run left after it."""
    contract: LiveLongLivedContract = request.instance
    script = contract.script
    write = contract.write_command(rig)

    def both(turns: Sequence[ContractTurn]) -> tuple[Rule, ...]:
        return (*marked_rules(turns, write), *script(turns))

    yield from contract_test(
        rig, request, monkeypatch, contract.seed, both, pin_cwd=contract.pin_cwd
    )


class LiveLongLivedContract(LongLivedConversationContract):
    """The long-lived contract on the real CLI of ``provider``, built by :meth:`build`."""

    provider: ClassVar[str]
    kind: ClassVar[TransportKind] = TransportKind.LONG_LIVED
    # Whether every conversation names its cwd (a CLI on a terminal does not take the test's).
    pin_cwd: ClassVar[bool] = False
    # A cold start of a real CLI on a busy machine takes seconds.
    io_timeout: ClassVar[float] = 60.0
    short_s: ClassVar[float] = 3.0
    # The model server answering the CLI runs in this process, a hung request held open.
    rig_in_process: ClassVar[bool] = True
    # Nothing makes a real CLI print lines outside its protocol.
    capabilities: ClassVar[LongLivedCapability] = (
        LongLivedCapability.ALL & ~LongLivedCapability.FOREIGN_LINES
    )

    contract: ContractRig

    def build(self, cli: InstalledCli, options: ProcessOptions) -> Transport:
        """The transport under test on ``cli``."""
        raise NotImplementedError

    def script(self, turns: Sequence[ContractTurn]) -> tuple[Rule, ...]:
        """The model's answers to the inherited contracts' turns."""
        return seeded_script(turns)

    def seed(self, contract: ContractRig, session_id: str) -> None:
        """Make the CLI hold conversation ``session_id`` (the inherited resume scenarios)."""
        raise NotImplementedError

    def write_command(self, rig: StreamRig) -> str:
        """The shell command an approval scenario's turn asks to run: one that writes."""
        del rig
        return "touch contract.txt"

    @pytest.fixture(autouse=True)
    def _live(self, contract_rig: ContractRig) -> None:
        self.contract = contract_rig
        self.executors: list[CountingExecutor] = []
        self.hang_rules: frozenset[int] = frozenset()
        self.first_request = 0
        self.hangs_seen = 0

    def make_transport(
        self, turns: Sequence[ContractTurn], options: ProcessOptions | None = None
    ) -> Transport:
        rig = self.contract.rig
        self.contract.play(turns)
        rules = self.contract.script(turns)
        self.hang_rules = frozenset(i for i, r in enumerate(rules) if isinstance(r.respond, Hang))
        self.first_request = len(rig.server.requests)
        self.hangs_seen = 0
        executor = CountingExecutor()
        self.executors.append(executor)
        plugin = get_plugin(rig.provider)
        cli = InstalledCli.find(
            plugin.create_provider(),
            executor,
            dict(rig.cli.env),
            model=rig.cli.model,
            check_timeout=60.0,
        )
        return self.contract.seeding(self.build(cli, options or ProcessOptions()))

    def _pids(self) -> list[int]:
        return [p.pid for e in self.executors for _, p in e.spawned if alive(p.pid)]

    def kill_cli(self) -> None:
        # An operator's kill -9 of the CLI's group (a launcher script and the binary it runs),
        # waited out until the transport's side of it can see the death.
        pid = self._pids()[-1]
        os.killpg(pid, signal.SIGKILL)
        wait_for(lambda: exited(pid), 10.0, "the CLI dying")

    def cli_processes(self) -> int:
        return len(self._pids())

    def deafen_cli(self) -> None:
        os.killpg(self._pids()[-1], signal.SIGSTOP)

    def wait_for_prompt(self, timeout: float) -> bool:
        """True once the model server holds one more of this transport's hung requests."""
        server = self.contract.rig.server
        deadline = time.monotonic() + timeout
        while True:
            logged = server.requests
            mine = logged[self.first_request :] if len(logged) > self.first_request else ()
            hung = sum(1 for r in mine if r.rule_index in self.hang_rules)
            if hung > self.hangs_seen:
                self.hangs_seen = hung
                return True
            left = deadline - time.monotonic()
            if left <= 0 or not server.wait_for_requests(len(logged) + 1, left):
                return False


class TestClaudeStream(LiveLongLivedContract):
    """Claude Code's stream-json transport."""

    provider = "claude"

    def build(self, cli: InstalledCli, options: ProcessOptions) -> Transport:
        return ClaudeStreamTransport(cli, **options)

    def seed(self, contract: ContractRig, session_id: str) -> None:
        claude_seed(contract, session_id)

    def write_command(self, rig: StreamRig) -> str:
        # Under workspace_write Claude Code lets a `touch` inside its cwd run unasked.
        return f"touch {rig.root / 'outside-the-workspace.txt'}"


class TestClaudeTui(TestClaudeStream):
    """Claude Code on a terminal."""

    kind = TransportKind.TUI
    pin_cwd = True
    # A prompt typed into the terminal cannot be followed by another mid-turn.
    capabilities = LiveLongLivedContract.capabilities & ~LongLivedCapability.STEER

    def build(self, cli: InstalledCli, options: ProcessOptions) -> Transport:
        return ClaudeTuiTransport(cli, **options)


class TestCodexAppServer(LiveLongLivedContract):
    """Codex's app-server transport."""

    provider = "codex"

    template: Path

    @pytest.fixture(autouse=True)
    def _template(self, codex_thread: Path) -> None:
        self.template = codex_thread

    def build(self, cli: InstalledCli, options: ProcessOptions) -> Transport:
        return CodexAppServerTransport(cli, **options)

    def script(self, turns: Sequence[ContractTurn]) -> tuple[Rule, ...]:
        return codex_script(turns)

    def seed(self, contract: ContractRig, session_id: str) -> None:
        codex_seed(self.template, contract, session_id)


class TestPiRpc(LiveLongLivedContract):
    """Pi's rpc transport."""

    provider = "pi"
    # Pi has no approval flow: it runs every tool it calls.
    capabilities = LiveLongLivedContract.capabilities & ~LongLivedCapability.APPROVALS

    def build(self, cli: InstalledCli, options: ProcessOptions) -> Transport:
        return PiRpcTransport(cli, **options)

    def seed(self, contract: ContractRig, session_id: str) -> None:
        pi_seed(contract, session_id)

    def unsupported_permissions(self) -> NativePermissions | None:
        return NativePermissions.read_only()


class AcpLive(LiveLongLivedContract):
    """An ACP agent's transport; ACP has no steer."""

    capabilities = LiveLongLivedContract.capabilities & ~LongLivedCapability.STEER
    dialect: ClassVar[AcpDialect]

    def build(self, cli: InstalledCli, options: ProcessOptions) -> Transport:
        return AcpTransport(cli, self.dialect, **options)

    def seed(self, contract: ContractRig, session_id: str) -> None:
        pytest.skip(f"{self.provider} names its sessions itself: none can be made under an id")


class TestOpencodeAcp(AcpLive):
    """opencode's ACP transport."""

    provider = "opencode"
    dialect = OPENCODE_ACP


class TestCopilotAcp(AcpLive):
    """Copilot CLI's ACP transport."""

    provider = "copilot"
    dialect = COPILOT_ACP


class TestGeminiAcp(AcpLive):
    """Gemini CLI's ACP transport."""

    provider = "gemini"
    dialect = GEMINI_ACP
