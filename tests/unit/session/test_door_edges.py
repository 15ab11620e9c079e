"""The front doors at their edges: handlers that raise, locks that must not leak or be skipped,
values of the wrong type, and the words both doors share."""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentshim.agent import Agent
from agentshim.cli_agent import CliAgent
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    InvalidRequestError,
    TurnCancelledError,
)
from agentshim.core.events import AgentEvent, AssistantText, Lifecycle, SessionStarted
from agentshim.core.mcp import McpServer
from agentshim.core.provider import McpInstallation
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.execution.executor import (
    CommandHandle,
    CommandRequest,
    CommandResult,
    CommandStreamSink,
)
from agentshim.providers.claude.provider import ClaudeProvider
from agentshim.testing import FakeExecutor, scripted_turn
from agentshim.testing.checkpoints import FakeCheckpointStore
from agentshim.testing.conversation import FakeConversation, FakeOutcome, FakeTransport

from .helpers import HANG_GUARD_S
from .scripted_claude import ENV, PROVIDER, resumed_id
from .test_doors import BYPASS, DENY, InThread, answer, claude_agent

PIPE = BrokenPipeError(32, "Broken pipe")


def disconnected(event: AgentEvent) -> None:
    """A streaming client that went away: writing the event to it fails."""
    if isinstance(event, AssistantText):
        raise PIPE


class TestOneVocabulary:
    def test_agent_start_session_takes_the_session_id_to_resume(self) -> None:
        executor = FakeExecutor([answer("hi", session_id="s-9")])
        session = claude_agent(executor).start_session(session_id="s-9")
        assert session.session_id == "s-9"
        assert session.turn("x").result.text == "hi"
        assert resumed_id(executor.requests[0]) == "s-9"


class TestAHandlerThatRaisesAnOSError:
    def test_an_agent_session_turn_fails_with_the_handlers_own_exception(self) -> None:
        session = CliAgent(PROVIDER, executor=FakeExecutor([answer()]), env=ENV).start_session()
        with pytest.raises(BrokenPipeError) as caught:
            session.turn("x", on_event=disconnected)
        assert caught.value is PIPE

    def test_a_resumed_session_turn_keeps_its_conversation_and_checkpoint(self) -> None:
        store = FakeCheckpointStore()
        agent = claude_agent(FakeExecutor([answer(), answer("again")]))
        session = agent.start_session(checkpoints=store, checkpoint_key="k")
        session.adopt("s-1")
        with pytest.raises(BrokenPipeError) as caught:
            session.turn("x", on_event=disconnected)
        assert caught.value is PIPE
        assert session.session_id == "s-1"
        saved = store.load("k")
        assert saved is not None
        assert saved.session_id == "s-1"


class TestAFreshTurnHoldsTheConversationItNames:
    def test_under_agent_over_a_session_that_adopts_the_id_mid_turn_waits(self) -> None:
        transport = FakeTransport(
            [FakeOutcome.success("a", session_id="conv-1"), FakeOutcome.success("b")]
        )
        agent = Agent(transport, permissions=BYPASS, approvals=DENY)
        first, second = agent.start_session(), agent.start_session()
        named, release = threading.Event(), threading.Event()

        def hold(event: AgentEvent) -> None:
            if isinstance(event, SessionStarted):
                named.set()
                release.wait(HANG_GUARD_S)

        one = InThread(lambda: first.turn("one", on_event=hold))
        assert named.wait(HANG_GUARD_S)
        assert second.adopt("conv-1")
        two = InThread(lambda: second.turn("two"))
        two.thread.join(0.3)
        assert two.thread.is_alive(), "the second session ran in conv-1 during the first turn"
        release.set()
        one.join()
        two.join()
        assert (one.error, two.error) == (None, None)
        assert [c.session_id for c in transport.conversations] == ["conv-1", "conv-1"]


class _NotedInstallation:
    """An MCP install whose restore could not put everything back exactly."""

    argv: Sequence[str] = ()

    def restore(self) -> str | None:
        return "kept the original next to it"


@dataclass(frozen=True, kw_only=True, eq=False)
class _NotingClaude(ClaudeProvider):
    def install_mcp(self, workspace: Path | None, servers: Sequence[McpServer]) -> McpInstallation:
        return _NotedInstallation()


def _failing_log(line: str) -> None:
    raise RuntimeError(f"the log is broken: {line}")


class TestALogThatRaisesWhileTheTurnEnds:
    def _session(self, *runs: object) -> tuple[CliAgent, FakeExecutor]:
        executor = FakeExecutor(list(runs))  # type: ignore[arg-type]
        agent = CliAgent(_NotingClaude(), executor=executor, env=ENV, log=_failing_log)
        return agent, executor

    def test_the_result_still_comes_back_and_the_conversation_is_free(self) -> None:
        agent, executor = self._session(answer("one"), answer("two"), answer("three"))
        session = agent.start_session(session_id="s-1")
        seen: list[AgentEvent] = []
        result = session.turn("x", on_event=seen.append)
        assert result.text == "one"
        assert result.notices == ("kept the original next to it",)
        assert Lifecycle("mcp_config_restore", "kept the original next to it") in seen
        assert session.turn("y").text == "two"
        other = InThread(lambda: agent.start_session(session_id="s-1").turn("z"))
        other.join()
        assert other.error is None, "the conversation's lock leaked"
        assert len(executor.requests) == 3

    def test_a_failed_turn_raises_its_own_error_not_the_logs(self) -> None:
        agent, _ = self._session(scripted_turn(PROVIDER, returncode=1), answer())
        session = agent.start_session(session_id="s-1")
        with pytest.raises(CliExitError):
            session.turn("x")
        other = InThread(lambda: agent.start_session(session_id="s-1").turn("z"))
        other.join()
        assert other.error is None, "the conversation's lock leaked"


