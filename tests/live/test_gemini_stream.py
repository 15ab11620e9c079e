"""Live: Gemini CLI's ACP transport on the real pinned binary, against the model server.

Every test runs ``Agent("gemini", transport=TransportKind.STREAM)`` on the real
``HostCommandExecutor``: one long-lived ``gemini --acp`` process per session, offline
(``agentshim.testing.offline``), the model scripted per test. What is asserted is what a
user sees: results, errors, files the agent wrote, the processes that ran (counted at
``spawn``, found in ``/proc`` by the run's HOME) and what the model was sent.

Run with ``pytest tests/live/test_gemini_stream.py``; skipped when the pinned gemini is not
installed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agentshim.agent import Agent
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import Conversation, ConversationSpec, Transport, TransportKind
from agentshim.core.errors import (
    CliDiedError,
    CliExitError,
    FailureKind,
    ProviderCapabilityError,
    TurnStalledError,
)
from agentshim.core.events import AgentEvent, ApprovalAnswered, Lifecycle, TurnInterrupted
from agentshim.core.mcp import StdioMcpServer
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.profile import ProviderProfile
from agentshim.core.retry import RetryPolicy
from agentshim.core.turn import TurnRequest
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
from .streams import Background, CountingExecutor, run_processes, wait_for
from .suite import MCP_STUB, assert_nothing_left_running

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/environ").exists(), reason="the run's processes are found through /proc"
)

TURN_TIMEOUT = 120.0
#: How long an interrupted or killed turn may take to come back.
PROMPT_RETURN_S = 5.0
#: How long to wait for something the CLI starts (a tool's ``sleep``) to show up.
SEEN_WITHIN_S = 60.0
FAST_RETRY = {"retry-after-ms": "50"}

HELLO = "Hello from the stream."
AFTER_TOOL = "The command ran."


@dataclass(frozen=True)
class StreamRig:
    """The binary's offline setup and the server every test of this module shares."""

    server: ModelServer
    cli: OfflineCli
    root: Path
    binary: Path


@pytest.fixture(scope="module")
def stream_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamRig]:
    binary = require_binary("gemini")
    root = tmp_path_factory.mktemp("live-gemini-stream")
    with ModelServer() as server:
        cli = offline_cli("gemini", server, root=root, bin_dir=binary.path.parent)
        yield StreamRig(server, cli, root, binary.path)


@dataclass
class Live:
    """One test's work directory, executor and agents."""

    rig: StreamRig
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
        stall_timeout: float | None = None,
    ) -> Agent:
        return Agent(
            "gemini",
            permissions=permissions or NativePermissions.bypass(),
            approvals=approvals,  # type: ignore[arg-type]
            model=self.rig.cli.model,
            env=dict(self.rig.cli.env),
            executor=self.executor,
            transport=TransportKind.STREAM,
            event_handlers=self.events.append,
            check_timeout=60.0,
            stall_timeout=stall_timeout,
            # A failure is this suite's to see, not the session's to retry.
            retry=RetryPolicy(delays=()),
        )

    def session(self, agent: Agent | None = None, session_id: str | None = None) -> Session:
        agent = agent or self.agent()
        if session_id is not None:
            return agent.start_session(str(self.work), session_id=session_id)
        return agent.start_session(str(self.work))

    def script(self, *rules: Rule) -> None:
        self.server.set_script(rules)

    def lifecycle(self, kind: str) -> list[str]:
        return [e.detail for e in self.events if isinstance(e, Lifecycle) and e.kind == kind]


@pytest.fixture
def live(stream_rig: StreamRig, request: pytest.FixtureRequest) -> Iterator[Live]:
    stream_rig.server.set_script(())
    stream_rig.server.clear_requests()
    work = stream_rig.root / "work" / request.node.name
    work.mkdir(parents=True)
    yield Live(stream_rig, work, CountingExecutor())
    assert_nothing_left_running(stream_rig.cli.home)


def _tool_then_text(command: str, text: str = AFTER_TOOL) -> tuple[Rule, ...]:
    return (
        Rule(
            match=Match(last_input_is_tool_result=False),
            respond=Message((Text("Running it."), ToolCall(command=command))),
        ),
        Rule(match=Match(last_input_is_tool_result=True), respond=Text(text)),
    )


