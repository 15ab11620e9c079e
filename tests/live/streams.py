"""What the live stream-transport suites share: the rig, counting spawns, finding processes.

Each provider's ``test_<provider>_stream.py`` runs its long-lived transport
(``Agent(provider, transport=TransportKind.LONG_LIVED)``) on the real pinned CLI and the real
``HostCommandExecutor``: one long-lived process per session, offline
(``agentshim.doctor.offline``), the model scripted per test. What is asserted is what a user
sees: results, errors, files the agent wrote, the processes that ran (counted at ``spawn``,
found in ``/proc`` by the run's HOME), a turn running on another thread, and what the model
was sent. A suite whose tests need nothing of their own builds its fixtures from
:func:`stream_rig` (the pinned binary, offline, and one model server per module) and
:func:`live_test` (a work directory, a counting executor and the events of one test, with
nothing left running after it).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Generic, TypeVar

import pytest

from agentshim.agent import Agent
from agentshim.core.conversation import TransportKind
from agentshim.core.events import AgentEvent, Lifecycle
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.retry import RetryPolicy
from agentshim.doctor.model_server import Message, ModelServer, RequestKind, Rule, Text, ToolCall
from agentshim.doctor.offline import OfflineCli, offline_cli
from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.host_process import HostProcess
from agentshim.execution.process import SpawnRequest
from agentshim.execution.pty_process import PtyProcess, PtySize
from agentshim.providers.acp import AcpAgentConfig, acp_catalog
from agentshim.session import Session

from .binaries import require_binary
from .scenarios import RUNNING, call_then_answer
from .suite import assert_nothing_left_running, live_processes

__all__ = [
    "AFTER_TOOL",
    "FAST_RETRY",
    "HELLO",
    "LONG_LIVED_TRANSPORTS",
    "NEEDS_PROC",
    "PROMPT_RETURN_S",
    "SEEN_WITHIN_S",
    "TURN_TIMEOUT",
    "Background",
    "CountingExecutor",
    "Live",
    "StreamRig",
    "acp_agent",
    "alive",
    "exited",
    "live_test",
    "model_asked",
    "run_processes",
    "stream_rig",
    "suite_fixtures",
    "tool_then_text",
    "wait_for",
]

TURN_TIMEOUT = 120.0
#: How long an interrupted or killed turn may take to come back.
PROMPT_RETURN_S = 5.0
#: How long to wait for something the CLI starts (a tool's ``sleep``) to show up.
SEEN_WITHIN_S = 60.0
#: The CLIs wait between their own retries of a failed call as the answer says.
FAST_RETRY = {"retry-after-ms": "50"}

#: Every live suite's mark: the processes of a run are found through ``/proc``.
NEEDS_PROC = pytest.mark.skipif(
    not Path("/proc/self/environ").exists(), reason="the run's processes are found through /proc"
)

T = TypeVar("T")

#: Every long-lived transport, as (provider, transport): each CLI's stream (app-server, ACP,
#: rpc), and Claude Code's TUI besides its stream-json.
LONG_LIVED_TRANSPORTS = (
    ("claude", TransportKind.LONG_LIVED),
    ("claude", TransportKind.TUI),
    ("codex", TransportKind.LONG_LIVED),
    ("gemini", TransportKind.LONG_LIVED),
    ("opencode", TransportKind.LONG_LIVED),
    ("copilot", TransportKind.LONG_LIVED),
    ("pi", TransportKind.LONG_LIVED),
)

HELLO = "Hello from the stream."
AFTER_TOOL = "The command ran."


class CountingExecutor(HostCommandExecutor):
    """The host executor, keeping every long-lived process it spawns (and its argv)."""

    def __init__(self) -> None:
        super().__init__()
        self.spawned: list[tuple[SpawnRequest, HostProcess | PtyProcess]] = []

    def spawn(self, request: SpawnRequest) -> HostProcess:
        process = super().spawn(request)
        self.spawned.append((request, process))
        return process

    def spawn_pty(self, request: SpawnRequest, size: PtySize | None = None) -> PtyProcess:
        process = super().spawn_pty(request, size)
        self.spawned.append((request, process))
        return process

    @property
    def argvs(self) -> list[tuple[str, ...]]:
        return [tuple(request.argv) for request, _ in self.spawned]


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


def exited(pid: int) -> bool:
    """Whether child ``pid`` has ended as its parent sees it (a /proc entry can vanish first)."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:  # already reaped
        return True


