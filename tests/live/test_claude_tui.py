"""Live: Claude Code's TUI transport on the real pinned binary, against the model server.

Every test runs ``Agent("claude", transport=TransportKind.TUI)`` on the real host executor:
one interactive ``claude`` per session on a pseudo-terminal, driven by its command hooks,
offline (``agentshim.testing.offline``), the model scripted per test. What is asserted is
what a user sees: results, errors and their kind, events, files the agent wrote, the
processes that ran (counted at ``spawn_pty``, found in ``/proc`` by the run's HOME).

Run with ``pytest tests/live/test_claude_tui.py -s``; skipped when the pinned claude is not
installed.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agentshim.agent import Agent
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import Conversation, ConversationSpec, Transport, TransportKind
from agentshim.core.errors import CliExitError, FailureKind
from agentshim.core.events import (
    AgentEvent,
    ApprovalAnswered,
    Lifecycle,
    ToolResult,
    TurnInterrupted,
)
from agentshim.core.events import ToolCall as ToolCallEvent
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.profile import ProviderProfile
from agentshim.session import Session
from agentshim.testing.model_server import (
    Hang,
    HttpError,
    Match,
    Message,
    ModelServer,
    RequestKind,
    Rule,
    Text,
    ToolCall,
)
from agentshim.testing.offline import OfflineCli, offline_cli
from agentshim.testing.session_contracts import (
    ContractTurn,
    ConversationContract,
    TransportContract,
)

from .binaries import require_binary
from .streams import Background, CountingExecutor, alive, run_processes, wait_for
from .suite import assert_nothing_left_running

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/environ").exists(), reason="the run's processes are found through /proc"
)

TURN_TIMEOUT = 120.0
PROMPT_RETURN_S = 5.0
SEEN_WITHIN_S = 60.0

HELLO = "Hello from the terminal."
AFTER_TOOL = "The command ran."
LONG_TOOL = "python3 -c 'import time; time.sleep(30)'"
LONG_TOOL_SEEN = "time.sleep(30)"


@dataclass(frozen=True)
class TuiRig:
    """The binary's offline setup and the server every test of this module shares."""

    server: ModelServer
    cli: OfflineCli
    root: Path
    binary: Path


@pytest.fixture(scope="module")
def tui_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TuiRig]:
    binary = require_binary("claude")
    root = tmp_path_factory.mktemp("live-claude-tui")
    with ModelServer() as server:
        cli = offline_cli("claude", server, root=root, bin_dir=binary.path.parent)
        yield TuiRig(server, cli, root, binary.path)


@dataclass
class Live:
    """One test's work directory, executor and agents."""

    rig: TuiRig
    work: Path
    executor: CountingExecutor
    events: list[AgentEvent] = field(default_factory=list[AgentEvent])

    @property
    def server(self) -> ModelServer:
        return self.rig.server

    def agent(
        self,
        *,
        permissions: NativePermissions | None = None,
        approvals: object = ApprovalPolicy.DENY,
    ) -> Agent:
        return Agent(
            "claude",
            permissions=permissions or NativePermissions.bypass(),
            approvals=approvals,  # type: ignore[arg-type]
            model=self.rig.cli.model,
            env=dict(self.rig.cli.env),
            executor=self.executor,
            transport=TransportKind.TUI,
            event_handlers=self.events.append,
            check_timeout=60.0,
        )

    def session(self, agent: Agent | None = None) -> Session:
        return (agent or self.agent()).start_session(str(self.work))

    def script(self, *rules: Rule) -> None:
        self.server.set_script(rules)

    def claude_pids(self) -> list[int]:
        return [p.pid for _, p in self.executor.spawned if alive(p.pid)]


@pytest.fixture
def live(tui_rig: TuiRig, request: pytest.FixtureRequest) -> Iterator[Live]:
    tui_rig.server.set_script(())
    tui_rig.server.clear_requests()
    work = tui_rig.root / "work" / request.node.name
    work.mkdir(parents=True)
    yield Live(tui_rig, work, CountingExecutor())
    assert_nothing_left_running(tui_rig.cli.home)


def _tool_then_text(command: str, text: str = AFTER_TOOL) -> tuple[Rule, ...]:
    return (
        Rule(
            match=Match(last_input_is_tool_result=False),
            respond=Message((Text("Running it."), ToolCall(command=command))),
        ),
        Rule(match=Match(last_input_is_tool_result=True), respond=Text(text)),
    )