def test_two_turns_run_on_one_process_and_the_second_starts_fast(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session() as session:
        first = session.turn("Say hello.").result
        started = time.monotonic()
        second = session.turn("Say hello again.").result
        second_s = time.monotonic() - started
    assert (first.text, second.text) == (HELLO, HELLO)
    assert (first.resumed, second.resumed) == (False, True)
    assert first.session_id == second.session_id
    assert first.usage.tokens.input_tokens > 0
    assert len(live.executor.spawned) == 1
    assert live.executor.spawned[0][0].argv[1:] == ("--acp", "--approval-mode", "yolo")
    assert second_s < 10.0, f"the second turn took {second_s:.1f} s on a running process"


def test_interrupt_during_sleep_returns_fast_kills_the_sleep_and_keeps_the_process(
    live: Live,
) -> None:
    live.script(*_tool_then_text("sleep 30"))
    home = live.rig.cli.home
    with live.session() as session:
        running = Background(lambda: session.turn("Sleep for a while.").result)
        wait_for(lambda: bool(run_processes(home, "sleep 30")), SEEN_WITHIN_S, "sleep 30")
        interrupted_at = time.monotonic()
        session.interrupt()
        result = running.join(PROMPT_RETURN_S + TURN_TIMEOUT)
        assert running.ended_at is not None
        took = running.ended_at - interrupted_at
        assert result.interrupted
        assert any(isinstance(e, TurnInterrupted) for e in live.events)
        assert took < PROMPT_RETURN_S, f"the interrupted turn took {took:.2f} s to return"
        wait_for(lambda: not run_processes(home, "sleep 30"), 3.0, "the sleep ending")

        live.script(Rule(respond=Text(HELLO)))
        after = session.turn("Now just say hello.").result
    assert after.text == HELLO
    assert not after.interrupted
    assert after.session_id == result.session_id
    assert len(live.executor.spawned) == 1


def test_an_approval_handler_denies_then_allows_touch(live: Live) -> None:
    # workspace_write() runs Gemini CLI in auto_edit mode: a shell command it does not
    # consider safe (touch) is asked about, as a session/request_permission.
    asked: list[ApprovalRequest] = []

    def decide(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        if "denied.txt" in request.tool:
            return ApprovalDecision.deny("not that file")
        return ApprovalDecision.allow()

    agent = live.agent(permissions=NativePermissions.workspace_write(), approvals=decide)
    with live.session(agent) as session:
        for name in ("denied.txt", "allowed.txt"):
            live.script(*_tool_then_text(f"touch {name}"))
            result = session.turn(f"Create {name}.").result
            assert result.text.endswith(AFTER_TOOL)
    assert not (live.work / "denied.txt").exists()
    assert (live.work / "allowed.txt").exists()
    assert [r.tool for r in asked] == ["touch denied.txt", "touch allowed.txt"]
    answers = [e for e in live.events if isinstance(e, ApprovalAnswered)]
    assert [a.allowed for a in answers] == [False, True]
    assert len(live.executor.spawned) == 1


def test_interrupt_while_the_handler_decides_ends_the_turn(live: Live) -> None:
    # Gemini CLI holds the prompt open until its permission request is answered; the
    # transport answers it "cancelled", so the turn ends and the command never runs.
    session_box: list[Session] = []

    def interrupt_then_allow(_: ApprovalRequest) -> ApprovalDecision:
        session_box[0].interrupt()
        return ApprovalDecision.allow()

    agent = live.agent(
        permissions=NativePermissions.workspace_write(), approvals=interrupt_then_allow
    )
    live.script(*_tool_then_text("touch never.txt"))
    with live.session(agent) as session:
        session_box.append(session)
        started = time.monotonic()
        result = session.turn("Create never.txt.").result
        assert time.monotonic() - started < TURN_TIMEOUT
        assert result.interrupted
        live.script(Rule(respond=Text(HELLO)))
        assert session.turn("Say hello.").result.text == HELLO
    assert not (live.work / "never.txt").exists()
    assert [a.decided_by for a in live.events if isinstance(a, ApprovalAnswered)] == ["interrupted"]


@pytest.mark.parametrize(
    ("status", "kind"), [(500, FailureKind.TRANSIENT), (401, FailureKind.AUTH)]
)
def test_an_api_failure_is_classified_and_the_session_survives(
    live: Live, status: int, kind: FailureKind
) -> None:
    live.script(Rule(respond=HttpError(status, headers=FAST_RETRY)))
    with live.session() as session:
        with pytest.raises(CliExitError) as caught:
            session.turn("Fail, please.")
        assert caught.value.kind is kind
        live.script(Rule(respond=Text(HELLO)))
        assert session.turn("Say hello.").result.text == HELLO
    assert len(live.executor.spawned) == 1


def test_a_silent_turn_stalls_and_the_process_takes_the_next_turn(live: Live) -> None:
    live.script(Rule(respond=Hang(60.0), times=1), Rule(respond=Text(HELLO)))
    with live.session(live.agent(stall_timeout=5.0)) as session:
        with pytest.raises(TurnStalledError):
            session.turn("Think forever.")
        assert session.turn("Say hello.").result.text == HELLO
    assert len(live.executor.spawned) == 1


def _asked(server: ModelServer) -> bool:
    return any(request.kind is RequestKind.MAIN for request in server.requests)


def test_steer_is_refused(live: Live) -> None:
    live.script(Rule(respond=Hang(30.0), times=1), Rule(respond=Text(HELLO)))
    with live.session() as session:
        running = Background(lambda: session.turn("Think.").result)
        # The turn runs once the model is asked (a cold start under load takes seconds).
        wait_for(lambda: _asked(live.server), SEEN_WITHIN_S, "the model call")
        with pytest.raises(ProviderCapabilityError):
            session.steer("more")
        session.interrupt()
        assert running.join(PROMPT_RETURN_S + TURN_TIMEOUT).interrupted


def test_a_session_loads_in_a_new_process_of_a_new_agent(live: Live) -> None:
    live.script(
        Rule(match=Match(assistant_turns=0), respond=Text("Noted: MANGOSTEEN.")),
        Rule(respond=Text("You said MANGOSTEEN.")),
    )
    with live.session() as session:
        first = session.turn("Remember MANGOSTEEN.").result
    assert first.session_id is not None
    # Gemini CLI loses a session loaded in the wall-clock minute it was created in; a new
    # Agent cannot know when that was, so the test waits for the next minute itself.
    time.sleep(61.0 - time.time() % 60.0)
    with live.session(session_id=first.session_id) as again:
        second = again.turn("What did I say?").result
    assert second.text == "You said MANGOSTEEN."
    assert second.resumed
    assert second.session_id == first.session_id
    assert len(live.executor.spawned) == 2
    assert live.lifecycle("replay_suppressed")


def test_kill_9_mid_turn_raises_cli_died_and_the_next_turn_loads_the_session(
    live: Live,
) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session() as session:
        first = session.turn("Say hello.").result
        live.script(Rule(respond=Hang(60.0, after_text="Thinking")))
        running = Background(lambda: session.turn("Think.").result)
        wait_for(lambda: bool(live.server.requests) and len(live.server.requests) >= 2, 30, "call")
        _, process = live.executor.spawned[0]
        os.killpg(process.pid, signal.SIGKILL)
        with pytest.raises(CliDiedError) as caught:
            running.join(PROMPT_RETURN_S + TURN_TIMEOUT)
        assert caught.value.session_id == first.session_id
        live.script(Rule(respond=Text(HELLO)))
        third = session.turn("Say hello again.").result
    assert third.text == HELLO
    assert third.session_id == first.session_id
    assert len(live.executor.spawned) == 2


def test_an_mcp_server_starts_with_the_session_and_close_ends_cli_and_server(
    live: Live, tmp_path: Path
) -> None:
    # With a stdio MCP child, Gemini CLI does not exit on stdin EOF: closing goes on to
    # SIGTERM its process group, and nothing of the session is left running.
    marker = tmp_path / "mcp-stub-started"
    server = StdioMcpServer(
        name="agentshim-stub", command=sys.executable, args=(str(MCP_STUB), str(marker))
    )
    live.script(Rule(respond=Text(HELLO)))
    agent = live.agent()
    session = agent.start_session(str(live.work), mcp_servers=(server,))
    assert session.turn("Say hello.").result.text == HELLO
    assert marker.exists(), "the MCP server given to session/new was not started"
    ((request, _),) = live.executor.spawned
    assert not any("agentshim-stub" in arg for arg in request.argv)
    started = time.monotonic()
    session.close()
    assert time.monotonic() - started < 20.0
    wait_for(
        lambda: not run_processes(live.rig.cli.home, str(MCP_STUB)), 5.0, "the MCP server ending"
    )


# -- the shared contracts, on the real CLI ---------------------------------------------

#: In the prompt of the turn that creates a session the contracts resume.
SEED_MARKER = "AGENTSHIM-CONTRACT-SEED"


def _contract_script(turns: Sequence[ContractTurn]) -> tuple[Rule, ...]:
    """The model's answers: one per contract turn, in order (a hang holds its request)."""
    seed = Rule(match=Match(user_text_contains=SEED_MARKER), respond=Text("Seeded."))
    answers = [
        Rule(respond=Hang(60.0) if turn.hang else Text(turn.text), times=1) for turn in turns
    ]
    return (seed, *answers)


class _ContractRig:
    """What one contract test runs on: a work dir the CLI runs in, and its conversations."""

    def __init__(self, rig: StreamRig, work: Path) -> None:
        self.rig = rig
        self.work = work
        self.opened: list[Conversation] = []
        self.transport = Agent(
            "gemini",
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            model=rig.cli.model,
            env=dict(rig.cli.env),
            transport=TransportKind.STREAM,
            check_timeout=60.0,
        ).transport

    def seed(self, session_id: str) -> None:
        """Make the CLI hold session ``session_id`` here: one headless turn that starts it.

        A load in the minute of creation loses the session, so this returns in a later one.
        """
        argv = [str(self.rig.binary), "--session-id", session_id, "--yolo"]
        argv += ["--output-format", "json"]
        subprocess.run(
            argv,
            input=f"{SEED_MARKER}: start the session.",
            text=True,
            cwd=self.work,
            env=dict(self.rig.cli.env),
            capture_output=True,
            timeout=TURN_TIMEOUT,
            check=True,
        )
        time.sleep(61.0 - time.time() % 60.0)

    def open(self, spec: ConversationSpec) -> Conversation:
        if spec.resume_session_id is not None:
            self.seed(spec.resume_session_id)
        conversation = self.transport.open(spec)
        self.opened.append(conversation)
        return conversation


class _SeedingTransport:
    """The ACP transport, with every session it is asked to resume created first."""

    kind = TransportKind.STREAM

    def __init__(self, rig: _ContractRig) -> None:
        self._rig = rig

    @property
    def profile(self) -> ProviderProfile:
        return self._rig.transport.profile

    def open(self, spec: ConversationSpec) -> Conversation:
        return self._rig.open(spec)


@pytest.fixture
def contract_rig(
    stream_rig: StreamRig, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> Iterator[_ContractRig]:
    stream_rig.server.set_script(())
    stream_rig.server.clear_requests()
    work = stream_rig.root / "contracts" / request.node.name
    work.mkdir(parents=True)
    # The contracts open conversations without a cwd: the CLI runs in the test's own.
    monkeypatch.chdir(work)
    rig = _ContractRig(stream_rig, work)
    yield rig
    for conversation in rig.opened:
        conversation.close()
    assert_nothing_left_running(stream_rig.cli.home)


class TestStreamConversationContract(ConversationContract):
    """The Conversation contract on real Gemini CLI ACP sessions."""

    io_timeout = 30.0  # a cold start of the CLI on a busy machine takes seconds

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


class TestStreamTransportContract(TransportContract):
    """The Transport contract on the real Gemini CLI ACP transport."""

    @pytest.fixture(autouse=True)
    def _rig(self, contract_rig: _ContractRig) -> None:
        self.rig = contract_rig

    def make_transport(self, turns: Sequence[ContractTurn]) -> Transport:
        self.rig.rig.server.set_script(_contract_script(turns))
        return _SeedingTransport(self.rig)


def test_a_turn_request_is_one_prompt(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    agent = live.agent()
    conversation = agent.transport.open(
        ConversationSpec(
            cwd=str(live.work),
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
        )
    )
    try:
        result = conversation.turn(TurnRequest("Say hello."), live.events.append)
    finally:
        conversation.close()
    assert result.text == HELLO