def run_processes(home: Path, needle: str) -> list[int]:
    """Live processes of the run (by HOME) whose command line contains ``needle``."""
    return [p.pid for p in live_processes() if p.of_run(home) and needle in p.cmdline]


def wait_for(condition: Callable[[], bool], within: float, what: str) -> None:
    deadline = time.monotonic() + within
    while not condition():
        assert time.monotonic() < deadline, f"{what} did not happen within {within:g} s"
        time.sleep(0.05)


class Background(Generic[T]):
    """A call (a turn, mostly) running on another thread: its result, or the error it raised."""

    def __init__(self, run: Callable[[], T]) -> None:
        self.ended_at: float | None = None
        self._outcome: Future[T] = Future()
        threading.Thread(target=self._main, args=(run,), daemon=True).start()

    def _main(self, run: Callable[[], T]) -> None:
        settle: Callable[[], None]
        try:
            settle = partial(self._outcome.set_result, run())
        except BaseException as error:  # handed to the test thread
            settle = partial(self._outcome.set_exception, error)
        self.ended_at = time.monotonic()  # before join() can return
        settle()

    def join(self, timeout: float) -> T:
        """Its result (or its error, raised here); fails the test after ``timeout`` seconds."""
        try:
            return self._outcome.result(timeout)
        except FutureTimeout:
            raise AssertionError(f"the call did not return within {timeout:g} s") from None


@dataclass(frozen=True)
class StreamRig:
    """A provider's pinned binary set up offline, and the model server its suite shares."""

    provider: str
    server: ModelServer
    cli: OfflineCli
    root: Path
    binary: Path
    transport: TransportKind = TransportKind.LONG_LIVED


def stream_rig(
    provider: str,
    tmp_path_factory: pytest.TempPathFactory,
    transport: TransportKind = TransportKind.LONG_LIVED,
) -> Iterator[StreamRig]:
    """The body of a suite's module-scoped rig fixture (skips when the binary is missing)."""
    binary = require_binary(provider)
    root = tmp_path_factory.mktemp(f"live-{provider}-{transport.value}")
    with ModelServer() as server:
        cli = offline_cli(provider, server, root=root, bin_dir=binary.path.parent)
        yield StreamRig(provider, server, cli, root, binary.path, transport)


