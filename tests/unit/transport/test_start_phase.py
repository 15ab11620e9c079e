"""The start phase of every long-lived transport: one error contract, every wait stoppable.

Each transport runs on its own peer fake (``agentshim.testing``), the first process
replaced by one that misbehaves while starting: it dies (CliExitError with its exit code,
stderr and the provider's kind), refuses the resumed session (SessionResumeError), never
answers (CliTimeoutError after the transport's ``start_timeout``, or the turn's own
timeout), or goes silent past the stall window. A stop while it starts kills it and the
turn returns an interrupted result. After each, the next turn works on a new process.
Claude Code's stream-json has no handshake: its start-phase request here is the switch to
the turn's model.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import pytest

from agentshim.acp.client import AcpTransport
from agentshim.cli_agent import CliAgent
from agentshim.core import lifecycle_kinds as lk
from agentshim.core.conversation import ConversationSpec, TransportKind
from agentshim.core.errors import (
    CliDiedError,
    CliExitError,
    CliTimeoutError,
    FailureKind,
    SessionResumeError,
    TurnStalledError,
)
from agentshim.core.events import AgentEvent, Lifecycle, RunStarted, TurnInterrupted
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.process import ProcessExited, SpawnRequest, StderrLine
from agentshim.providers import DEFAULT_CATALOG, provider_names
from agentshim.providers.catalog import transport_factories, transports_offered
from agentshim.providers.claude.provider import ClaudeProvider
from agentshim.providers.claude.tui_transport import ClaudeTuiTransport
from agentshim.providers.gemini.acp import GEMINI_ACP
from agentshim.testing import FakeExecutor, FakePeer, PeerOutput, SilentPeer
from agentshim.testing.acp import (
    COPILOT_QUIRKS,
    GEMINI_QUIRKS,
    OPENCODE_QUIRKS,
    AcpPeers,
    AcpPeerTurn,
)
from agentshim.testing.claude_stream import ClaudePeerTurn, ClaudeStreamPeers
from agentshim.testing.claude_tui import FakeTuiScript, FakeTuiTurn, install_fake_claude_tui
from agentshim.testing.codex_app_server import CodexAppServerPeers, CodexPeerTurn
from agentshim.testing.pi_rpc import PiPeerTurn, PiRpcPeers
from agentshim.transport.installed import InstalledCli

ENV = {"PATH": "/usr/bin"}
GONE = "c0de0000-0000-4000-8000-00000000dead"
AUTH_TEXT = "Error: Invalid API key. Please run /login\n"

STREAM_PROVIDERS = [
    name
    for name in provider_names()
    if TransportKind.LONG_LIVED in transports_offered(DEFAULT_CATALOG.plugin(name))
]


def test_every_long_lived_transport_is_covered() -> None:
    assert set(STREAM_PROVIDERS) == {"claude", "codex", "pi", "gemini", "opencode", "copilot"}


def _family(provider: str, *, missing: Iterable[str] = ()) -> Callable[[SpawnRequest], FakePeer]:
    """``provider``'s peer fake, whose one turn answers ``after``."""
    if provider == "claude":
        return ClaudeStreamPeers([ClaudePeerTurn("after")])
    if provider == "codex":
        return CodexAppServerPeers([CodexPeerTurn("after")], missing=tuple(missing))
    if provider == "pi":
        return PiRpcPeers([PiPeerTurn("after")], missing=tuple(missing))
    quirks = {"gemini": GEMINI_QUIRKS, "opencode": OPENCODE_QUIRKS, "copilot": COPILOT_QUIRKS}
    return AcpPeers([AcpPeerTurn("after")], quirks=quirks[provider], lost=missing)


def _request(provider: str, **fields: Any) -> TurnRequest:
    """The first turn: on Claude Code, one that switches model (its start-phase request)."""
    if provider == "claude":
        fields.setdefault("model", "claude-other-model")
    return TurnRequest("hi", **fields)


