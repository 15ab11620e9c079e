from __future__ import annotations

import json
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import pytest

from agentshim import (
    AgentSession,
    CliAgent,
    CliCheckError,
    CliNotFoundError,
    InvalidRequestError,
    OutputSchema,
    SessionStateError,
    StdioMcpServer,
    TokenUsage,
    TurnCancelledError,
    TurnRequest,
)
from agentshim.core.conversation import TurnStop
from agentshim.core.events import (
    AgentEvent,
    Lifecycle,
    RunFinished,
    RunStarted,
    SessionStarted,
    TurnInterrupted,
)
from agentshim.execution.executor import CommandRequest
from agentshim.testing import (
    FakeExecutor,
    FakeRun,
    RecordingEventHandler,
    installed_mcp_servers,
    scripted_turn,
)

BINARIES = {
    name: f"/opt/bin/{name}" for name in ("claude", "codex", "gemini", "opencode", "copilot", "pi")
}
# An answer of one integer field, n.
N_SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


class InterruptOnFirstOutput:
    """Interrupts ``session``'s turn once, at the first thing its CLI prints."""

    def __init__(self) -> None:
        self.session: AgentSession | None = None

    def on_event(self, event: AgentEvent) -> None:
        if not isinstance(event, RunStarted) and self.session is not None:
            session, self.session = self.session, None
            session.interrupt()


def assert_conversation_free(agent: CliAgent, session_id: str) -> None:
    """A later turn in the conversation runs: no earlier turn left it held."""
    later = threading.Thread(
        target=agent.start_session(session_id=session_id).turn, args=("later",), daemon=True
    )
    later.start()
    later.join(10)
    assert not later.is_alive(), "the conversation was left held"


def assert_waits_for_the_first(
    first: tuple[Callable[[], object], threading.Event, threading.Event],
    second: tuple[Callable[[], object], threading.Event],
) -> None:
    """The second turn's CLI starts only once the first turn has ended.

    ``first`` is (its turn, set once its CLI is busy, set to let it end); ``second`` is (its
    turn, set once its CLI starts). The second turn starts while the first is busy.
    """
    (run_first, first_busy, release_first), (run_second, second_started) = first, second
    one = threading.Thread(target=run_first)
    one.start()
    assert first_busy.wait(10)
    two = threading.Thread(target=run_second)
    two.start()
    assert not second_started.wait(0.3), "the second turn ran inside the first"
    release_first.set()
    assert second_started.wait(10)
    one.join(10)
    two.join(10)


def make(runs: object, provider: str = "claude", **kwargs: object) -> tuple[CliAgent, FakeExecutor]:
    fake = FakeExecutor(runs, binaries=BINARIES)  # type: ignore[arg-type]
    return CliAgent(
        provider, executor=fake, env={"PATH": "/usr/bin", "HOME": "/home/u"}, **kwargs
    ), fake  # type: ignore[arg-type]


class TestConstruction:
    def test_binary_resolved_and_checked_once(self) -> None:
        agent, fake = make(scripted_turn("claude", text="a", session_id="s"))
        agent.run("one")
        agent.run("two")
        assert agent.cli.binary_path == "/opt/bin/claude"
        assert fake.checked == ["/opt/bin/claude"]

    def test_missing_binary(self) -> None:
        with pytest.raises(CliNotFoundError, match="claude"):
            CliAgent("claude", executor=FakeExecutor(binaries={}), env={})

    def test_failed_health_check(self) -> None:
        fake = FakeExecutor(binaries=BINARIES, unhealthy={"/opt/bin/claude": "exit 127"})
        with pytest.raises(CliCheckError, match="exit 127"):
            CliAgent("claude", executor=fake, env={})

    def test_a_facade_over_an_installed_cli_does_not_look_it_up_again(self) -> None:
        agent, fake = make(scripted_turn("claude", text="a", session_id="s"))
        other = CliAgent(replace(agent.cli, model="claude-opus-4-1"))
        other.run("x")
        assert fake.checked == ["/opt/bin/claude"]
        assert "--model" in fake.requests[0].argv
        assert "claude-opus-4-1" in fake.requests[0].argv
        assert agent.cli.model is None

    def test_a_facade_over_an_installed_cli_refuses_settings_that_are_the_cli_s(self) -> None:
        agent, fake = make(scripted_turn("claude", text="a", session_id="s"))
        with pytest.raises(InvalidRequestError, match="replace") as caught:
            CliAgent(agent.cli, model="claude-opus-4-1")
        assert caught.value.field == "model"
        assert fake.requests == []

    def test_handlers_are_combined(self) -> None:
        first, second = RecordingEventHandler(), RecordingEventHandler()
        agent, _ = make(
            scripted_turn("claude", text="a", session_id="s"), event_handlers=[first, second]
        )
        agent.run("x")
        assert first.events == second.events
        assert first.events


