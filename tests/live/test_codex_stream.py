"""Live: Codex's app-server transport on the real pinned binary, against the model server.

Every test runs ``Agent("codex", transport=TransportKind.STREAM)`` on the real
``HostCommandExecutor``: one long-lived ``codex app-server`` process per session, offline
(``agentshim.testing.offline``), the model scripted per test. What is asserted is what a user
sees: results, errors, files, the processes that ran (counted at ``spawn``, found in ``/proc``
by the run's HOME) and what the model was sent.

Run with ``pytest tests/live/test_codex_stream.py``; skipped when the pinned codex is not
installed.
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from agentshim.agent import Agent
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import Conversation, ConversationSpec, Transport, TransportKind
from agentshim.core.errors import CliExitError, FailureKind, SessionResumeError
from agentshim.core.events import AgentEvent, ApprovalAnswered, Lifecycle, TurnInterrupted
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.profile import ProviderProfile
from agentshim.core.retry import RetryPolicy
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.session import Session
from agentshim.testing.model_server import (
    Hang,
    HttpError,
    Match,
    Message,
    ModelServer,
    RequestKind,
    Rule,
    StructuredOutput,
    Text,
    ToolCall,
    Usage,
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
#: How long an interrupted turn may take to come back.
PROMPT_RETURN_S = 5.0
#: How long to wait for something the CLI starts (a tool's ``sleep``) to show up.
SEEN_WITHIN_S = 60.0

HELLO = "Hello from the app-server."
AFTER_TOOL = "The command ran."
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["answer", "count"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class StreamRig:
    """The binary's offline setup and the server every test of this module shares."""

    server: ModelServer
    cli: OfflineCli
    root: Path


@pytest.fixture(scope="module")
def stream_rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamRig]:
    binary = require_binary("codex")
    root = tmp_path_factory.mktemp("live-codex-stream")
    with ModelServer() as server:
        cli = offline_cli("codex", server, root=root, bin_dir=binary.path.parent)
        yield StreamRig(server, cli, root)


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
            "codex",
            permissions=options.pop("permissions", NativePermissions.bypass()),  # type: ignore[arg-type]
            approvals=options.pop("approvals", ApprovalPolicy.DENY),  # type: ignore[arg-type]
            model=self.rig.cli.model,
            env=dict(self.rig.cli.env),
            executor=self.executor,
            transport=TransportKind.STREAM,
            event_handlers=self.events.append,
            check_timeout=60.0,
            # A failed turn is asserted as it failed, not retried by the session.
            retry=RetryPolicy(delays=()),
            **options,  # type: ignore[arg-type]
        )

    def session(self, agent: Agent | None = None, **options: object) -> Session:
        return (agent or self.agent()).start_session(str(self.work), **options)  # type: ignore[arg-type]

    def script(self, *rules: Rule) -> None:
        self.server.set_script(rules)

    def main_bodies(self) -> list[str]:
        return [
            r.raw_body.decode("utf-8", "replace")
            for r in self.server.requests
            if r.kind is RequestKind.MAIN
        ]

    def live_pids(self) -> list[int]:
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


def test_two_turns_run_on_one_process_with_their_own_usage(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO, usage=Usage(1200, 40, cache_read=1000, reasoning=8))))
    with live.session() as session:
        first = session.turn("Say hello.").result
        second = session.turn("Say hello again.").result
    assert first.text == second.text == HELLO
    argvs = live.executor.argvs
    assert len(argvs) == 1, f"expected one process for two turns, spawned: {argvs}"
    assert argvs[0][1] == "app-server"
    assert first.session_id
    assert second.session_id == first.session_id
    assert not first.resumed
    assert second.resumed
    for result in (first, second):
        assert result.usage.tokens.input_tokens == 1200
        assert result.usage.tokens.cache_read_input_tokens == 1000
        assert result.usage.tokens.output_tokens == 40
        assert result.context_window is not None
        assert result.context_window > 0
        assert result.context_tokens == 1200


# -- interrupt during a tool -----------------------------------------------------------------


def test_interrupt_during_sleep_ends_the_sleep_and_keeps_the_process(live: Live) -> None:
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
        # Codex leaves the command running after turn/interrupt: the transport ends it.
        assert run_processes(home, "sleep 30") == [], "the interrupted sleep survived"

        live.script(Rule(respond=Text(HELLO)))
        after = session.turn("Now just say hello.").result
    assert after.text == HELLO
    assert not after.interrupted
    assert after.session_id == result.session_id
    assert len(live.executor.spawned) == 1, live.executor.argvs


# -- steer -----------------------------------------------------------------------------------