class _FirstThen:
    """The first process is ``first``'s; every later one the peer fake's."""

    def __init__(
        self, first: Callable[[], FakePeer] | None, then: Callable[[SpawnRequest], FakePeer]
    ) -> None:
        self._first = first
        self._then = then

    def __call__(self, request: SpawnRequest) -> FakePeer:
        first, self._first = self._first, None
        return first() if first is not None else self._then(request)


class _Dies(FakePeer):
    """Prints ``stderr`` and exits ``code`` as soon as it starts."""

    def __init__(self, stderr: str, code: int) -> None:
        self._stderr, self._code = stderr, code

    def on_start(self) -> Iterable[PeerOutput]:
        return [StderrLine(self._stderr), ProcessExited(self._code)]


class _Silent(SilentPeer):
    """Never answers; says when it started."""

    def __init__(self, started: threading.Event) -> None:
        self._started = started

    def on_start(self) -> Iterable[PeerOutput]:
        self._started.set()
        return ()


class Rig:
    """``provider``'s long-lived transport on a fake executor."""

    def __init__(
        self,
        provider: str,
        first: Callable[[], FakePeer] | None,
        *,
        missing: Iterable[str] = (),
        resume: str | None = None,
        stall_timeout: float | None = None,
        **transport: float,
    ) -> None:
        binary_name = DEFAULT_CATALOG.plugin(provider).profile.binary
        self.binary = f"/opt/bin/{binary_name}"
        self.executor = FakeExecutor(
            peers=_FirstThen(first, _family(provider, missing=missing)),
            binaries={binary_name: self.binary},
        )
        context = InstalledCli(
            provider=CliAgent(provider, executor=self.executor, env=ENV).cli.provider,
            executor=self.executor,
            binary_path=self.binary,
            env=ENV,
        )
        factory: Any = transport_factories(DEFAULT_CATALOG.plugin(provider))[
            TransportKind.LONG_LIVED
        ]
        self.transport = factory(context)
        for name, value in transport.items():  # every ProcessTransport keeps these
            setattr(self.transport, name, value)
        self.conversation = self.transport.open(
            ConversationSpec(
                permissions=NativePermissions.bypass(),
                approvals=ApprovalPolicy.DENY,
                resume_session_id=resume,
                stall_timeout=stall_timeout,
            )
        )
        self.events: list[AgentEvent] = []

    def turn(self, request: TurnRequest) -> TurnResult:
        return self.conversation.turn(request, self.events.append)

    def next_turn_works(self) -> None:
        """Nothing of the failed start runs, and a plain turn answers on a new process."""
        assert all(process.returncode is not None for process in self.executor.processes)
        assert self.turn(TurnRequest("again")).text == "after"
        self.conversation.close()
        assert all(process.returncode is not None for process in self.executor.processes)

    def stopped_while_starting(self, started: threading.Event, request: TurnRequest) -> TurnResult:
        """Run ``request`` on another thread and interrupt it once ``started`` is set."""
        outcome: list[TurnResult | BaseException] = []

        def work() -> None:
            try:
                outcome.append(self.turn(request))
            except BaseException as error:  # the test inspects it
                outcome.append(error)

        worker = threading.Thread(target=work)
        worker.start()
        assert started.wait(30)
        self.conversation.interrupt()
        worker.join(30)
        assert not worker.is_alive(), "the stop ended the start-up"
        (result,) = outcome
        assert isinstance(result, TurnResult), result
        return result


@pytest.mark.parametrize("provider", STREAM_PROVIDERS)
def test_a_cli_that_dies_before_ready_fails_with_its_exit_its_stderr_and_its_kind(
    provider: str,
) -> None:
    rig = Rig(provider, lambda: _Dies(AUTH_TEXT, 3))
    with pytest.raises(CliExitError) as caught:
        rig.turn(_request(provider))
    error = caught.value
    assert not isinstance(error, CliDiedError)
    assert error.returncode == 3
    assert "Invalid API key" in error.stderr
    assert error.kind is FailureKind.AUTH, "as the one-shot door reads that stderr"
    assert error.argv[0] == rig.binary
    rig.next_turn_works()


