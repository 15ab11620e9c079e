"""Live: Claude Code's stream transport on the real pinned binary, against the model server.

Every test runs ``Agent("claude", transport=TransportKind.STREAM)`` on the real
``HostCommandExecutor``: one long-lived ``claude -p --input-format stream-json`` process per
session, offline (``agentshim.testing.offline``), the model scripted per test. What is
asserted is what a user sees: results, errors, files the agent wrote, the processes that ran
(counted at ``spawn``, found in ``/proc`` by the run's HOME) and what the model was sent.

Run with ``pytest tests/live/test_claude_stream.py -s`` (``-s`` shows the measured start-up
figures); skipped when the pinned claude is not installed.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agentshim.agent import Agent
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import Conversation, ConversationSpec, Transport, TransportKind
from agentshim.core.errors import CliDiedError, TurnStalledError
from agentshim.core.events import (
    AgentEvent,
    ApprovalAnswered,
    ApprovalRequested,
    Lifecycle,
    TurnInterrupted,
)
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.profile import ProviderProfile
from agentshim.core.turn import TurnRequest
from agentshim.session import Session
from agentshim.testing.model_server import (
    Hang,
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
    SteerableConversationContract,
    TransportContract,
)

from .binaries import require_binary
from .streams import Background, CountingExecutor, alive, run_processes, wait_for
from .suite import assert_nothing_left_running

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/environ").exists(), reason="the run's processes are found through /proc"
)

TURN_TIMEOUT = 120.0
#: How long an interrupted or killed turn may take to come back.
PROMPT_RETURN_S = 5.0
#: How long to wait for something the CLI starts (a tool's ``sleep``) to show up.
SEEN_WITHIN_S = 60.0

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
    binary = require_binary("claude")
    root = tmp_path_factory.mktemp("live-claude-stream")
    with ModelServer() as server:
        cli = offline_cli("claude", server, root=root, bin_dir=binary.path.parent)
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
        transport: TransportKind = TransportKind.STREAM,
    ) -> Agent:
        return Agent(
            "claude",
            permissions=permissions or NativePermissions.bypass(),
            approvals=approvals,  # type: ignore[arg-type]
            model=self.rig.cli.model,
            env=dict(self.rig.cli.env),
            executor=self.executor,
            transport=transport,
            event_handlers=self.events.append,
            check_timeout=60.0,
        )

    def session(self, agent: Agent | None = None) -> Session:
        return (agent or self.agent()).start_session(str(self.work))

    def script(self, *rules: Rule) -> None:
        self.server.set_script(rules)

    def main_bodies(self) -> list[str]:
        return [
            r.raw_body.decode("utf-8", "replace")
            for r in self.server.requests
            if r.kind is RequestKind.MAIN
        ]

    def claude_pids(self) -> list[int]:
        """The live stream-json CLI processes this test spawned."""
        return [p.pid for _, p in self.executor.spawned if alive(p.pid)]


@pytest.fixture
def live(stream_rig: StreamRig, request: pytest.FixtureRequest) -> Iterator[Live]:
    stream_rig.server.set_script(())
    stream_rig.server.clear_requests()
    work = stream_rig.root / "work" / request.node.name
    work.mkdir(parents=True)
    yield Live(stream_rig, work, CountingExecutor())
    assert_nothing_left_running(stream_rig.cli.home)


# Claude Code 2.1.332 refuses a standalone `sleep N` ("use Monitor or run_in_background"),
# so the tools that must run for a while sleep in Python; their command lines are unique.
LONG_TOOL = "python3 -c 'import time; time.sleep(30)'"
LONG_TOOL_SEEN = "time.sleep(30)"
SHORT_TOOL = "python3 -c 'import time; time.sleep(4)'"
SHORT_TOOL_SEEN = "time.sleep(4)"


def _tool_then_text(command: str, text: str = AFTER_TOOL) -> tuple[Rule, ...]:
    return (
        Rule(
            match=Match(last_input_is_tool_result=False),
            respond=Message((Text("Running it."), ToolCall(command=command))),
        ),
        Rule(match=Match(last_input_is_tool_result=True), respond=Text(text)),
    )


# -- (a) two turns, one process ----------------------------------------------------------


def test_two_turns_run_on_one_process_and_the_second_starts_fast(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session(live.agent(transport=TransportKind.ONE_SHOT)) as one_shot:
        started = time.monotonic()
        baseline = one_shot.turn("Say hello.").result
        one_shot_s = time.monotonic() - started
    assert baseline.text == HELLO

    spawned_before = len(live.executor.spawned)
    first_event: list[tuple[float, str]] = []

    def on_event(event: AgentEvent) -> None:
        if not first_event:
            first_event.append((time.monotonic(), type(event).__name__))

    with live.session() as session:
        cold_started = time.monotonic()
        first = session.turn("Say hello.", on_event=on_event).result
        cold_s = time.monotonic() - cold_started
        cold_first_s, cold_name = first_event[0][0] - cold_started, first_event[0][1]
        first_event.clear()
        warm_started = time.monotonic()
        second = session.turn("Say hello again.", on_event=on_event).result
        warm_s = time.monotonic() - warm_started
        warm_first_s, warm_name = first_event[0][0] - warm_started, first_event[0][1]
    spawned = live.executor.argvs[spawned_before:]

    print(
        f"\nclaude stream start-up: one-shot turn {one_shot_s * 1000:.0f} ms wall; "
        f"stream turn 1 first event ({cold_name}) {cold_first_s * 1000:.0f} ms "
        f"(wall {cold_s * 1000:.0f} ms); stream turn 2 first event ({warm_name}) "
        f"{warm_first_s * 1000:.0f} ms (wall {warm_s * 1000:.0f} ms) "
        f"= {warm_first_s / one_shot_s:.1%} of the one-shot turn"
    )
    assert first.text == second.text == HELLO
    assert len(spawned) == 1, f"expected one process for two turns, spawned: {spawned}"
    assert "--input-format" in spawned[0]
    assert second.session_id == first.session_id
    assert not first.resumed
    assert second.resumed
    # The CLI's total_cost_usd runs over the process; each result carries its own turn's.
    assert first.cost_usd is not None
    assert first.cost_usd > 0
    assert second.cost_usd == pytest.approx(first.cost_usd)
    assert second.usage.tokens.input_tokens == first.usage.tokens.input_tokens > 0
    assert warm_first_s < 0.25 * one_shot_s, (
        f"the second turn's first event came {warm_first_s:.3f} s after it started, not under "
        f"25% of a one-shot turn ({one_shot_s:.3f} s)"
    )


# -- (b) interrupt during a tool ---------------------------------------------------------


def test_interrupt_during_sleep_returns_fast_kills_the_sleep_and_keeps_the_process(
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
        wait_for(lambda: not run_processes(home, LONG_TOOL_SEEN), 3.0, "the sleep ending")

        live.script(Rule(respond=Text(HELLO)))
        after = session.turn("Now just say hello.").result
    assert after.text == HELLO
    assert not after.interrupted
    assert after.session_id == result.session_id
    assert len(live.executor.spawned) == 1, live.executor.argvs


# -- (c) approvals through a handler -----------------------------------------------------


def test_an_approval_handler_denies_allows_and_rewrites_touch(live: Live) -> None:
    # workspace_write() runs Claude Code in acceptEdits mode: a ``touch`` inside the
    # workspace is an edit it makes without asking, so the files go to a directory outside
    # it, which the CLI asks about (as a can_use_tool request the handler answers).
    outside = live.work.parent / f"{live.work.name}-outside"
    outside.mkdir()
    asked: list[ApprovalRequest] = []

    def decide(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        command = str(request.args.get("command", ""))
        if "denied.txt" in command:
            return ApprovalDecision.deny("not that file")
        if "rewrite-me.txt" in command:
            rewritten = command.replace("rewrite-me.txt", "rewritten.txt")
            return ApprovalDecision.allow({**request.args, "command": rewritten})
        return ApprovalDecision.allow()

    agent = live.agent(permissions=NativePermissions.workspace_write(), approvals=decide)
    with live.session(agent) as session:
        for name in ("denied.txt", "allowed.txt", "rewrite-me.txt"):
            live.script(*_tool_then_text(f"touch {outside / name}"))
            result = session.turn(f"Create {name}.").result
            assert result.text.endswith(AFTER_TOOL)
        asked_outside = len(asked)
        live.script(*_tool_then_text("touch inside.txt"))
        session.turn("Create inside.txt.")
    assert sorted(p.name for p in outside.iterdir()) == ["allowed.txt", "rewritten.txt"]
    assert (live.work / "inside.txt").exists()
    assert asked_outside == len(asked) == 3, "the in-workspace touch was asked about"
    assert [r.tool for r in asked] == ["Bash", "Bash", "Bash"]
    assert all(r.tool_id for r in asked)
    answers = [e for e in live.events if isinstance(e, ApprovalAnswered)]
    assert [a.allowed for a in answers] == [False, True, True]
    assert len([e for e in live.events if isinstance(e, ApprovalRequested)]) == 3
    denied_body = next(b for b in live.main_bodies() if "not that file" in b)
    assert "denied.txt" in denied_body
    assert len(live.executor.spawned) == 1


def test_interrupt_while_the_handler_decides_withdraws_the_request(live: Live) -> None:
    # The CLI withdraws the pending request (control_cancel_request) and ignores the late
    # allow, so the tool never runs; the process stays for the next turn.
    outside = live.work.parent / f"{live.work.name}-outside"
    outside.mkdir()
    deciding = threading.Event()
    release = threading.Event()

    def decide(request: ApprovalRequest) -> ApprovalDecision:
        deciding.set()
        release.wait(TURN_TIMEOUT)
        return ApprovalDecision.allow()

    agent = live.agent(permissions=NativePermissions.workspace_write(), approvals=decide)
    live.script(*_tool_then_text(f"touch {outside / 'late.txt'}"))
    with live.session(agent) as session:
        running = Background(lambda: session.turn("Create late.txt.").result)
        wait_for(deciding.is_set, SEEN_WITHIN_S, "the approval request")
        session.interrupt()
        time.sleep(0.5)  # the CLI's cancel and its interrupted result arrive meanwhile
        release.set()
        result = running.join(PROMPT_RETURN_S)
        assert result.interrupted
        live.script(Rule(respond=Text(HELLO)))
        after = session.turn("Say hello.").result
    assert after.text == HELLO
    assert list(outside.iterdir()) == [], "the withdrawn request's tool ran"
    cancels = [e for e in live.events if isinstance(e, Lifecycle)]
    assert any(e.kind == "control_cancel_request" for e in cancels)
    assert len(live.executor.spawned) == 1


def test_a_handler_that_raises_denies(live: Live) -> None:
    outside = live.work.parent / f"{live.work.name}-outside"
    outside.mkdir()

    def decide(request: ApprovalRequest) -> ApprovalDecision:
        raise RuntimeError("handler bug")

    agent = live.agent(permissions=NativePermissions.workspace_write(), approvals=decide)
    live.script(*_tool_then_text(f"touch {outside / 'never.txt'}"))
    with live.session(agent) as session:
        result = session.turn("Create never.txt.").result
    assert result.text.endswith(AFTER_TOOL)
    assert list(outside.iterdir()) == []
    (answer,) = [e for e in live.events if isinstance(e, ApprovalAnswered)]
    assert not answer.allowed
    assert answer.decided_by == "handler_error"
    assert "handler bug" in answer.message


# -- (d) steer -----------------------------------------------------------------------------


def test_steer_during_a_tool_folds_into_the_turn(live: Live) -> None:
    steer_text = "STEER-MARKER also mention a banana"
    live.script(*_tool_then_text(SHORT_TOOL))
    home = live.rig.cli.home
    with live.session() as session:
        running = Background(lambda: session.turn("Sleep a little.").result)
        wait_for(lambda: bool(run_processes(home, SHORT_TOOL_SEEN)), SEEN_WITHIN_S, "sleep 4")
        session.steer(steer_text)
        result = running.join(TURN_TIMEOUT)
        assert result.text.endswith(AFTER_TOOL)
        assert not result.interrupted
        assert any(
            isinstance(e, Lifecycle) and e.kind == "steered" and e.detail == steer_text
            for e in live.events
        )
        bodies = live.main_bodies()
        assert steer_text in bodies[-1], "the model's next request did not carry the steer"
        # One result only: the next turn meets nothing left over from the steered one.
        live.events.clear()
        live.script(Rule(respond=Text(HELLO)))
        after = session.turn("Say hello.").result
    assert after.text == HELLO
    leftovers = [e for e in live.events if isinstance(e, Lifecycle) and e.kind == "between_turns"]
    assert leftovers == [], f"frames after the steered turn's result: {leftovers}"
    assert len(live.executor.spawned) == 1


# -- a silent turn ------------------------------------------------------------------------


def test_a_silent_turn_stalls_and_the_process_takes_the_next_turn(live: Live) -> None:
    stall_s = 3.0
    agent = Agent(
        "claude",
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        model=live.rig.cli.model,
        env=dict(live.rig.cli.env),
        executor=live.executor,
        transport=TransportKind.STREAM,
        stall_timeout=stall_s,
        check_timeout=60.0,
    )
    live.script(Rule(respond=Hang(60.0), times=1), Rule(respond=Text(HELLO)))
    with live.session(agent) as session:
        started = time.monotonic()
        with pytest.raises(TurnStalledError) as stalled:
            session.turn("Say nothing for a while.")
        took = time.monotonic() - started
        assert stalled.value.silent_s is not None
        assert stalled.value.silent_s >= stall_s
        assert took < stall_s + PROMPT_RETURN_S + 10.0, f"the stalled turn took {took:.1f} s"
        after = session.turn("Say hello.").result
    assert after.text == HELLO
    assert len(live.executor.spawned) == 1, live.executor.argvs


# -- model per turn, release, fork -------------------------------------------------------


def test_a_turn_on_another_model_switches_in_band(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session() as session:
        session.turn("Say hello.")
        before = len(live.server.requests)
        switched = session.turn(TurnRequest("Say hello.", model="claude-sonnet-4-5")).result
    assert switched.text == HELLO
    models = {r.facts.model for r in live.server.requests[before:] if r.kind is RequestKind.MAIN}
    assert models == {"claude-sonnet-4-5"}, models
    assert any(isinstance(e, Lifecycle) and e.kind == "model_switched" for e in live.events)
    assert len(live.executor.spawned) == 1


def test_a_released_conversation_reopens_by_id(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session() as session:
        first = session.turn("Say hello.").result
        session.release()
        wait_for(lambda: not live.claude_pids(), PROMPT_RETURN_S, "the released process ending")
        after = session.turn("Say hello again.").result
    assert after.session_id == first.session_id
    assert after.resumed
    argvs = live.executor.argvs
    assert len(argvs) == 2, argvs
    assert argvs[1][argvs[1].index("--resume") + 1] == first.session_id


def test_a_fork_starts_a_new_conversation_from_the_history(live: Live) -> None:
    live.script(
        Rule(match=Match(assistant_turns=0), respond=Text("Noted: MANGOSTEEN.")),
        Rule(match=Match(assistant_turns=1), respond=Text("You said MANGOSTEEN.")),
    )
    with live.session() as session:
        first = session.turn("Remember the word MANGOSTEEN.").result
        with session.fork() as forked:
            recalled = forked.turn("Which word?").result
    assert recalled.text == "You said MANGOSTEEN.", "the fork did not carry the history"
    assert recalled.session_id
    assert recalled.session_id != first.session_id
    fork_argv = live.executor.argvs[-1]
    assert "--fork-session" in fork_argv
    assert fork_argv[fork_argv.index("--resume") + 1] == first.session_id


# -- (e) the CLI killed mid-turn -----------------------------------------------------------


def test_kill_9_mid_turn_raises_cli_died_and_the_next_turn_resumes(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session() as session:
        first = session.turn("Say hello.").result
        assert first.session_id
        requests_before = len(live.server.requests)
        live.script(Rule(respond=Hang(60.0, after_text="Thinking")))
        running = Background(lambda: session.turn("Take your time.").result)
        wait_for(
            lambda: any(r.kind is RequestKind.MAIN for r in live.server.requests[requests_before:]),
            SEEN_WITHIN_S,
            "the hanging model request",
        )
        (pid,) = live.claude_pids()
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(CliDiedError) as died:
            running.join(PROMPT_RETURN_S)
        assert died.value.session_id == first.session_id
        assert died.value.returncode == -signal.SIGKILL

        live.script(Rule(respond=Text(HELLO)))
        after = session.turn("Are you back?").result
    assert after.text == HELLO
    assert after.session_id == first.session_id
    assert after.resumed
    argvs = live.executor.argvs
    assert len(argvs) == 2, argvs
    assert "--resume" not in argvs[0]
    resume_at = argvs[1].index("--resume")
    assert argvs[1][resume_at + 1] == first.session_id


def test_kill_9_during_a_tool_takes_the_tool_shell_with_it(live: Live) -> None:
    # Claude Code's tool shells run in a session of their own: killing the CLI does not
    # reach them, so agentshim ends them (found by the run marker) once the CLI is gone.
    live.script(*_tool_then_text(LONG_TOOL))
    home = live.rig.cli.home
    with live.session() as session:
        running = Background(lambda: session.turn("Sleep for a while.").result)
        wait_for(lambda: bool(run_processes(home, LONG_TOOL_SEEN)), SEEN_WITHIN_S, "sleep 30")
        (pid,) = live.claude_pids()
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(CliDiedError):
            running.join(PROMPT_RETURN_S)
        assert run_processes(home, LONG_TOOL_SEEN) == [], "the tool's sleep outlived the CLI"


# -- (f) the shared contracts, on the real CLI ---------------------------------------------

#: In the prompt of the turn that creates a conversation the contracts resume.
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
            "claude",
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            model=rig.cli.model,
            env=dict(rig.cli.env),
            transport=TransportKind.STREAM,
            check_timeout=60.0,
        ).transport

    def seed(self, session_id: str) -> None:
        """Make the CLI hold conversation ``session_id`` here: one turn that starts it by id."""
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
    """The stream transport, with every conversation it is asked to resume created first.

    The contracts resume conversations by ids of their own; a real CLI resumes only
    conversations it holds, so each is started (``claude -p --session-id ID``) on open.
    """

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


class TestStreamConversationContract(SteerableConversationContract):
    """The (steerable) Conversation contract on real Claude Code stream conversations."""

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
    """The Transport contract on the real Claude Code stream transport."""

    @pytest.fixture(autouse=True)
    def _rig(self, contract_rig: _ContractRig) -> None:
        self.rig = contract_rig

    def make_transport(self, turns: Sequence[ContractTurn]) -> Transport:
        self.rig.rig.server.set_script(_contract_script(turns))
        return _SeedingTransport(self.rig)