class TestTurn:
    def test_prompt_goes_on_stdin_only(self) -> None:
        agent, fake = make(scripted_turn("claude", text="done", session_id="s-1"))
        result = agent.run("secret prompt text", cwd="/tmp", timeout=12.0)
        request = fake.requests[0]
        assert request.stdin == "secret prompt text"
        assert all("secret prompt text" not in arg for arg in request.argv)
        assert request.cwd == "/tmp"
        assert request.timeout == 12.0
        assert request.env["HOME"] == "/home/u"
        assert result.text == "done"
        assert result.session_id == "s-1"
        assert not result.resumed
        assert result.exit_code == 0

    def test_request_env_overlays_agent_env(self) -> None:
        agent, fake = make(scripted_turn("claude", text="done", session_id="s-1"))
        agent.run(TurnRequest("x", env={"HOME": "/other", "EXTRA": "1"}))
        assert fake.requests[0].env["HOME"] == "/other"
        assert fake.requests[0].env["EXTRA"] == "1"
        assert fake.requests[0].env["PATH"] == "/usr/bin"

    def test_second_turn_resumes(self) -> None:
        agent, fake = make(
            [
                scripted_turn("claude", text="one", session_id="s-1"),
                scripted_turn("claude", text="two", session_id="s-1"),
            ]
        )
        session = agent.start_session()
        session.turn("first")
        result = session.turn("second")
        assert result.resumed
        argv = list(fake.requests[1].argv)
        assert argv[argv.index("--resume") + 1] == "s-1"
        assert session.last_result is result

    def test_events_bracket_the_run(self) -> None:
        recorder = RecordingEventHandler()
        agent, _ = make(scripted_turn("claude", text="a", session_id="s"), event_handlers=recorder)
        agent.run("x")
        assert isinstance(recorder.events[0], RunStarted)
        assert recorder.of_type(RunFinished) == [RunFinished(0)]
        assert recorder.of_type(SessionStarted) == [SessionStarted("s")]

    def test_usage_and_cost_reach_the_result(self) -> None:
        usage = TokenUsage(input_tokens=100, output_tokens=7)
        agent, _ = make(scripted_turn("claude", text="a", session_id="s", usage=usage))
        result = agent.run("x")
        assert result.usage.tokens.input_tokens == 100
        assert result.usage.tokens.output_tokens == 7

    def test_inline_schema_for_claude(self, tmp_path: Path) -> None:
        agent, fake = make(scripted_turn("claude", session_id="s", structured_output={"n": 3}))
        result = agent.run(TurnRequest("x", output_schema=OutputSchema(N_SCHEMA, tmp_path)))
        argv = list(fake.requests[0].argv)
        assert json.loads(argv[argv.index("--json-schema") + 1]) == N_SCHEMA
        assert result.structured_output == {"n": 3}

    def test_schema_file_for_codex(self, tmp_path: Path) -> None:
        # Codex takes strict schemas only: every object sets additionalProperties false.
        schema = {**N_SCHEMA, "additionalProperties": False}
        agent, fake = make(
            scripted_turn("codex", session_id="t-1", structured_output={"n": 3}), provider="codex"
        )
        result = agent.run(
            TurnRequest("x", output_schema=OutputSchema(schema, tmp_path, cli_dir="/inside"))
        )
        argv = list(fake.requests[0].argv)
        path = argv[argv.index("--output-schema") + 1]
        assert path.startswith("/inside/")
        written = tmp_path / Path(path).name
        assert json.loads(written.read_text()) == schema
        assert result.structured_output == {"n": 3}