@pytest.mark.parametrize("provider", STREAM_PROVIDERS)
def test_a_cli_that_refuses_the_resumed_session_raises_session_resume_error(
    provider: str,
) -> None:
    def says_so_and_exits() -> FakePeer:
        return _Dies(f"No conversation found with session ID: {GONE}\n", 1)

    # Claude Code says so on stderr and exits; the other peer fakes refuse an id in ``missing``.
    first = says_so_and_exits if provider == "claude" else None
    rig = Rig(provider, first, missing=[GONE], resume=GONE)
    with pytest.raises(SessionResumeError) as caught:
        rig.turn(_request(provider))
    assert caught.value.session_id == GONE
    assert all(process.returncode is not None for process in rig.executor.processes)


@pytest.mark.parametrize("provider", STREAM_PROVIDERS)
def test_a_start_nobody_answers_fails_after_the_start_timeout(provider: str) -> None:
    rig = Rig(provider, lambda: _Silent(threading.Event()), start_timeout=0.3)
    with pytest.raises(CliTimeoutError) as caught:
        rig.turn(_request(provider))
    assert rig.binary in str(caught.value), "the message names the command that was run"
    assert "0.3 s" in str(caught.value)
    rig.next_turn_works()


@pytest.mark.parametrize("provider", STREAM_PROVIDERS)
def test_the_turn_timeout_ends_a_start_that_hangs(provider: str) -> None:
    rig = Rig(provider, lambda: _Silent(threading.Event()))
    with pytest.raises(CliTimeoutError) as caught:
        rig.turn(_request(provider, timeout=0.5))
    assert rig.binary in str(caught.value), "the message names the command that was run"
    assert "0.5 s" in str(caught.value)
    rig.next_turn_works()


@pytest.mark.parametrize("provider", STREAM_PROVIDERS)
def test_the_stall_window_ends_a_start_gone_silent(provider: str) -> None:
    rig = Rig(provider, lambda: _Silent(threading.Event()), stall_timeout=0.3)
    with pytest.raises(TurnStalledError):
        rig.turn(_request(provider))
    rig.next_turn_works()


@pytest.mark.parametrize("provider", STREAM_PROVIDERS)
def test_an_interrupt_during_start_up_ends_the_turn_as_one_mid_turn_does(provider: str) -> None:
    started = threading.Event()
    rig = Rig(provider, lambda: _Silent(started))
    result = rig.stopped_while_starting(started, _request(provider, timeout=300))
    assert result.interrupted
    assert result.text == ""
    assert any(isinstance(event, TurnInterrupted) for event in rig.events)
    rig.next_turn_works()


# -- Gemini's load in a later minute -------------------------------------------------------


class _GeminiRig:
    """Gemini CLI over ACP, whose sessions are loaded in a later wall-clock minute."""

    def __init__(self) -> None:
        self.now = [610.0]  # ten seconds into a minute
        self.peers = AcpPeers([AcpPeerTurn("one"), AcpPeerTurn("after")], quirks=GEMINI_QUIRKS)
        self.executor = FakeExecutor(peers=self.peers, binaries={"gemini": "/opt/bin/gemini"})
        context = InstalledCli(
            provider=CliAgent("gemini", executor=self.executor, env=ENV).cli.provider,
            executor=self.executor,
            binary_path="/opt/bin/gemini",
            env=ENV,
        )
        self.transport = AcpTransport(context, GEMINI_ACP, wall_clock=lambda: self.now[0])
        self.conversation = self.transport.open(
            ConversationSpec(permissions=NativePermissions.bypass(), approvals=ApprovalPolicy.DENY)
        )
        self.deferred = threading.Event()

    def emit(self, event: AgentEvent) -> None:
        if isinstance(event, Lifecycle) and event.kind == lk.LOAD_DEFERRED:
            self.deferred.set()

    def to_the_deferred_load(self, request: TurnRequest, act: Callable[[], None]) -> Any:
        """A turn that must load the session this minute; ``act`` once it waits."""
        assert self.conversation.turn(TurnRequest("one"), self.emit).text == "one"
        self.executor.processes[0].kill()  # died while idle: the next turn loads the session
        outcome: list[Any] = []

        def work() -> None:
            try:
                outcome.append(self.conversation.turn(request, self.emit))
            except BaseException as error:  # the test inspects it
                outcome.append(error)

        worker = threading.Thread(target=work)
        worker.start()
        assert self.deferred.wait(30)
        act()
        worker.join(30)
        assert not worker.is_alive(), "the wait for the next minute was cut short"
        assert all(process.returncode is not None for process in self.executor.processes)
        return outcome[0]

    def next_turn_works(self) -> None:
        self.now[0] += 60.0  # the minute has passed: no wait
        result = self.conversation.turn(TurnRequest("again"), self.emit)
        assert result.text == "after"
        assert result.resumed
        self.conversation.close()