def test_two_turns_run_on_one_process(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session() as session:
        started = time.monotonic()
        first = session.turn("Say hello.").result
        cold_s = time.monotonic() - started
        started = time.monotonic()
        second = session.turn("Say hello\x1b[201~ again.\r\nPlease.").result
        warm_s = time.monotonic() - started
    print(f"\nclaude tui: turn 1 (start-up, trust dialog) {cold_s:.2f} s; turn 2 {warm_s:.2f} s")
    assert first.text == second.text == HELLO
    assert len(live.executor.spawned) == 1, live.executor.argvs
    argv = live.executor.argvs[0]
    assert "-p" not in argv
    assert argv[1] == "--session-id"
    assert second.session_id == first.session_id == argv[2]
    assert not first.resumed
    assert second.resumed
    assert first.usage.tokens.input_tokens > 0
    assert "dialog_answered" in [e.kind for e in live.events if isinstance(e, Lifecycle)]
    sent = [r.facts.user_text for r in live.server.requests if "again" in r.facts.user_text]
    assert sent, "the second prompt never reached the model"
    assert "\x1b" not in sent[-1]
    assert "Please." in sent[-1]


def test_a_tool_turn_reports_the_call_and_its_result(live: Live) -> None:
    live.script(*_tool_then_text("echo tui-tool-output"))
    with live.session() as session:
        result = session.turn("Run echo.").result
    assert result.text == AFTER_TOOL
    calls = [e for e in live.events if isinstance(e, ToolCallEvent)]
    results = [e for e in live.events if isinstance(e, ToolResult)]
    assert [c.tool for c in calls] == ["Bash"]
    assert "tui-tool-output" in results[0].stdout


def test_a_401_turn_is_auth_within_ten_seconds(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO), times=1), Rule(respond=HttpError(401)))
    with live.session() as session:
        assert session.turn("Say hello.").result.text == HELLO
        started = time.monotonic()
        with pytest.raises(CliExitError) as caught:
            session.turn("Now fail.")
        took = time.monotonic() - started
    print(f"\nclaude tui: 401 turn classified in {took:.2f} s")
    assert caught.value.kind is FailureKind.AUTH
    assert "authentication_failed" in caught.value.detail
    assert took < 10.0


def test_interrupt_during_a_tool_returns_fast_and_the_process_takes_the_next_turn(
    live: Live,
) -> None:
    live.script(*_tool_then_text(LONG_TOOL))
    home = live.rig.cli.home
    with live.session() as session:
        running = Background(lambda: session.turn("Sleep for a while.").result)
        wait_for(lambda: bool(run_processes(home, LONG_TOOL_SEEN)), SEEN_WITHIN_S, "sleep 30")
        interrupted_at = time.monotonic()
        session.interrupt()
        result = running.join(PROMPT_RETURN_S + TURN_TIMEOUT)
        assert running.ended_at is not None
        took = running.ended_at - interrupted_at
        assert result.interrupted
        assert any(isinstance(e, TurnInterrupted) for e in live.events)
        assert took < PROMPT_RETURN_S, f"the interrupted turn took {took:.2f} s to return"
        wait_for(lambda: not run_processes(home, LONG_TOOL_SEEN), 5.0, "the sleep ending")
        live.script(Rule(respond=Text(HELLO)))
        after = session.turn("Now just say hello.").result
    assert after.text == HELLO
    assert not after.interrupted
    assert len(live.executor.spawned) == 1, live.executor.argvs


def test_interrupt_while_the_model_is_silent(live: Live) -> None:
    live.script(Rule(respond=Hang(60.0), times=1), Rule(respond=Text(HELLO)))
    with live.session() as session:
        running = Background(lambda: session.turn("Take your time.").result)
        wait_for(
            lambda: any(r.kind is RequestKind.MAIN for r in live.server.requests),
            SEEN_WITHIN_S,
            "the model request",
        )
        time.sleep(0.5)
        session.interrupt()
        assert running.join(PROMPT_RETURN_S + TURN_TIMEOUT).interrupted
        after = session.turn("Say hello.").result
    assert after.text == HELLO
    # The interrupted prompt came back into the input box; it must not ride along.
    last = [r.facts.user_text for r in live.server.requests if r.kind is RequestKind.MAIN][-1]
    assert "Take your time" not in last.split("Say hello")[-1]


def test_an_approval_handler_answers_through_the_permission_hook(live: Live) -> None:
    # acceptEdits (workspace_write) makes a touch inside the workspace without asking, so the
    # files go to a directory outside it, which the CLI asks about: its PermissionRequest hook
    # prints the handler's decision (allow, allow with rewritten input, deny).
    outside = live.work.parent / f"{live.work.name}-outside"
    outside.mkdir()
    seen: list[ApprovalRequest] = []

    def handler(request: ApprovalRequest) -> ApprovalDecision:
        seen.append(request)
        command = str(request.args.get("command", ""))
        if "denied.txt" in command:
            return ApprovalDecision.deny("not that one")
        if "rewrite-me.txt" in command:
            rewritten = command.replace("rewrite-me.txt", "rewritten.txt")
            return ApprovalDecision.allow({**request.args, "command": rewritten})
        return ApprovalDecision.allow()

    agent = live.agent(permissions=NativePermissions.workspace_write(), approvals=handler)
    with live.session(agent) as session:
        for name in ("denied.txt", "allowed.txt", "rewrite-me.txt"):
            live.script(*_tool_then_text(f"touch {outside / name}"))
            assert session.turn(f"Create {name}.").result.text.endswith(AFTER_TOOL)
    answers = [e for e in live.events if isinstance(e, ApprovalAnswered)]
    assert [a.allowed for a in answers] == [False, True, True]
    assert {a.decided_by for a in answers} == {"handler"}
    assert sorted(p.name for p in outside.iterdir()) == ["allowed.txt", "rewritten.txt"]
    assert [r.tool for r in seen] == ["Bash", "Bash", "Bash"]
    assert len(live.executor.spawned) == 1