@dataclass
class Live:
    """One test's work directory, executor and the events its agents reported."""

    rig: StreamRig
    work: Path
    executor: CountingExecutor
    events: list[AgentEvent] = field(default_factory=list[AgentEvent])

    @property
    def server(self) -> ModelServer:
        return self.rig.server

    def agent_options(self, **overrides: Any) -> dict[str, Any]:
        """What the suite builds its agents with: bypass, approvals denied, the rig's CLI
        offline on this test's executor and transport, its events recorded, nothing retried;
        ``overrides`` (any keyword of Agent) replace or add to it."""
        return {
            "permissions": NativePermissions.bypass(),
            "approvals": ApprovalPolicy.DENY,
            "model": self.rig.cli.model,
            "env": dict(self.rig.cli.env),
            "executor": self.executor,
            "transport": self.rig.transport,
            "event_handlers": self.events.append,
            "check_timeout": 60.0,
            # A failure is the suite's to see, not the session's to retry.
            "retry": RetryPolicy(delays=()),
            **overrides,
        }

    def agent(self, **overrides: Any) -> Agent:
        """An Agent of the rig's provider built with :meth:`agent_options`."""
        return Agent(self.rig.provider, **self.agent_options(**overrides))

    def session(self, agent: Agent | None = None, session_id: str | None = None) -> Session:
        agent = agent or self.agent()
        if session_id is not None:
            return agent.start_session(str(self.work), session_id=session_id)
        return agent.start_session(str(self.work))

    def script(self, *rules: Rule) -> None:
        self.server.set_script(rules)

    def lifecycle(self, kind: str) -> list[str]:
        return [e.detail for e in self.events if isinstance(e, Lifecycle) and e.kind == kind]

    def main_bodies(self) -> list[str]:
        """The bodies of the model requests that asked for an answer, in order."""
        return [
            r.raw_body.decode("utf-8", "replace")
            for r in self.server.requests
            if r.kind is RequestKind.MAIN
        ]

    def cli_pids(self) -> list[int]:
        """The CLI processes this test spawned that are still alive."""
        return [p.pid for _, p in self.executor.spawned if alive(p.pid)]

    def running(self, seen: str) -> bool:
        """Whether a process of the run whose command line holds ``seen`` is alive."""
        return bool(run_processes(self.rig.cli.home, seen))

    def tool_turn(self, session: Session, prompt: str, seen: str) -> Background:
        """A turn started on another thread, once the tool it runs (``seen``) is running."""
        running = Background(lambda: session.turn(prompt).result)
        wait_for(lambda: self.running(seen), SEEN_WITHIN_S, seen)
        return running

    def one_shot_seconds(self) -> float:
        """How long a one-shot turn of the provider takes (a stream turn's yardstick).

        The model answers HELLO from here on.
        """
        self.script(Rule(respond=Text(HELLO)))
        with self.session(self.agent(transport=TransportKind.ONE_SHOT)) as one_shot:
            started = time.monotonic()
            baseline = one_shot.turn("Say hello.").result
            took = time.monotonic() - started
        assert baseline.text == HELLO
        return took

    def outside(self) -> Path:
        """A fresh directory next to the work directory (outside the agent's workspace)."""
        outside = self.work.parent / f"{self.work.name}-outside"
        outside.mkdir()
        return outside


def live_test(rig: StreamRig, request: pytest.FixtureRequest) -> Iterator[Live]:
    """The body of a suite's per-test fixture: a fresh script, and nothing left running after."""
    rig.server.set_script(())
    rig.server.clear_requests()
    work = rig.root / "work" / request.node.name
    work.mkdir(parents=True)
    yield Live(rig, work, CountingExecutor())
    assert_nothing_left_running(rig.cli.home)


def suite_fixtures(
    provider: str, transport: TransportKind = TransportKind.LONG_LIVED
) -> tuple[Callable[..., Iterator[StreamRig]], Callable[..., Iterator[Live]]]:
    """A suite's ``rig`` (one per module) and ``live`` (one per test) fixtures, for
    ``rig, live = suite_fixtures("pi")`` at the top of its module."""

    @pytest.fixture(scope="module", name="rig")
    def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamRig]:
        yield from stream_rig(provider, tmp_path_factory, transport)

    @pytest.fixture(name="live")
    def live(rig: StreamRig, request: pytest.FixtureRequest) -> Iterator[Live]:
        yield from live_test(rig, request)

    return rig, live


def acp_agent(
    config: AcpAgentConfig,
    approvals: object,
    env: Mapping[str, str],
    transport: TransportKind = TransportKind.LONG_LIVED,
    permissions: NativePermissions | None = None,
) -> Agent:
    """An Agent of the generic ACP provider for the agent ``config`` names, as a user builds
    one agentshim has no provider for (``permissions``: workspace_write() unless given)."""
    return Agent(
        config.name,
        permissions=permissions or NativePermissions.workspace_write(),
        approvals=approvals,  # type: ignore[arg-type]
        env=env,
        transport=transport,
        catalog=acp_catalog(config),
    )


def model_asked(server: ModelServer) -> bool:
    """Whether the CLI has asked the model for its answer yet (the turn is running)."""
    return any(request.kind is RequestKind.MAIN for request in server.requests)


def tool_then_text(command: str, text: str = AFTER_TOOL) -> tuple[Rule, ...]:
    """A script that runs ``command`` in the CLI's shell tool, then answers ``text``."""
    return call_then_answer(Message((*RUNNING, ToolCall(command=command))), Text(text))