def test_an_interrupt_cuts_geminis_wait_for_the_next_minute_short() -> None:
    rig = _GeminiRig()
    result = rig.to_the_deferred_load(TurnRequest("two"), rig.conversation.interrupt)
    assert isinstance(result, TurnResult), result
    assert result.interrupted
    rig.next_turn_works()


def test_the_turn_timeout_cuts_geminis_wait_for_the_next_minute_short() -> None:
    rig = _GeminiRig()
    result = rig.to_the_deferred_load(TurnRequest("two", timeout=0.5), lambda: None)
    assert isinstance(result, CliTimeoutError), result
    rig.next_turn_works()


def test_close_cuts_geminis_wait_for_the_next_minute_short() -> None:
    rig = _GeminiRig()
    result = rig.to_the_deferred_load(TurnRequest("two"), rig.conversation.close)
    assert isinstance(result, TurnResult), result
    assert result.interrupted


# -- Claude Code's TUI: a real terminal running the fake CLI -------------------------------

tui = pytest.mark.skipif(os.name != "posix", reason="the TUI runs on a pseudo-terminal")


def _tui(root: Path, script: FakeTuiScript, **timing: float) -> Any:
    home, work = root / "home", root / "work"
    home.mkdir(parents=True)
    work.mkdir(parents=True)
    binary = install_fake_claude_tui(root / "bin", script)
    context = InstalledCli(
        provider=ClaudeProvider(),
        executor=HostCommandExecutor(),
        binary_path=str(binary),
        env={"PATH": "/usr/bin:/bin", "HOME": str(home)},
    )
    transport = ClaudeTuiTransport(
        context, scratch_cwd=str(root / "scratch"), first_paste_delay=0.0, **timing
    )
    spec = ConversationSpec(
        permissions=NativePermissions.bypass(), approvals=ApprovalPolicy.DENY, cwd=str(work)
    )
    return transport.open(spec)


@tui
def test_a_tui_that_dies_before_ready_fails_with_its_kind(tmp_path: Path) -> None:
    conversation = _tui(tmp_path, FakeTuiScript(auth_failure="Not logged in · Please run /login"))
    try:
        with pytest.raises(CliExitError) as caught:
            conversation.turn(TurnRequest("hi"), lambda event: None)
        assert caught.value.kind is FailureKind.AUTH
        assert caught.value.returncode != 0
    finally:
        conversation.close()


@tui
def test_an_interrupt_while_the_tui_starts_ends_the_turn_and_the_next_one_works(
    tmp_path: Path,
) -> None:
    # The fake takes 20 s to get ready; the stop gives it the interrupt grace, then kills it.
    conversation = _tui(
        tmp_path,
        FakeTuiScript([FakeTuiTurn("after")], startup_delay=20.0),
        interrupt_grace=0.3,
    )
    spawned = threading.Event()
    outcome: list[Any] = []

    def emit(event: AgentEvent) -> None:
        if isinstance(event, RunStarted):
            spawned.set()

    def work() -> None:
        try:
            outcome.append(conversation.turn(TurnRequest("hi", timeout=300), emit))
        except BaseException as error:  # the test inspects it
            outcome.append(error)

    worker = threading.Thread(target=work)
    worker.start()
    try:
        assert spawned.wait(30)
        conversation.interrupt()
        worker.join(30)
        assert not worker.is_alive()
        (result,) = outcome
        assert isinstance(result, TurnResult), result
        assert result.interrupted
    finally:
        conversation.close()
