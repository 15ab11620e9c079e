"""A service switching its sessions to a long-lived transport (Claude Code's stream, and Pi's RPC).

What every long-lived session does is checked on both; what is Claude's own stays Claude's."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import pytest

from agentshim.core.conversation import TransportKind
from agentshim.core.errors import (
    CliDiedError,
    InvalidRequestError,
    NoRunningTurnError,
    ProviderCapabilityError,
    TurnStalledError,
)
from agentshim.core.events import AgentEvent, ToolCall
from agentshim.core.session_policy import Continuity
from agentshim.session import Session
from agentshim.testing import FakeExecutor, FakeRun, scripted_turn
from agentshim.testing.claude_stream import ClaudePeerTurn, ClaudeStreamPeers
from agentshim.testing.pi_rpc import PiPeerTurn, PiRpcPeers
from tests.unit.session.helpers import quiet_agent, stream_agent

SLEEP = {"command": "sleep 30"}


@dataclass(frozen=True)
class LongLived:
    """One provider's long-lived fake CLI: how its turns are scripted and its argv read."""

    provider: str
    peers: Callable[[list[Any]], Any]
    turn: Callable[..., Any]
    shell_tool: str
    mode: tuple[str, str]  # the flag that starts the long-lived protocol, and its value
    resume_flag: str


LONG_LIVED = [
    pytest.param(
        LongLived(
            "claude",
            ClaudeStreamPeers,
            ClaudePeerTurn,
            "Bash",
            ("--input-format", "stream-json"),
            "--resume",
        ),
        id="claude",
    ),
    pytest.param(
        LongLived("pi", PiRpcPeers, PiPeerTurn, "bash", ("--mode", "rpc"), "--session"),
        id="pi",
    ),
]


def value_of(argv: Sequence[str], flag: str) -> str:
    return argv[list(argv).index(flag) + 1]


def killed_while_idle(executor: FakeExecutor, session: Session) -> None:
    executor.processes[0].kill()  # the OOM killer, between turns


def released_while_idle(executor: FakeExecutor, session: Session) -> None:
    session.release()


@pytest.mark.parametrize("cli", LONG_LIVED)
class TestEveryStreamSession:
    def test_one_argument_switches_every_turn_onto_one_process(self, cli: LongLived) -> None:
        agent, executor = stream_agent(cli.provider, cli.peers([cli.turn("a"), cli.turn("b")]))
        with agent.start_session() as session:
            first = session.turn("one")
            second = session.turn("two")
        assert (first.result.text, second.result.text) == ("a", "b")
        assert len(executor.spawned) == 1
        argv = executor.spawned[0].argv
        assert argv[0] == f"/usr/bin/{cli.provider}"
        assert value_of(argv, cli.mode[0]) == cli.mode[1]
        assert second.continuity is Continuity.CONTINUED
        assert executor.processes[0].stdin_closed, "closing the session ends the process"

    def test_interrupt_keeps_the_conversation_and_the_process(self, cli: LongLived) -> None:
        peers = cli.peers(
            [cli.turn(tool=cli.shell_tool, tool_input=SLEEP, hang=True), cli.turn("next")]
        )
        agent, executor = stream_agent(cli.provider, peers)
        session = agent.start_session()

        def interrupt_at_the_tool_call(event: AgentEvent) -> None:
            if isinstance(event, ToolCall):  # the turn runs, its command hangs
                session.interrupt()

        interrupted = session.turn("slow", on_event=interrupt_at_the_tool_call)
        assert interrupted.result.interrupted
        assert session.turn("again").result.text == "next"
        assert len(executor.spawned) == 1
        session.close()

    def test_a_dead_process_fails_the_turn_and_the_next_turn_resumes_by_id(
        self, cli: LongLived
    ) -> None:
        peers = cli.peers(
            [
                cli.turn("one"),
                cli.turn(tool=cli.shell_tool, tool_input=SLEEP, die=-9),
                cli.turn("back"),
            ]
        )
        agent, executor = stream_agent(cli.provider, peers)
        session = agent.start_session()
        first = session.turn("1")
        with pytest.raises(CliDiedError):
            session.turn("2")
        assert session.session_id == first.session_id, "the conversation was forgotten"
        after = session.turn("3")
        assert after.result.text == "back"
        assert after.session_id == first.session_id
        assert after.continuity is Continuity.RESUMED
        assert value_of(executor.spawned[1].argv, cli.resume_flag) == first.session_id
        session.close()


class TestStreamSessions:
    def test_steer_reaches_the_running_turn(self) -> None:
        peers = ClaudeStreamPeers([ClaudePeerTurn(hang=True)])
        agent, _ = stream_agent("claude", peers)
        session = agent.start_session()

        def steer() -> None:
            # The turn may still be starting its CLI: steer once it runs (a loaded machine
            # can take longer than any fixed delay to get there).
            while True:
                try:
                    session.steer("also this")
                    break
                except NoRunningTurnError:
                    time.sleep(0.01)
            session.interrupt()

        steering = threading.Thread(target=steer)
        steering.start()
        session.turn("go")
        steering.join()
        assert peers.peers[0].steered == ["also this"]
        session.close()

    @pytest.mark.parametrize(
        ("end_process", "continuity", "stdin_closed"),
        [
            pytest.param(killed_while_idle, Continuity.RESUMED, False, id="killed"),
            pytest.param(released_while_idle, Continuity.CONTINUED, True, id="released"),
        ],
    )
    def test_a_process_gone_between_turns_costs_no_turn_and_reopens_by_id(
        self,
        end_process: Callable[[FakeExecutor, Session], None],
        continuity: Continuity,
        stdin_closed: bool,
    ) -> None:
        peers = ClaudeStreamPeers([ClaudePeerTurn("one"), ClaudePeerTurn("back")])
        agent, executor = stream_agent("claude", peers)
        session = agent.start_session()
        first = session.turn("1")
        end_process(executor, session)
        assert executor.processes[0].stdin_closed is stdin_closed
        after = session.turn("2")
        assert after.result.text == "back"
        assert after.session_id == first.session_id
        assert after.continuity is continuity
        assert len(executor.spawned) == 2
        assert value_of(executor.spawned[1].argv, "--resume") == first.session_id
        prompts = [line for line in executor.processes[0].written if '"user"' in line]
        assert len(prompts) == 1, "nothing of the second turn went to the first process"
        session.close()

    def test_an_approval_handler_on_one_shot_is_refused(self) -> None:
        with pytest.raises(ProviderCapabilityError, match="LONG_LIVED"):
            quiet_agent(
                "claude",
                FakeExecutor(binaries={"claude": "/usr/bin/claude"}),
                approvals=lambda request: None,
            )