def test_close_leaves_no_process_behind(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    home = live.rig.cli.home
    with live.session() as session:
        session.turn("Say hello.")
        (pid,) = live.claude_pids()
    wait_for(lambda: not alive(pid), PROMPT_RETURN_S, "the TUI process ending")
    kinds = [e.kind for e in live.events if isinstance(e, Lifecycle)]
    assert kinds.count("dialog_answered") == 1
    # Ctrl-C twice: the CLI exits 0 by itself (no signal was needed).
    ((_, process),) = live.executor.spawned
    assert process.wait(0) == 0
    assert not run_processes(home, "claude")


# -- the shared contracts, on the real CLI ---------------------------------------------

SEED_MARKER = "AGENTSHIM-CONTRACT-SEED"


def _contract_script(turns: Sequence[ContractTurn]) -> tuple[Rule, ...]:
    seed = Rule(match=Match(user_text_contains=SEED_MARKER), respond=Text("Seeded."))
    answers = [
        Rule(respond=Hang(60.0) if turn.hang else Text(turn.text), times=1) for turn in turns
    ]
    return (seed, *answers)


class _ContractRig:
    def __init__(self, rig: TuiRig, work: Path) -> None:
        self.rig = rig
        self.work = work
        self.opened: list[Conversation] = []
        self.transport = Agent(
            "claude",
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            model=rig.cli.model,
            env=dict(rig.cli.env),
            transport=TransportKind.TUI,
            check_timeout=60.0,
        ).transport

    def seed(self, session_id: str) -> None:
        argv = [str(self.rig.binary), "-p", "--session-id", session_id, "--output-format", "json"]
        argv += ["--dangerously-skip-permissions", f"{SEED_MARKER}: start the conversation."]
        subprocess.run(
            argv,
            cwd=self.work,
            env=dict(self.rig.cli.env),
            capture_output=True,
            timeout=TURN_TIMEOUT,
            check=True,
        )

    def open(self, spec: ConversationSpec) -> Conversation:
        if spec.resume_session_id is not None:
            self.seed(spec.resume_session_id)
        conversation = self.transport.open(spec)
        self.opened.append(conversation)
        return conversation


class _SeedingTransport:
    kind = TransportKind.TUI

    def __init__(self, rig: _ContractRig) -> None:
        self._rig = rig

    @property
    def profile(self) -> ProviderProfile:
        return self._rig.transport.profile

    def open(self, spec: ConversationSpec) -> Conversation:
        return self._rig.open(spec.__class__(**{**_fields(spec), "cwd": str(self._rig.work)}))


def _fields(spec: ConversationSpec) -> dict[str, object]:
    return {name: getattr(spec, name) for name in spec.__dataclass_fields__}


@pytest.fixture
def contract_rig(tui_rig: TuiRig, request: pytest.FixtureRequest) -> Iterator[_ContractRig]:
    tui_rig.server.set_script(())
    tui_rig.server.clear_requests()
    work = tui_rig.root / "contracts" / request.node.name
    work.mkdir(parents=True)
    rig = _ContractRig(tui_rig, work)
    yield rig
    for conversation in rig.opened:
        conversation.close()
    assert_nothing_left_running(tui_rig.cli.home)


class TestTuiConversationContract(ConversationContract):
    """The Conversation contract on real interactive Claude Code conversations."""

    io_timeout = 30.0

    @pytest.fixture(autouse=True)
    def _rig(self, contract_rig: _ContractRig) -> None:
        self.rig = contract_rig

    def make_conversation(
        self, turns: Sequence[ContractTurn], *, resume_session_id: str | None = None
    ) -> Conversation:
        self.rig.rig.server.set_script(_contract_script(turns))
        spec = ConversationSpec(
            cwd=str(self.rig.work),
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            resume_session_id=resume_session_id,
        )
        return self.rig.open(spec)


class TestTuiTransportContract(TransportContract):
    """The Transport contract on the real Claude Code TUI transport."""

    @pytest.fixture(autouse=True)
    def _rig(self, contract_rig: _ContractRig) -> None:
        self.rig = contract_rig

    def make_transport(self, turns: Sequence[ContractTurn]) -> Transport:
        self.rig.rig.server.set_script(_contract_script(turns))
        return _SeedingTransport(self.rig)