class TestMcp:
    def test_config_file_installed_during_turn_and_restored_after(self, tmp_path: Path) -> None:
        original = b'{"mcpServers": {"mine": {"command": "x"}}, "other": 1}\n'
        (tmp_path / ".mcp.json").write_bytes(original)
        seen: dict[str, dict[str, object]] = {}

        def run(request: CommandRequest) -> FakeRun:
            seen.update(installed_mcp_servers("claude", request, tmp_path))
            return scripted_turn("claude", text="a", session_id="s")

        agent, _ = make(run)
        agent.run(
            TurnRequest(
                "x",
                cwd=str(tmp_path),
                mcp_servers=(StdioMcpServer("srv", "/usr/bin/srv", ("--a",)),),
            )
        )
        assert seen["srv"]["command"] == "/usr/bin/srv"
        assert (tmp_path / ".mcp.json").read_bytes() == original

    def test_restored_when_the_turn_fails(self, tmp_path: Path) -> None:
        agent, _ = make(FakeRun(stderr=["boom"], returncode=1))
        with pytest.raises(Exception):
            agent.run(
                TurnRequest("x", cwd=str(tmp_path), mcp_servers=(StdioMcpServer("srv", "srv"),))
            )
        assert not (tmp_path / ".mcp.json").exists()


@pytest.mark.parametrize("provider", ["claude", "codex", "gemini", "opencode", "copilot", "pi"])
@pytest.mark.parametrize("unsafe", ["-rf", "../x", "a b", "x" * 200])
def test_a_session_id_that_is_not_safe_is_never_adopted(provider: str, unsafe: str) -> None:
    recorder = RecordingEventHandler()
    agent, fake = make(
        [
            scripted_turn(provider, text="one", session_id=unsafe),
            scripted_turn(provider, text="two", session_id="sess-ok"),
        ],
        provider,
        event_handlers=recorder,
    )
    session = agent.start_session()
    first = session.turn("a")
    assert (first.text, first.session_id, session.session_id) == ("one", None, None)
    assert [e.kind for e in recorder.of_type(Lifecycle) if e.kind == "session_id_refused"] == [
        "session_id_refused"
    ]
    second = session.turn("b")
    assert (second.text, second.session_id) == ("two", "sess-ok")
    assert unsafe not in fake.requests[1].argv


