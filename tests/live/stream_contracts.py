"""The shared conversation and transport contracts, run by a live suite on its real CLI.

A suite gives a ``contract_rig`` fixture (its body is :func:`contract_test`, with how its CLI
is made to hold a conversation of a given id) and subclasses the contract it passes after
the mixin here, e.g. ``class TestStreamConversationContract(LiveConversationContract,
SteerableConversationContract)``. The contracts resume conversations by ids of their own; a
real CLI resumes only conversations it holds, so each is seeded (created under that id) as
it is opened.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import ClassVar

import pytest

from agentshim.agent import Agent
from agentshim.core.conversation import Conversation, ConversationSpec, Transport, TransportKind
from agentshim.core.events import AgentEvent, Lifecycle
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.profile import ProviderProfile
from agentshim.doctor.model_server import Hang, Match, Rule, Text
from agentshim.testing.session_contracts import ContractTurn

from .streams import TURN_TIMEOUT, StreamRig
from .suite import assert_nothing_left_running

__all__ = [
    "SEED_MARKER",
    "ContractRig",
    "LiveConversationContract",
    "LiveTransportContract",
    "claude_seed",
    "codex_script",
    "codex_seed",
    "codex_template",
    "contract_fixture",
    "contract_test",
    "pi_seed",
    "seeded_script",
]

#: In the prompt of the turn that creates a conversation the contracts resume.
SEED_MARKER = "AGENTSHIM-CONTRACT-SEED"

Script = Callable[[Sequence[ContractTurn]], tuple[Rule, ...]]


def seeded_script(turns: Sequence[ContractTurn]) -> tuple[Rule, ...]:
    """The model's answers: one per contract turn, in order (a hang holds its request).

    A seeding turn (its prompt carries :data:`SEED_MARKER`) is answered apart from them.
    """
    seed = Rule(match=Match(user_text_contains=SEED_MARKER), respond=Text("Seeded."))
    answers = [
        Rule(respond=Hang(60.0) if turn.hang else Text(turn.text), times=1) for turn in turns
    ]
    return (seed, *answers)


class ContractRig:
    """What one contract test runs on: a work dir the CLI runs in, and its conversations."""

    def __init__(
        self,
        rig: StreamRig,
        work: Path,
        seed: Callable[[ContractRig, str], None],
        script: Script,
        *,
        pin_cwd: bool,
    ) -> None:
        self.rig = rig
        self.work = work
        self.script = script
        self.opened: list[Conversation] = []
        self._seed = seed
        self._pin_cwd = pin_cwd
        self.transport = Agent(
            rig.provider,
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            model=rig.cli.model,
            env=dict(rig.cli.env),
            transport=rig.transport,
            check_timeout=60.0,
        ).transport

    def play(self, turns: Sequence[ContractTurn]) -> None:
        """Script the model server to answer ``turns``."""
        self.rig.server.set_script(self.script(turns))

    def seeding(self, transport: Transport) -> Transport:
        """``transport``, with every conversation it is asked to resume created first."""
        self.transport = transport
        return _SeedingTransport(self)

    def open(self, spec: ConversationSpec) -> Conversation:
        """Open a conversation, its CLI first made to hold the one it resumes."""
        if self._pin_cwd:
            spec = dataclasses.replace(spec, cwd=str(self.work))
        if spec.resume_session_id is not None:
            self._seed(self, spec.resume_session_id)
        conversation = self.transport.open(spec)
        self.opened.append(conversation)
        return conversation


class _SeedingTransport:
    """The suite's transport, with every conversation it is asked to resume created first."""

    def __init__(self, rig: ContractRig) -> None:
        self._rig = rig

    @property
    def kind(self) -> TransportKind:
        return self._rig.rig.transport

    @property
    def profile(self) -> ProviderProfile:
        return self._rig.transport.profile

    def open(self, spec: ConversationSpec) -> Conversation:
        return self._rig.open(spec)


def contract_test(
    rig: StreamRig,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    seed: Callable[[ContractRig, str], None],
    script: Script = seeded_script,
    *,
    pin_cwd: bool = False,
) -> Iterator[ContractRig]:
    """The body of a suite's ``contract_rig`` fixture: its conversations closed after the test,
    and nothing left running.

    The contracts open conversations without a cwd: the CLI runs in the test's own work dir,
    the test's current directory (or, with ``pin_cwd``, named in every spec).
    """
    rig.server.set_script(())
    rig.server.clear_requests()
    work = rig.root / "contracts" / request.node.name
    work.mkdir(parents=True)
    if not pin_cwd:
        monkeypatch.chdir(work)
    contract = ContractRig(rig, work, seed, script, pin_cwd=pin_cwd)
    yield contract
    for conversation in contract.opened:
        conversation.close()
    assert_nothing_left_running(rig.cli.home)


