"""An Agent on the Claude provider through several turns: a transient failure, a lost session."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentshim.agent import Agent
from agentshim.cli_agent import CliAgent
from agentshim.core.errors import FailureKind, TurnFailedError
from agentshim.core.events import AgentEvent, Lifecycle
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.session_policy import Continuity
from agentshim.core.usage import TokenUsage
from agentshim.execution.executor import CommandRequest
from agentshim.state.checkpoints import FileCheckpointStore
from agentshim.testing import FakeExecutor, FakeRun, scripted_resume_failure, scripted_turn
from agentshim.testing.clock import FakeClock, SequentialIds

from .scripted_claude import ENV, PROVIDER, resumed_id

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / PROVIDER


def overloaded(session_id: str) -> FakeRun:
    """Claude Code's recorded answer to HTTP 529 after its own retries, moved to ``session_id``."""
    lines = (FIXTURES / "e2_http529.stdout.jsonl").read_text().splitlines()
    recorded = json.loads(lines[0])["session_id"]
    return FakeRun(stdout=[line.replace(recorded, session_id) for line in lines], returncode=1)


class Script:
    """What the fake CLI does on each run, and what it was asked."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, str | None]] = []
        self.runs = [
            lambda _: scripted_turn(
                PROVIDER,
                text="one",
                session_id="sess-a",
                usage=TokenUsage(input_tokens=100, output_tokens=10),
            ),
            lambda resumed: overloaded(resumed),
            lambda resumed: scripted_turn(PROVIDER, text="two", session_id=resumed),
            lambda resumed: scripted_resume_failure(PROVIDER, session_id=resumed),
            lambda _: scripted_turn(PROVIDER, text="three", session_id="sess-b"),
            lambda resumed: scripted_turn(PROVIDER, text="four", session_id=resumed),
        ]

    def __call__(self, request: CommandRequest) -> FakeRun:
        resumed = resumed_id(request)
        self.asked.append((str(request.stdin), resumed))
        return self.runs.pop(0)(resumed)


def test_a_session_survives_a_transient_failure_and_a_lost_conversation(tmp_path: Path) -> None:
    script = Script()
    clock = FakeClock()
    events: list[AgentEvent] = []
    agent = Agent(
        PROVIDER,
        executor=FakeExecutor(script),
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        env=ENV,
        clock=clock,
        ids=SequentialIds(),
        event_handlers=[_Collect(events)],
    )
    store = FileCheckpointStore(tmp_path / "checkpoints")
    session = agent.start_session(str(tmp_path), checkpoints=store, checkpoint_key="user-1")

    def ask(prompt: str) -> tuple[str, Continuity, str | None]:
        turn = session.turn(prompt)
        return turn.result.text, turn.continuity, turn.session_id

    assert ask("first") == ("one", Continuity.CONTINUED, "sess-a")
    saved = store.load("user-1")
    assert saved is not None
    assert saved.session_id == "sess-a"
    assert saved.usage is not None
    assert saved.usage.tokens.input_tokens == 100

    assert ask("second") == ("two", Continuity.CONTINUED, "sess-a")
    assert clock.waits == [30.0]
    assert any(isinstance(e, Lifecycle) and e.kind == "retry_scheduled" for e in events)

    assert ask("third") == ("three", Continuity.REPLACED, "sess-b")
    assert session.session_id == "sess-b"
    saved = store.load("user-1")
    assert saved is not None
    assert saved.session_id == "sess-b"

    assert ask("fourth") == ("four", Continuity.CONTINUED, "sess-b")
    assert script.asked == [
        ("first", None),
        ("second", "sess-a"),
        ("second", "sess-a"),
        ("third", "sess-a"),
        ("third", None),
        ("fourth", "sess-b"),
    ]

    session.close()
    later = agent.start_session(str(tmp_path), checkpoints=store, checkpoint_key="user-1")
    assert later.session_id == "sess-b"


def test_the_recorded_overload_is_a_transient_failure_on_a_resumed_turn() -> None:
    agent = CliAgent(PROVIDER, executor=FakeExecutor(overloaded("sess-x")), env=ENV)
    session = agent.start_session(session_id="sess-x")
    with pytest.raises(TurnFailedError) as raised:
        session.turn("hello")
    assert raised.value.kind is FailureKind.TRANSIENT


class _Collect:
    def __init__(self, into: list[AgentEvent]) -> None:
        self.into = into

    def on_event(self, event: AgentEvent) -> None:
        self.into.append(event)