class TestConcurrency:
    def test_second_turn_while_one_runs_is_refused(self) -> None:
        release = threading.Event()
        entered = threading.Event()

        def blocking(_: CommandRequest) -> FakeRun:
            entered.set()
            release.wait(5)
            return scripted_turn("claude", text="a", session_id="s")

        agent, _ = make(blocking)
        session = agent.start_session()
        worker = threading.Thread(target=session.turn, args=("one",))
        worker.start()
        assert entered.wait(5)
        with pytest.raises(SessionStateError):
            session.turn("two")
        assert not session.forget()
        assert not session.adopt("other")
        release.set()
        worker.join(5)
        assert session.session_id == "s"

    @pytest.mark.parametrize("provider", ["claude", "codex", "gemini", "opencode", "copilot", "pi"])
    def test_interrupting_a_resumed_turn_keeps_the_conversation(self, provider: str) -> None:
        stopper, recorder = InterruptOnFirstOutput(), RecordingEventHandler()
        agent, fake = make(
            scripted_turn(provider, text="a", session_id="sess-1"),
            provider,
            event_handlers=[stopper, recorder],
        )
        session = stopper.session = agent.start_session(session_id="sess-1")
        result = session.turn("x")
        assert result.interrupted
        assert result.exit_code == -signal.SIGTERM
        assert fake.handles[0].terminated
        assert session.session_id == "sess-1"
        assert isinstance(recorder.events[-1], TurnInterrupted)

    def test_a_failed_resume_stopped_on_request_is_not_a_lost_conversation(self) -> None:
        stopper = InterruptOnFirstOutput()
        agent, _ = make(
            scripted_turn("claude", text="a", session_id="sess-1", returncode=1),
            event_handlers=stopper,
        )
        session = stopper.session = agent.start_session(session_id="sess-1")
        result = session.turn("x")
        assert result.interrupted
        assert session.session_id == "sess-1"

    def test_an_interrupt_before_the_process_exists_is_honoured(self) -> None:
        holder: list[AgentSession] = []

        class InterruptOnStart:
            def on_event(self, event: AgentEvent) -> None:
                if isinstance(event, RunStarted) and len(holder) == 1:
                    holder[0].interrupt()
                    holder.append(holder[0])

        agent, fake = make(
            [
                scripted_turn("claude", text="a", session_id="s"),
                scripted_turn("claude", text="b", session_id="s"),
            ],
            event_handlers=InterruptOnStart(),
        )
        session = agent.start_session()
        holder.append(session)
        result = session.turn("x")
        assert result.interrupted
        assert result.exit_code == -signal.SIGTERM
        assert fake.handles[0].terminated
        # The request does not leak into the next turn.
        later = session.turn("y")
        assert later.text == "b"
        assert not later.interrupted
        assert not fake.handles[1].terminated

    def test_a_stop_requested_before_the_cli_starts_raises_with_nothing_run(self) -> None:
        agent, fake = make(scripted_turn("claude", text="a", session_id="s"))
        stop = TurnStop()
        stop.request()
        with pytest.raises(TurnCancelledError, match="nothing ran"):
            agent.start_session().turn("x", stop=stop)
        assert fake.requests == []

    def test_two_sessions_never_run_one_conversation_at_once(self) -> None:
        active = 0
        peak = 0
        guard = threading.Lock()

        def slow(_: CommandRequest) -> FakeRun:
            nonlocal active, peak
            with guard:
                active += 1
                peak = max(peak, active)
            time.sleep(0.1)
            with guard:
                active -= 1
            return scripted_turn("claude", text="a", session_id="shared")

        agent, _ = make(slow)
        sessions = [agent.start_session(session_id="shared") for _ in range(3)]
        threads = [threading.Thread(target=s.turn, args=("x",)) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert peak == 1
        assert_conversation_free(agent, "shared")

    def test_a_second_session_waits_for_the_first_to_finish_the_conversation(self) -> None:
        first_entered, release_first, second_entered = (threading.Event() for _ in range(3))

        def run(request: CommandRequest) -> FakeRun:
            if not first_entered.is_set():
                first_entered.set()
                assert release_first.wait(10)
            else:
                second_entered.set()
            return scripted_turn("claude", text="a", session_id="shared")

        agent, _ = make(run)
        first, second = (agent.start_session(session_id="shared") for _ in range(2))
        assert_waits_for_the_first(
            (lambda: first.turn("x"), first_entered, release_first),
            (lambda: second.turn("y"), second_entered),
        )
        assert_conversation_free(agent, "shared")

    def test_a_fresh_turn_holds_its_conversation_once_the_stream_names_it(self) -> None:
        named, release_fresh, resumed_entered = (threading.Event() for _ in range(3))

        class WorkAfterNaming:
            """Keeps the fresh turn busy right after its stream named the session."""

            def on_event(self, event: AgentEvent) -> None:
                if isinstance(event, SessionStarted) and not named.is_set():
                    named.set()
                    assert release_fresh.wait(10)

        def run(request: CommandRequest) -> FakeRun:
            if "--resume" in request.argv:
                resumed_entered.set()
            return scripted_turn("claude", text="a", session_id="new-1")

        agent, _ = make(run, event_handlers=WorkAfterNaming())
        fresh, other = agent.start_session(), agent.start_session(session_id="new-1")
        assert_waits_for_the_first(
            (lambda: fresh.turn("x"), named, release_fresh),
            (lambda: other.turn("y"), resumed_entered),
        )
        assert fresh.session_id == other.session_id == "new-1"
        assert_conversation_free(agent, "new-1")

    def test_different_conversations_run_in_parallel(self) -> None:
        barrier = threading.Barrier(2, timeout=5)

        def meet(request: CommandRequest) -> FakeRun:
            barrier.wait()
            argv = list(request.argv)
            return scripted_turn("claude", text="a", session_id=argv[argv.index("--resume") + 1])

        agent, _ = make(meet)
        sessions = [agent.start_session(session_id=f"conv-{i}") for i in range(2)]
        threads = [threading.Thread(target=s.turn, args=("x",)) for s in sessions]
        for t in threads:
            t.start()
        for t in threads:
            t.join(10)
        assert [s.last_result is not None for s in sessions] == [True, True]


class TestEnv:
    def test_provider_env_defaults_fill_gaps(self) -> None:
        fake = FakeExecutor(
            scripted_turn("pi", text="a", session_id="s"), binaries={"pi": "/opt/pi"}
        )
        agent = CliAgent("pi", executor=fake, env={"PATH": "/usr/bin", "NO_COLOR": "0"})
        defaults = getattr(agent.cli.provider, "env_defaults", {})
        for key, value in defaults.items():
            expected = "0" if key == "NO_COLOR" else value
            assert agent.cli.env[key] == expected

    @pytest.mark.parametrize("euid", [0, 1000])
    def test_a_value_the_cli_requires_as_root_wins_over_the_env(
        self, monkeypatch: pytest.MonkeyPatch, euid: int
    ) -> None:
        # An inherited IS_SANDBOX=yes used to win, and Claude Code then refused its bypass flag
        # to root; the value the provider requires must reach the CLI, from any env layer.
        monkeypatch.setattr("os.geteuid", lambda: euid)
        fake = FakeExecutor(scripted_turn("claude", text="a", session_id="s"), binaries=BINARIES)
        agent = CliAgent("claude", executor=fake, env={"PATH": "/usr/bin", "IS_SANDBOX": "yes"})
        agent.run(TurnRequest("x", env={"IS_SANDBOX": "true"}))
        expected = "1" if euid == 0 else "true"
        assert fake.requests[0].env["IS_SANDBOX"] == expected


class TestCwd:
    def test_a_cwd_that_does_not_exist_is_refused_before_anything_runs(
        self, tmp_path: Path
    ) -> None:
        from agentshim import InvalidRequestError
        from agentshim.execution import HostCommandExecutor

        binary = tmp_path / "claude"
        binary.write_text(
            '#!/bin/sh\n[ "$1" = --version ] || touch "$RAN"\necho "2.1.197 (Claude Code)"\n'
        )
        binary.chmod(0o755)
        marker = tmp_path / "ran"
        agent = CliAgent(
            "claude",
            executor=HostCommandExecutor(),
            env={"PATH": f"{tmp_path}:/usr/bin:/bin", "RAN": str(marker)},
        )
        missing = str(tmp_path / "no" / "such" / "dir")
        with pytest.raises(InvalidRequestError) as caught:
            agent.run("hello", cwd=missing)
        assert caught.value.field == "cwd"
        assert missing in str(caught.value)
        assert "create it or pass another cwd" in str(caught.value)
        assert not marker.exists()