def test_steer_during_a_tool_reaches_the_model_inside_the_same_turn(live: Live) -> None:
    steer_text = "STEER-MARKER also mention a banana"
    live.script(*_tool_then_text("sleep 3"))
    home = live.rig.cli.home
    with live.session() as session:
        running = Background(lambda: session.turn("Sleep a little.").result)
        wait_for(lambda: bool(run_processes(home, "sleep 3")), SEEN_WITHIN_S, "sleep 3")
        session.steer(steer_text)
        result = running.join(TURN_TIMEOUT)
        assert result.text == AFTER_TOOL
        assert not result.interrupted
        assert any(
            isinstance(e, Lifecycle) and e.kind == "steered" and e.detail == steer_text
            for e in live.events
        )
        assert steer_text in live.main_bodies()[-1], "the model never saw the steer"
    assert len(live.executor.spawned) == 1


# -- approvals -------------------------------------------------------------------------------


def test_approvals_accept_runs_the_command_and_decline_does_not(live: Live) -> None:
    asked: list[ApprovalRequest] = []

    def decide(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        command = str(request.args.get("command", ""))
        if "approved.txt" in command:
            return ApprovalDecision.allow()
        return ApprovalDecision.deny("not this one")

    agent = live.agent(permissions=NativePermissions.workspace_write(), approvals=decide)
    with live.session(agent) as session:
        live.script(*_tool_then_text("touch approved.txt"))
        accepted = session.turn("Touch a file.").result
        live.script(*_tool_then_text("touch declined.txt"))
        declined = session.turn("Touch another file.").result
    assert accepted.text == declined.text == AFTER_TOOL
    assert (live.work / "approved.txt").exists()
    assert not (live.work / "declined.txt").exists()
    assert [r.tool for r in asked] == ["command_execution", "command_execution"]
    answers = [e.allowed for e in live.events if isinstance(e, ApprovalAnswered)]
    assert answers == [True, False]


# -- resume ----------------------------------------------------------------------------------


def test_a_thread_resumes_in_a_new_process_with_its_history(live: Live) -> None:
    live.script(
        Rule(match=Match(assistant_turns=0), respond=Text("Noted: MANGOSTEEN.")),
        Rule(respond=Text(HELLO)),
    )
    with live.session() as session:
        first = session.turn("Remember the word MANGOSTEEN.").result
        session.release()
        wait_for(lambda: not live.live_pids(), PROMPT_RETURN_S, "the released process ending")
        after = session.turn("Which word?").result
    assert after.text == HELLO
    assert after.session_id == first.session_id
    assert after.resumed
    assert "MANGOSTEEN" in live.main_bodies()[-1], "the new process did not carry the history"
    assert len(live.executor.spawned) == 2
    # The resumed thread replays its stored total; the turn counts only its own request.
    assert after.usage.tokens.input_tokens == first.usage.tokens.input_tokens


def test_resuming_a_thread_codex_does_not_have_raises_session_resume_error(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    missing = "00000000-0000-7000-8000-000000000000"
    spec = ConversationSpec(
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        cwd=str(live.work),
        resume_session_id=missing,
    )
    conversation = live.agent().transport.open(spec)
    try:
        with pytest.raises(SessionResumeError) as failed:
            conversation.turn(TurnRequest("Say hello."), live.events.append)
    finally:
        conversation.close()
    assert failed.value.session_id == missing
    assert not live.main_bodies(), "the refused resume reached the model"


# -- failures ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (HttpError(500), FailureKind.TRANSIENT),
        (HttpError.context_overflow(), FailureKind.CONTEXT_OVERFLOW),
        (HttpError(401), FailureKind.AUTH),
    ],
    ids=["500", "400-context", "401"],
)
def test_an_api_failure_is_classified_and_the_process_takes_the_next_turn(
    live: Live, answer: HttpError, kind: FailureKind
) -> None:
    live.script(Rule(respond=answer))
    with live.session() as session:
        with pytest.raises(CliExitError) as failed:
            session.turn("Say hello.")
        assert failed.value.kind is kind, failed.value
        live.script(Rule(respond=Text(HELLO)))
        after = session.turn("Say hello.").result
    assert after.text == HELLO
    if kind is not FailureKind.CONTEXT_OVERFLOW:
        # (A session forgets a conversation whose context overflowed: that one starts anew.)
        assert len(live.executor.spawned) == 1, live.executor.argvs


# -- structured output -------------------------------------------------------------------------