def contract_fixture(
    seed: Callable[[ContractRig, str], None], *, pin_cwd: bool = False
) -> Callable[..., Iterator[ContractRig]]:
    """A suite's ``contract_rig`` fixture, on its ``rig``, for
    ``contract_rig = contract_fixture(seed)`` in its module."""

    @pytest.fixture(name="contract_rig")
    def contract_rig(
        rig: StreamRig, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
    ) -> Iterator[ContractRig]:
        yield from contract_test(rig, request, monkeypatch, seed, pin_cwd=pin_cwd)

    return contract_rig


def claude_seed(contract: ContractRig, session_id: str) -> None:
    """Make Claude Code hold conversation ``session_id``: one turn that starts it by id."""
    argv = [str(contract.rig.binary), "-p", "--session-id", session_id, "--output-format", "json"]
    argv += ["--dangerously-skip-permissions", f"{SEED_MARKER}: start the conversation."]
    subprocess.run(
        argv,
        cwd=contract.work,
        env=dict(contract.rig.cli.env),
        capture_output=True,
        timeout=TURN_TIMEOUT,
        check=True,
    )


def pi_seed(contract: ContractRig, session_id: str) -> None:
    """Make Pi hold conversation ``session_id`` for this work dir: an empty session file.

    Pi names its sessions itself; one with a given id is a file in its sessions
    directory (``--<cwd with / as ->--/<timestamp>_<id>.jsonl``) whose header names it.
    """
    agent_dir = Path(contract.rig.cli.env["PI_CODING_AGENT_DIR"])
    folder = agent_dir / "sessions" / f"--{str(contract.work).strip('/').replace('/', '-')}--"
    folder.mkdir(parents=True, exist_ok=True)
    header = {
        "type": "session",
        "version": 3,
        "id": session_id,
        "timestamp": "2026-12-01T00:00:00.000Z",
        "cwd": str(contract.work),
    }
    (folder / f"2026-12-01T00-00-00-000Z_{session_id}.jsonl").write_text(json.dumps(header) + "\n")


def codex_script(turns: Sequence[ContractTurn]) -> tuple[Rule, ...]:
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


def codex_seed(template: Path, contract: ContractRig, session_id: str) -> None:
    """Make Codex hold thread ``session_id``: a copy of ``template``, a real rollout, under that id."""
    old = template.name.rsplit("-", 5)[-5:]
    old_id = "-".join(old).removesuffix(".jsonl")
    text = template.read_text().replace(old_id, session_id)
    name = template.name.replace(old_id, session_id)
    (template.parent / name).write_text(text)


def codex_template(rig: StreamRig) -> Path:
    """The rollout of one real Codex thread, for :func:`codex_seed` to copy."""
    rig.server.set_script((Rule(respond=Text("Hello.")),))
    events: list[AgentEvent] = []
    work = rig.root / "template"
    work.mkdir()
    agent = Agent(
        "codex",
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        model=rig.cli.model,
        env=dict(rig.cli.env),
        transport=TransportKind.LONG_LIVED,
        event_handlers=events.append,
        check_timeout=60.0,
    )
    with agent.start_session(str(work)) as session:
        session.turn("Say hello.")
    (path,) = [e.detail for e in events if isinstance(e, Lifecycle) and e.kind == "session_file"]
    return Path(path)


class _LiveContract:
    contract: ContractRig

    @pytest.fixture(autouse=True)
    def _contract_rig(self, contract_rig: ContractRig) -> None:
        self.contract = contract_rig


class LiveConversationContract(_LiveContract):
    """``make_conversation`` for a conversation contract, on the suite's ``contract_rig``."""

    io_timeout: ClassVar[float] = 30.0  # a cold start of the CLI on a busy machine takes seconds

    def make_conversation(
        self, turns: Sequence[ContractTurn], *, resume_session_id: str | None = None
    ) -> Conversation:
        self.contract.play(turns)
        spec = ConversationSpec(
            cwd=str(self.contract.work),
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            resume_session_id=resume_session_id,
        )
        return self.contract.open(spec)


class LiveTransportContract(_LiveContract):
    """``make_transport`` for the transport contract, on the suite's ``contract_rig``."""

    def make_transport(self, turns: Sequence[ContractTurn]) -> Transport:
        self.contract.play(turns)
        return _SeedingTransport(self.contract)