class TestOneShotStall:
    def test_a_one_shot_cli_silent_past_stall_timeout_fails_as_stalled(self) -> None:

        executor = FakeExecutor(
            FakeRun(
                stdout=['{"type":"system","subtype":"init","session_id":"s-1"}'], until_stopped=True
            ),
            binaries={"claude": "/usr/bin/claude"},
        )
        agent = quiet_agent("claude", executor, stall_timeout=0.2)
        session = agent.start_session()
        with pytest.raises(TurnStalledError) as caught:
            session.turn("go")
        assert caught.value.timeout == 0.2
        assert executor.requests[0].idle_timeout == 0.2
        assert session.session_id == "s-1", "a stalled turn keeps the conversation it named"


class TestFork:
    def test_a_one_shot_fork_resumes_with_fork_session_once_then_continues_the_fork(self) -> None:

        executor = FakeExecutor(
            [
                scripted_turn("claude", text="base", session_id="base-1"),
                scripted_turn("claude", text="forked", session_id="fork-1"),
                scripted_turn("claude", text="again", session_id="fork-1"),
            ],
            binaries={"claude": "/usr/bin/claude"},
        )
        agent = quiet_agent("claude", executor)
        base = agent.start_session()
        base.turn("start")
        fork = base.fork()
        first = fork.turn("branch")
        fork.turn("more")
        argv = [list(request.argv) for request in executor.requests]
        assert argv[1][argv[1].index("--resume") + 1] == "base-1"
        assert "--fork-session" in argv[1]
        assert "--fork-session" not in argv[2]
        assert argv[2][argv[2].index("--resume") + 1] == "fork-1"
        assert first.result.session_id == fork.session_id == "fork-1"
        assert base.session_id == "base-1"

    def test_a_stream_fork_starts_its_process_with_fork_session(self) -> None:
        peers = ClaudeStreamPeers([ClaudePeerTurn("forked")], session_id="base-2")
        agent, executor = stream_agent("claude", peers)
        session = agent.start_session(session_id="base-2", fork=True)
        turn = session.turn("branch")
        assert "--fork-session" in executor.spawned[0].argv
        assert turn.result.session_id == "base-2-fork"
        session.close()

    def test_a_provider_that_cannot_fork_says_so(self) -> None:

        agent = quiet_agent("codex", FakeExecutor(binaries={"codex": "/usr/bin/codex"}))
        session = agent.start_session(session_id="0199a213-81c0-7800-8aa1-bbab2a035a53", fork=True)
        with pytest.raises(ProviderCapabilityError, match="cannot fork"):
            session.turn("go")
        with pytest.raises(InvalidRequestError, match="fork"):
            agent.start_session(fork=True)


class TestNoHelperThreads:
    def test_stream_turns_start_no_thread_of_their_own(self) -> None:
        peers = ClaudeStreamPeers([ClaudePeerTurn(f"t{n}") for n in range(30)])
        agent, _ = stream_agent("claude", peers)
        session = agent.start_session()
        # Compared by identity: a thread an earlier test left may end meanwhile.
        before = set(threading.enumerate())
        seen: set[threading.Thread] = set()

        def count(event: object) -> None:
            seen.update(threading.enumerate())

        for _ in range(30):
            session.turn("go", on_event=count)
        assert seen <= before, "a turn ran with a helper thread alive"
        session.close()


class TestProbe:
    def test_a_stream_agent_reports_the_clis_readiness(self) -> None:
        executor = FakeExecutor(
            [FakeRun(stdout=["2.1.197 (Claude Code)"])],  # what probing's --version prints
            peers=ClaudeStreamPeers([]),
            binaries={"claude": "/usr/bin/claude"},
        )
        agent = quiet_agent(
            "claude",
            executor,
            env={"PATH": "/usr/bin", "ANTHROPIC_API_KEY": "k"},
            transport=TransportKind.LONG_LIVED,
        )
        readiness = agent.probe()
        assert readiness.ready
        assert readiness.binary_path == "/usr/bin/claude"
        assert readiness.version is not None
        assert "2.1.197" in readiness.version
        assert executor.spawned == [], "probing started a conversation process"


def test_a_long_lived_turn_has_the_catalogues_context_window_where_the_cli_says_none() -> None:
    agent, _ = stream_agent(
        "claude", ClaudeStreamPeers([ClaudePeerTurn("a")]), model="claude-opus-4-8[1m]"
    )
    with agent.start_session() as session:
        turn = session.turn("hi")
    assert turn.result.context_window == 1_000_000
