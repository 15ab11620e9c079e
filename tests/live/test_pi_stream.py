"""Live: Pi's rpc transport on the real pinned binary, against the model server.

Every test runs ``Agent("pi", transport=TransportKind.STREAM)`` on the real
``HostCommandExecutor``: one long-lived ``pi --mode rpc`` process per session, offline
(``agentshim.testing.offline``), the model scripted per test. What is asserted is what a
user sees: results, errors, the processes that ran (counted at ``spawn``, found in ``/proc``
by the run's HOME) and what the model was sent.

Run with ``pytest tests/live/test_pi_stream.py``; skipped when the pinned pi is not
installed.
"""

from __future__ import annotations

import json
import os
import signal
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agentshim.agent import Agent
from agentshim.core.conversation import Conversation, ConversationSpec, Transport, TransportKind
from agentshim.core.errors import (
    CliDiedError,
    CliExitError,
    FailureKind,
    ProviderCapabilityError,
    TurnStalledError,
)
from agentshim.core.events import AgentEvent, Lifecycle, TurnInterrupted
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
    SteerableConversationContract,
    TransportContract,
)

from .binaries import require_binary
from .scenarios import FAST_RETRY_HEADERS
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
    binary = require_binary("pi")
    root = tmp_path_factory.mktemp("live-pi-stream")
    with ModelServer() as server:
        cli = offline_cli("pi", server, root=root, bin_dir=binary.path.parent)
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

    def agent(self, **options: object) -> Agent:
        return Agent(
            "pi",
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            model=self.rig.cli.model,
            env=dict(self.rig.cli.env),
            executor=self.executor,
            transport=options.pop("transport", TransportKind.STREAM),  # type: ignore[arg-type]
            event_handlers=self.events.append,
            check_timeout=60.0,
            # A failed turn is asserted as it failed, not retried by the session.
            retry=RetryPolicy(delays=()),
            **options,  # type: ignore[arg-type]
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

    def pi_pids(self) -> list[int]:
        """The live rpc processes this test spawned."""
        return [p.pid for _, p in self.executor.spawned if alive(p.pid)]


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


# -- two turns, one process ------------------------------------------------------------------


def test_two_turns_run_on_one_process_and_the_second_starts_fast(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session(live.agent(transport=TransportKind.ONE_SHOT)) as one_shot:
        started = time.monotonic()
        baseline = one_shot.turn("Say hello.").result
        one_shot_s = time.monotonic() - started
    assert baseline.text == HELLO

    spawned_before = len(live.executor.spawned)
    with live.session() as session:
        first = session.turn("Say hello.").result
        warm_started = time.monotonic()
        second = session.turn("Say hello again.").result
        warm_s = time.monotonic() - warm_started
    spawned = live.executor.argvs[spawned_before:]
    print(
        f"\npi rpc: one-shot turn {one_shot_s * 1000:.0f} ms; warm rpc turn {warm_s * 1000:.0f} ms"
    )
    assert first.text == second.text == HELLO
    assert len(spawned) == 1, f"expected one process for two turns, spawned: {spawned}"
    assert list(spawned[0][1:3]) == ["--mode", "rpc"]
    assert first.session_id
    assert second.session_id == first.session_id
    assert not first.resumed
    assert second.resumed
    assert second.usage.tokens.input_tokens > 0
    assert warm_s < 0.5 * one_shot_s, (warm_s, one_shot_s)


# -- interrupt during a tool -----------------------------------------------------------------


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
    assert len(live.executor.spawned) == 1, live.executor.argvs


# -- steer -----------------------------------------------------------------------------------


def test_steer_during_a_tool_reaches_the_model_inside_the_same_turn(live: Live) -> None:
    steer_text = "STEER-MARKER also mention a banana"
    live.script(*_tool_then_text("sleep 4"))
    home = live.rig.cli.home
    with live.session() as session:
        running = Background(lambda: session.turn("Sleep a little.").result)
        wait_for(lambda: bool(run_processes(home, "sleep 4")), SEEN_WITHIN_S, "sleep 4")
        session.steer(steer_text)
        result = running.join(TURN_TIMEOUT)
        assert result.text == AFTER_TOOL
        assert not result.interrupted
        assert any(
            isinstance(e, Lifecycle) and e.kind == "steered" and e.detail == steer_text
            for e in live.events
        )
        assert steer_text in live.main_bodies()[-1], "the model never saw the steer"
        live.events.clear()
        live.script(Rule(respond=Text(HELLO)))
        after = session.turn("Say hello.").result
    assert after.text == HELLO
    leftovers = [e for e in live.events if isinstance(e, Lifecycle) and e.kind == "between_turns"]
    assert leftovers == [], f"output after the steered turn ended: {leftovers}"
    assert len(live.executor.spawned) == 1


# -- failures ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("status", "kind"), [(500, FailureKind.TRANSIENT), (401, FailureKind.AUTH)]
)
def test_an_api_failure_is_classified_and_the_process_takes_the_next_turn(
    live: Live, status: int, kind: FailureKind
) -> None:
    live.script(Rule(respond=HttpError(status, headers=FAST_RETRY_HEADERS)))
    with live.session() as session:
        with pytest.raises(CliExitError) as failed:
            session.turn("Say hello.")
        assert failed.value.kind is kind, failed.value
        live.script(Rule(respond=Text(HELLO)))
        after = session.turn("Say hello.").result
    assert after.text == HELLO
    assert len(live.executor.spawned) == 1, live.executor.argvs


def test_a_silent_turn_stalls_and_the_process_takes_the_next_turn(live: Live) -> None:
    stall_s = 3.0
    live.script(Rule(respond=Hang(60.0), times=1), Rule(respond=Text(HELLO)))
    with live.session(live.agent(stall_timeout=stall_s)) as session:
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


def test_kill_9_mid_turn_raises_cli_died_and_the_next_turn_resumes_in_a_new_process(
    live: Live,
) -> None:
    live.script(
        Rule(match=Match(assistant_turns=0), respond=Text("Noted: MANGOSTEEN.")),
    )
    with live.session() as session:
        first = session.turn("Remember the word MANGOSTEEN.").result
        assert first.session_id
        requests_before = len(live.server.requests)
        live.script(Rule(respond=Hang(60.0, after_text="Thinking")))
        running = Background(lambda: session.turn("Take your time.").result)
        wait_for(
            lambda: any(r.kind is RequestKind.MAIN for r in live.server.requests[requests_before:]),
            SEEN_WITHIN_S,
            "the hanging model request",
        )
        (pid,) = live.pi_pids()
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(CliDiedError) as died:
            running.join(PROMPT_RETURN_S)
        assert died.value.session_id == first.session_id
        assert died.value.returncode == -signal.SIGKILL

        live.script(Rule(respond=Text(HELLO)))
        after = session.turn("Which word?").result
    assert after.text == HELLO
    assert after.session_id == first.session_id
    assert after.resumed
    assert "MANGOSTEEN" in live.main_bodies()[-1], "the new process did not carry the history"
    argvs = live.executor.argvs
    assert len(argvs) == 2, argvs
    assert "--session" not in argvs[0]
    assert argvs[1][argvs[1].index("--session") + 1] == first.session_id


# -- model per turn, release, fork -------------------------------------------------------------


def test_a_model_pi_does_not_know_is_refused_before_the_turn_and_the_process_stays(
    live: Live,
) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session() as session:
        session.turn("Say hello.")
        before = len(live.server.requests)
        with pytest.raises(ProviderCapabilityError, match="Model not found"):
            session.turn(TurnRequest("Say hello.", model="no-such-model"))
        assert len(live.server.requests) == before, "the refused turn reached the model"
        again = session.turn(TurnRequest("Say hello.", model=live.rig.cli.model)).result
    assert again.text == HELLO
    assert len(live.executor.spawned) == 1


def test_a_released_conversation_reopens_by_id(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session() as session:
        first = session.turn("Say hello.").result
        session.release()
        wait_for(lambda: not live.pi_pids(), PROMPT_RETURN_S, "the released process ending")
        after = session.turn("Say hello again.").result
    assert after.session_id == first.session_id
    assert after.resumed
    argvs = live.executor.argvs
    assert len(argvs) == 2, argvs
    assert argvs[1][argvs[1].index("--session") + 1] == first.session_id


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
    assert fork_argv[fork_argv.index("--fork") + 1] == first.session_id


def test_a_one_shot_fork_carries_the_history_too(live: Live) -> None:
    # The profile's supports_fork covers both transports: one-shot turns fork with --fork too.
    live.script(
        Rule(match=Match(assistant_turns=0), respond=Text("Noted: MANGOSTEEN.")),
        Rule(match=Match(assistant_turns=1), respond=Text("You said MANGOSTEEN.")),
    )
    with live.session(live.agent(transport=TransportKind.ONE_SHOT)) as session:
        first = session.turn("Remember the word MANGOSTEEN.").result
        with session.fork() as forked:
            recalled = forked.turn("Which word?").result
    assert recalled.text == "You said MANGOSTEEN."
    assert recalled.session_id not in (None, first.session_id)


# -- the shared contracts, on the real CLI -----------------------------------------------------


def _contract_script(turns: Sequence[ContractTurn]) -> tuple[Rule, ...]:
    """The model's answers: one per contract turn, in order (a hang holds its request)."""
    return tuple(
        Rule(respond=Hang(60.0) if turn.hang else Text(turn.text), times=1) for turn in turns
    )


class _ContractRig:
    """What one contract test runs on: a work dir the CLI runs in, and its conversations."""

    def __init__(self, rig: StreamRig, work: Path) -> None:
        self.rig = rig
        self.work = work
        self.opened: list[Conversation] = []
        self.transport = Agent(
            "pi",
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            model=rig.cli.model,
            env=dict(rig.cli.env),
            transport=TransportKind.STREAM,
            check_timeout=60.0,
        ).transport

    def seed(self, session_id: str) -> None:
        """Make Pi hold conversation ``session_id`` for this work dir: an empty session file.

        Pi names its sessions itself; one with a given id is a file in its sessions
        directory (``--<cwd with / as ->--/<timestamp>_<id>.jsonl``) whose header names it.
        """
        agent_dir = Path(self.rig.cli.env["PI_CODING_AGENT_DIR"])
        folder = agent_dir / "sessions" / f"--{str(self.work).strip('/').replace('/', '-')}--"
        folder.mkdir(parents=True, exist_ok=True)
        header = {
            "type": "session",
            "version": 3,
            "id": session_id,
            "timestamp": "2026-12-01T00:00:00.000Z",
            "cwd": str(self.work),
        }
        (folder / f"2026-12-01T00-00-00-000Z_{session_id}.jsonl").write_text(
            json.dumps(header) + "\n"
        )

    def open(self, spec: ConversationSpec) -> Conversation:
        if spec.resume_session_id is not None:
            self.seed(spec.resume_session_id)
        conversation = self.transport.open(spec)
        self.opened.append(conversation)
        return conversation


class _SeedingTransport:
    """The rpc transport, with every conversation it is asked to resume created first."""

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
    """The (steerable) Conversation contract on real Pi rpc conversations."""

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
    """The Transport contract on the real Pi rpc transport."""

    @pytest.fixture(autouse=True)
    def _rig(self, contract_rig: _ContractRig) -> None:
        self.rig = contract_rig

    def make_transport(self, turns: Sequence[ContractTurn]) -> Transport:
        self.rig.rig.server.set_script(_contract_script(turns))
        return _SeedingTransport(self.rig)

    def unsupported_permissions(self) -> NativePermissions | None:
        return NativePermissions.read_only()