class TestARefusedHandlerSpendsNothing:
    def test_a_bad_on_event_leaves_the_journaled_ticket_runnable(self) -> None:
        transport = FakeTransport([FakeOutcome.success("hi")])
        session = Agent(transport, permissions=BYPASS, approvals=DENY).start_session()
        journaled = session.prepare_turn("journaled")
        with pytest.raises(InvalidRequestError, match="on_event"):
            session.turn("other", on_event=42)  # type: ignore[arg-type]
        assert session.turn(journaled).result.text == "hi"


class TestValuesOfTheWrongTypeAtTheDoors:
    def test_a_single_function_is_taken_where_handlers_are(self) -> None:
        seen: list[AgentEvent] = []
        claude_agent(FakeExecutor([answer("a")]), event_handlers=seen.append).start_session().turn(
            "x"
        )
        CliAgent(
            PROVIDER, executor=FakeExecutor([answer("b")]), env=ENV, event_handlers=seen.append
        ).run("y")
        assert [e.text for e in seen if isinstance(e, AssistantText)] == ["a", "b"]

    @pytest.mark.parametrize(
        ("door", "field"),
        [
            (
                lambda: CliAgent(PROVIDER, executor=FakeExecutor(), env=ENV, event_handlers=None),
                "CliAgent.event_handlers",
            ),
            (
                lambda: claude_agent(FakeExecutor(), event_handlers=None),
                "Agent.event_handlers",
            ),
            (
                lambda: claude_agent(FakeExecutor()).start_session(mcp_servers=None),
                "Agent.start_session.mcp_servers",
            ),
            (
                lambda: claude_agent(FakeExecutor([answer()])).start_session(123).turn("x"),
                "Agent.start_session.cwd",
            ),
            (
                lambda: (
                    CliAgent(PROVIDER, executor=FakeExecutor([answer()]), env=ENV)
                    .start_session(cwd=123)
                    .turn("x")
                ),
                "AgentSession.cwd",
            ),
        ],
        ids=[
            "CliAgent.event_handlers",
            "Agent.event_handlers",
            "mcp_servers",
            "Agent.cwd",
            "CliAgent.cwd",
        ],
    )
    def test_is_refused_naming_the_field(self, door: Callable[[], object], field: str) -> None:
        with pytest.raises(InvalidRequestError) as caught:
            door()
        assert caught.value.field == field


class TestAnOutputSchemaThatCannotBeWritten:
    def test_refuses_the_turn_naming_the_directory_before_anything_runs(
        self, tmp_path: Path
    ) -> None:
        blocker = tmp_path / "a-file"
        blocker.write_text("not a directory")
        executor = FakeExecutor([scripted_turn("codex", text="hi", session_id="s-1")])
        agent = CliAgent("codex", executor=executor, env=ENV)
        schema = OutputSchema(
            {"type": "object", "properties": {}, "additionalProperties": False},
            host_dir=blocker / "schemas",
        )
        with pytest.raises(AgentShimError, match="cannot write the output schema") as caught:
            agent.run(TurnRequest("x", output_schema=schema))
        assert str(blocker) in str(caught.value)
        assert executor.requests == []


class TestAnInterruptBeforeTheCliStarts:
    def test_while_the_conversation_opens_the_turn_raises_turn_cancelled(self) -> None:
        opening, go = threading.Event(), threading.Event()

        class SlowOpen(FakeTransport):
            def open(self, spec: ConversationSpec) -> FakeConversation:
                opening.set()
                go.wait(HANG_GUARD_S)
                return super().open(spec)

        transport = SlowOpen([FakeOutcome.success("hi")])
        session = Agent(transport, permissions=BYPASS, approvals=DENY).start_session()
        turn = InThread(lambda: session.turn("x"))
        assert opening.wait(HANG_GUARD_S)
        session.interrupt()
        go.set()
        turn.join()
        assert isinstance(turn.error, TurnCancelledError)
        assert session.turn("again").result.text == "hi", "the interrupted turn ran"


class _SwallowingSink:
    """What a careless executor does: an exception from the sink is dropped."""

    def __init__(self, sink: CommandStreamSink) -> None:
        self._sink = sink

    def started(self, handle: CommandHandle) -> None:
        self._sink.started(handle)

    def stdout(self, line: str, /) -> None:
        try:
            self._sink.stdout(line)
        except Exception:
            pass

    def stderr(self, line: str, /) -> None:
        self._sink.stderr(line)


class _SwallowingExecutor(FakeExecutor):
    def run(self, request: CommandRequest, sink: CommandStreamSink) -> CommandResult:
        return super().run(request, _SwallowingSink(sink))


def test_a_handlers_exception_an_executor_swallowed_still_fails_the_turn() -> None:
    agent = CliAgent(PROVIDER, executor=_SwallowingExecutor([answer()]), env=ENV)
    with pytest.raises(BrokenPipeError) as caught:
        agent.run("x", on_event=disconnected)
    assert caught.value is PIPE