def test_an_output_schema_gives_the_structured_answer(live: Live, tmp_path: Path) -> None:
    live.script(Rule(respond=StructuredOutput({"answer": "hello", "count": 2})))
    with live.session() as session:
        request = TurnRequest("Answer.", output_schema=OutputSchema(SCHEMA, tmp_path))
        result = session.turn(request).result
    assert result.structured_output == {"answer": "hello", "count": 2}
    assert '"json_schema"' in live.main_bodies()[-1]


# -- the shared contracts, on the real CLI -----------------------------------------------------


def _contract_script(turns: Sequence[ContractTurn]) -> tuple[Rule, ...]:
    """The model's answers: one per answering contract turn, in order; the rest hangs.

    With a hanging turn in the script, the answers go to the contracts' later turns (their
    prompt is "next") and everything else hangs: an interrupt that reaches Codex before its
    model request leaves that request unsent, so the hang cannot be counted by its place, and
    Codex then sends the unanswered prompt again with the next one.
    """
    answers = [turn for turn in turns if not turn.hang]
    if len(answers) == len(turns):
        return tuple(Rule(respond=Text(turn.text), times=1) for turn in answers)
    later = Match(user_text_contains="next")
    rules = [Rule(match=later, respond=Text(turn.text), times=1) for turn in answers]
    return (*rules, Rule(respond=Hang(60.0)))


class _ContractRig:
    """What one contract test runs on: a work dir, a thread to copy, and its conversations."""

    def __init__(self, rig: StreamRig, work: Path, template: Path) -> None:
        self.rig = rig
        self.work = work
        self.template = template
        self.opened: list[Conversation] = []
        self.transport = Agent(
            "codex",
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            model=rig.cli.model,
            env=dict(rig.cli.env),
            transport=TransportKind.STREAM,
            check_timeout=60.0,
        ).transport

    def seed(self, session_id: str) -> None:
        """Make Codex hold thread ``session_id``: a copy of a real rollout under that id."""
        old = self.template.name.rsplit("-", 5)[-5:]
        old_id = "-".join(old).removesuffix(".jsonl")
        text = self.template.read_text().replace(old_id, session_id)
        name = self.template.name.replace(old_id, session_id)
        (self.template.parent / name).write_text(text)

    def open(self, spec: ConversationSpec) -> Conversation:
        if spec.resume_session_id is not None:
            self.seed(spec.resume_session_id)
        conversation = self.transport.open(spec)
        self.opened.append(conversation)
        return conversation


class _SeedingTransport:
    """The app-server transport, with every thread it is asked to resume created first."""

    kind = TransportKind.STREAM

    def __init__(self, rig: _ContractRig) -> None:
        self._rig = rig

    @property
    def profile(self) -> ProviderProfile:
        return self._rig.transport.profile

    def open(self, spec: ConversationSpec) -> Conversation:
        return self._rig.open(spec)


@pytest.fixture(scope="module")
def template_thread(stream_rig: StreamRig) -> Path:
    """The rollout of one real thread, copied to make the threads the contracts resume."""
    stream_rig.server.set_script((Rule(respond=Text(HELLO)),))
    events: list[AgentEvent] = []
    work = stream_rig.root / "template"
    work.mkdir()
    agent = Agent(
        "codex",
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        model=stream_rig.cli.model,
        env=dict(stream_rig.cli.env),
        transport=TransportKind.STREAM,
        event_handlers=events.append,
        check_timeout=60.0,
    )
    with agent.start_session(str(work)) as session:
        session.turn("Say hello.")
    (path,) = [e.detail for e in events if isinstance(e, Lifecycle) and e.kind == "session_file"]
    return Path(path)


@pytest.fixture
def contract_rig(
    stream_rig: StreamRig,
    template_thread: Path,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[_ContractRig]:
    stream_rig.server.set_script(())
    stream_rig.server.clear_requests()
    work = stream_rig.root / "contracts" / request.node.name
    work.mkdir(parents=True)
    # The contracts open conversations without a cwd: the CLI runs in the test's own.
    monkeypatch.chdir(work)
    rig = _ContractRig(stream_rig, work, template_thread)
    yield rig
    for conversation in rig.opened:
        conversation.close()
    assert_nothing_left_running(stream_rig.cli.home)


class TestStreamConversationContract(SteerableConversationContract):
    """The (steerable) Conversation contract on real codex app-server conversations."""

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
    """The Transport contract on the real app-server transport."""

    @pytest.fixture(autouse=True)
    def _rig(self, contract_rig: _ContractRig) -> None:
        self.rig = contract_rig

    def make_transport(self, turns: Sequence[ContractTurn]) -> Transport:
        self.rig.rig.server.set_script(_contract_script(turns))
        return _SeedingTransport(self.rig)
