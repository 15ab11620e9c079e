"""The long-lived conversation contract, run on every long-lived transport's peer fake.

One class per transport (and per shared-process mode): each says how its fake plays the
contract's turns and how its transport is built; every scenario is the shipped suite's.
"""

from __future__ import annotations

import gc
import json
import signal
import threading
import tracemalloc
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import pytest

from agentshim.acp.client import AcpTransport
from agentshim.acp.dialect import AcpDialect
from agentshim.core.conversation import Transport
from agentshim.core.errors import CliDiedError, ProviderCapabilityError
from agentshim.core.events import (
    AgentEvent,
    RunStarted,
    SessionStarted,
    ToolCall,
    ToolResult,
    TurnInterrupted,
)
from agentshim.core.permissions import NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.execution.process import ProcessExited, SpawnRequest
from agentshim.providers import get_plugin
from agentshim.providers.acp import AcpAgentConfig, acp_plugin
from agentshim.providers.claude.provider import ClaudeProvider
from agentshim.providers.claude.stream_transport import ClaudeStreamTransport
from agentshim.providers.codex.app_server.transport import CodexAppServerTransport
from agentshim.providers.codex.provider import CodexProvider
from agentshim.providers.copilot.acp import COPILOT_ACP
from agentshim.providers.gemini.acp import GEMINI_ACP
from agentshim.providers.opencode.acp import OPENCODE_ACP
from agentshim.providers.pi.provider import PiProvider
from agentshim.providers.pi.rpc_transport import PiRpcTransport
from agentshim.testing import FakeExecutor
from agentshim.testing import acp as fake_acp
from agentshim.testing.claude_stream import ClaudePeerTurn, ClaudeRecordedPeer, ClaudeStreamPeers
from agentshim.testing.clock import FakeClock
from agentshim.testing.codex_app_server import (
    CodexAppServerPeer,
    CodexAppServerPeers,
    CodexPeerTurn,
)
from agentshim.testing.long_lived_contract import FakePeerContract, LongLivedCapability
from agentshim.testing.pi_rpc import PiPeerTurn, PiRecordedPeer, PiRpcPeers
from agentshim.testing.process import FakePeer, PeerOutput
from agentshim.testing.recording import RecordingEventHandler
from agentshim.testing.session_contracts import ContractTurn
from agentshim.transport.conversation import ProcessOptions
from agentshim.transport.installed import InstalledCli
from agentshim.transport.shared import ProcessSharing
from tests.unit.acp.rigs import Rig as AcpRig
from tests.unit.acp.rigs import methods
from tests.unit.long_lived_rig import (
    ClaudeStreamRig,
    CodexAppServerRig,
    PiRpcRig,
    TransportRig,
    claude_frames,
    conversation_on,
    ignore,
    lifecycle,
    of,
    pi_frames,
    sent_to,
    turn_stopped_at,
)

Peers = Callable[[SpawnRequest], FakePeer]
TOUCH = "touch contract.txt"


def on(executor: FakeExecutor, provider: object, binary: str) -> InstalledCli:
    """The installed CLI ``binary`` of ``provider``, spawned on ``executor``."""
    return InstalledCli(
        provider=provider,  # type: ignore[arg-type]
        executor=executor,
        binary_path=f"/usr/bin/{binary}",
        env={"PATH": "/usr/bin"},
    )


class TestClaudeStream(FakePeerContract):
    def make_peers(self, turns: Sequence[ContractTurn]) -> Peers:
        return ClaudeStreamPeers(
            ClaudePeerTurn(
                t.text, hang=t.hang, ask=t.ask, tool="Bash", tool_input={"command": TOUCH}
            )
            if t.ask
            else ClaudePeerTurn(t.text, hang=t.hang)
            for t in turns
        )

    def make_fake_transport(self, executor: FakeExecutor, options: ProcessOptions) -> Transport:
        return ClaudeStreamTransport(on(executor, ClaudeProvider(), "claude"), **options)


def codex_peers(turns: Sequence[ContractTurn]) -> CodexAppServerPeers:
    return CodexAppServerPeers(
        CodexPeerTurn(t.text, hang=t.hang, command=TOUCH if t.ask else None, approve=t.ask)
        for t in turns
    )


class TestCodexAppServer(FakePeerContract):
    def make_peers(self, turns: Sequence[ContractTurn]) -> Peers:
        return codex_peers(turns)

    def make_fake_transport(self, executor: FakeExecutor, options: ProcessOptions) -> Transport:
        context = on(executor, CodexProvider(), "codex")
        return CodexAppServerTransport(context, reap=lambda marker: 0, **options)


class TestCodexAppServerSharedProcess(TestCodexAppServer):
    def make_fake_transport(self, executor: FakeExecutor, options: ProcessOptions) -> Transport:
        context = on(executor, CodexProvider(), "codex")
        return CodexAppServerTransport(
            context, reap=lambda marker: 0, sharing=ProcessSharing(), **options
        )


class TestPiRpc(FakePeerContract):
    capabilities = LongLivedCapability.ALL & ~LongLivedCapability.APPROVALS  # no approval flow

    def make_peers(self, turns: Sequence[ContractTurn]) -> Peers:
        return PiRpcPeers(PiPeerTurn(t.text, hang=t.hang) for t in turns)

    def make_fake_transport(self, executor: FakeExecutor, options: ProcessOptions) -> Transport:
        return PiRpcTransport(on(executor, PiProvider(), "pi"), **options)

    def unsupported_permissions(self) -> NativePermissions | None:
        return NativePermissions.read_only()


class AcpContract(FakePeerContract):
    """The contract on an ACP agent: ``provider`` with ``dialect``, faked with ``quirks``."""

    capabilities = LongLivedCapability.ALL & ~LongLivedCapability.STEER  # ACP has no steer
    provider = "gemini"
    dialect: AcpDialect = GEMINI_ACP
    quirks: fake_acp.AcpQuirks = fake_acp.GEMINI_QUIRKS
    sharing: ProcessSharing | None = None

    def make_peers(self, turns: Sequence[ContractTurn]) -> Peers:
        return fake_acp.AcpPeers(
            (
                fake_acp.AcpPeerTurn(t.text, hang=t.hang, tool=TOUCH if t.ask else None, ask=t.ask)
                for t in turns
            ),
            quirks=self.quirks,
        )

    def make_fake_transport(self, executor: FakeExecutor, options: ProcessOptions) -> Transport:
        plugin = get_plugin(self.provider)
        context = on(executor, plugin.create_provider(), plugin.profile.binary)
        # Gemini waits out the minute of a session it loads; on a fake clock that wait is free.
        return AcpTransport(
            context, self.dialect, sharing=self.sharing, waits=FakeClock(), **options
        )


class TestGeminiAcp(AcpContract):
    pass


class TestOpencodeAcp(AcpContract):
    provider = "opencode"
    dialect = OPENCODE_ACP
    quirks = fake_acp.OPENCODE_QUIRKS


class TestCopilotAcp(AcpContract):
    provider = "copilot"
    dialect = COPILOT_ACP
    quirks = fake_acp.COPILOT_QUIRKS


class TestGeminiAcpSharedProcess(AcpContract):
    sharing = ProcessSharing()


class TestGenericAcp(AcpContract):
    quirks = fake_acp.AcpQuirks()

    def make_fake_transport(self, executor: FakeExecutor, options: ProcessOptions) -> Transport:
        config = AcpAgentConfig(name="fake", command="fake-agent --acp")
        plugin = acp_plugin(config)
        context = on(executor, plugin.create_provider(), "fake-agent")
        return AcpTransport(context, config.dialect(), client=config.client, **options)


# -- what the shipped contract leaves to each transport, checked on the fakes alike ------------


@dataclass(frozen=True)
class Fake:
    """A long-lived transport on its fake CLI, for what every such transport does alike.

    ``rig`` takes the fake's scripted turns (``turn``: text, ``hang``, ``tool``); ``frames``
    names what the CLI was sent, frame by frame: ``started`` before the first prompt, then a
    ``prompt`` a turn. ``fixed`` are the request fields the running process was started with,
    which a turn may not change; ``refusal`` is what such a turn is told. A steerable one's
    fake runs a ``tool`` its transport stops with an ``interrupt`` frame, and ``running`` holds
    for the first event a hanging turn shows once the CLI has its prompt.
    """

    name: str
    rig: Callable[..., TransportRig]
    turn: Callable[..., Any]
    frames: Callable[[Any], list[str]]
    started: tuple[str, ...]
    prompt: str
    refusal: str
    fixed: tuple[str, ...] = ("env", "extra_args", "cwd", "reasoning_effort")
    tool: str = ""
    interrupt: str = ""
    running: Callable[[AgentEvent], bool] = lambda event: False


def codex_frames(peer: CodexAppServerPeer) -> list[str]:
    """What Codex was sent: each request or notification by its method, else ``answer``."""
    return [str(frame.get("method", "answer")) for frame in peer.received]


CLAUDE = Fake(
    "claude",
    ClaudeStreamRig,
    ClaudePeerTurn,
    claude_frames,
    (),
    "user",
    "ONE_SHOT",
    tool="Bash",
    interrupt="control_request:interrupt",
    running=lifecycle("init"),  # said once Claude Code has the prompt
)
PI = Fake(
    "pi",
    PiRpcRig,
    PiPeerTurn,
    pi_frames,
    ("get_state",),
    "prompt",
    "ONE_SHOT",
    tool="bash",
    interrupt="abort",
    running=lifecycle("agent_started"),  # Pi's answer to the prompt
)


def acp_fake(provider: str, dialect: AcpDialect, quirks: fake_acp.AcpQuirks) -> Fake:
    """``provider``'s ACP agent: the fake with its ``quirks``, the transport with ``dialect``."""
    rig = partial(AcpRig, provider, dialect, quirks)
    started = ("initialize", "session/new")
    return Fake(
        f"{provider}-acp",
        rig,
        fake_acp.AcpPeerTurn,
        methods,
        started,
        "session/prompt",
        "cannot change",
    )


GEMINI = acp_fake("gemini", GEMINI_ACP, fake_acp.GEMINI_QUIRKS)
OPENCODE = acp_fake("opencode", OPENCODE_ACP, fake_acp.OPENCODE_QUIRKS)
CODEX = Fake(
    "codex",
    CodexAppServerRig,
    CodexPeerTurn,
    codex_frames,
    ("initialize", "initialized", "thread/start"),
    "turn/start",
    "cannot change",
    fixed=("env", "extra_args", "cwd"),  # the effort goes on each turn/start
)
EVERY = [pytest.param(fake, id=fake.name) for fake in (CLAUDE, PI, GEMINI, CODEX)]
STEERABLE = [pytest.param(fake, id=fake.name) for fake in (CLAUDE, PI)]
CHANGES: dict[str, object] = {
    "env": {"A": "1"},
    "extra_args": ("--x",),
    "cwd": "/elsewhere",
    "reasoning_effort": "high",
}


@pytest.mark.parametrize("fake", EVERY)
def test_two_turns_run_on_one_process_and_continue_one_conversation(fake: Fake) -> None:
    rig = fake.rig([fake.turn("one"), fake.turn("two")])
    first, first_events = rig.turn("first")
    second, events = rig.turn("second")
    assert (first.text, second.text) == ("one", "two")
    assert len(rig.executor.spawned) == 1
    assert (first.resumed, second.resumed) == (False, True)
    assert first.session_id == second.session_id == rig.conversation.session_id
    assert first_events.of_type(SessionStarted) == [SessionStarted(first.session_id)]
    assert not events.of_type(RunStarted), "the second turn started a process"
    assert fake.frames(rig.peer) == [*fake.started, fake.prompt, fake.prompt]
    sent = zip(fake.frames(rig.peer), rig.peer.received, strict=True)
    prompts = [json.dumps(frame) for kind, frame in sent if kind == fake.prompt]
    assert ['"first"' in prompts[0], '"second"' in prompts[1]] == [True, True]


@pytest.mark.parametrize(
    ("fake", "field"),
    [
        pytest.param(fake, field, id=f"{fake.name}-{field}")
        for fake in (CLAUDE, PI, GEMINI, CODEX)
        for field in fake.fixed
    ],
)
def test_what_a_running_process_cannot_change_is_refused_before_anything_is_sent(
    fake: Fake, field: str
) -> None:
    rig = fake.rig([fake.turn("never")])
    with pytest.raises(ProviderCapabilityError, match=fake.refusal):
        rig.turn(**{field: CHANGES[field]})
    assert rig.executor.spawned == []


@pytest.mark.parametrize("fake", EVERY)
def test_interrupt_while_idle_sends_nothing(fake: Fake) -> None:
    rig = fake.rig([fake.turn("a"), fake.turn("b")])
    rig.turn()
    rig.conversation.interrupt()
    result, _ = rig.turn()
    assert result.text == "b"
    assert not result.interrupted
    assert fake.frames(rig.peer) == [*fake.started, fake.prompt, fake.prompt]


@pytest.mark.parametrize("fake", EVERY)
def test_close_ends_the_process_with_stdin_eof(fake: Fake) -> None:
    rig = fake.rig([fake.turn("a")])
    rig.turn()
    rig.conversation.close()
    rig.conversation.close()
    process = rig.executor.processes[0]
    assert process.stdin_closed
    assert process.returncode == 0
    assert process.terminate_calls == 0


@pytest.mark.parametrize("fake", STEERABLE)
def test_no_steered_text_is_ever_written_as_a_broken_line(fake: Fake) -> None:
    rig = fake.rig([fake.turn(hang=True)])
    awkward = 'line\nbreak \u2028 sep \ud800 lone \x00 nul "quote"'

    def steer() -> None:
        rig.conversation.steer(awkward)
        rig.conversation.interrupt()

    rig.turn_acting_at(fake.running, steer)
    assert rig.peer.steered == [awkward]


@pytest.mark.parametrize("fake", STEERABLE)
def test_a_thousand_turns_keep_memory_and_threads_flat_on_one_process(fake: Fake) -> None:
    rig = fake.rig([fake.turn(f"t{n}") for n in range(1000)])
    # Compared by identity: a thread an earlier test left may end meanwhile (collected below).
    threads = set(threading.enumerate())
    for _ in range(50):
        rig.turn()
    gc.collect()
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(950):
            rig.turn()
        gc.collect()
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert set(threading.enumerate()) <= threads
    assert len(rig.executor.spawned) == 1
    # The fake peer keeps every frame it received (about 0.3 KB a turn); the transport
    # itself must keep nothing per turn.
    assert after - before < 950 * 1024, after - before


@pytest.mark.parametrize("fake", STEERABLE)
def test_an_interrupt_mid_tool_ends_the_turn_and_the_next_turn_uses_the_same_process(
    fake: Fake,
) -> None:
    sleeps = fake.turn(tool=fake.tool, tool_input={"command": "sleep 30"}, hang=True)
    rig = fake.rig([sleeps, fake.turn("next")])
    result, events = rig.turn_acting_at(of(ToolCall), rig.conversation.interrupt)
    assert result.interrupted
    assert events.of_type(TurnInterrupted)
    assert [r.failed for r in events.of_type(ToolResult)] == [True]
    after, after_events = rig.turn()
    assert (after.text, after.interrupted) == ("next", False)
    assert len(rig.executor.spawned) == 1
    assert fake.frames(rig.peer) == [*fake.started, fake.prompt, fake.interrupt, fake.prompt]
    # The interrupt's own answer came after the turn ended: it never reaches the next turn.
    assert after_events.lifecycle("between_turns") == []


@pytest.mark.parametrize(
    ("fake", "attach", "announced"),
    [
        pytest.param(OPENCODE, OPENCODE_ACP.attach, False, id="opencode-acp"),
        # Codex says which thread the turn runs on anew: its SessionStarted.
        pytest.param(CODEX, "thread/resume", True, id="codex"),
    ],
)
def test_a_dead_shared_process_fails_the_running_turn_and_both_reattach_on_a_new_one(
    fake: Fake, attach: str, announced: bool
) -> None:
    turns = [fake.turn("a1"), fake.turn("hang", hang=True), fake.turn("b2"), fake.turn("a2")]
    rig = fake.rig(turns, transport_options={"sharing": ProcessSharing()})
    first, second = rig.conversation, rig.transport.open(rig.spec)
    first.turn(TurnRequest("one"), ignore())
    # The process is killed once it has the second conversation's prompt: mid-turn, however
    # slow the machine (killed before that turn, the turn would start a new process instead).
    peer = rig.peers.peers[0]
    answer = peer.on_stdin

    def killed_on_two(line: str) -> Iterable[PeerOutput]:
        said = list(answer(line))  # the fake takes its scripted turn either way
        return [ProcessExited(-signal.SIGKILL)] if '"two"' in line else said

    peer.on_stdin = killed_on_two
    with pytest.raises(CliDiedError):
        second.turn(TurnRequest("two", timeout=60), ignore())
    seen = RecordingEventHandler()
    assert second.turn(TurnRequest("three"), seen).text == "b2"
    assert first.turn(TurnRequest("four"), ignore()).text == "a2"
    assert len(rig.executor.spawned) == 2
    reattached = [m["params"] for m in sent_to(rig.peers, attach)]
    ids = [params.get("threadId", params.get("sessionId")) for params in reattached]
    assert sorted(ids) == sorted([first.session_id, second.session_id])
    started = [event.session_id for event in seen.of_type(SessionStarted)]
    assert started == ([second.session_id] if announced else [])
    first.close()
    second.close()


PI_ARGV = ["/usr/bin/pi", "--mode", "rpc", "--model", "claude-fake-1", "--thinking", "high"]
GEMINI_ARGV = ["/usr/bin/gemini", "--acp", "--model", "gemini-2.5-pro", "--approval-mode", "yolo"]


@pytest.mark.parametrize(
    ("fake", "spec", "argv"),
    [
        (PI, {"model": "claude-fake-1", "reasoning_effort": "high"}, PI_ARGV),
        (GEMINI, {"model": "gemini-2.5-pro"}, GEMINI_ARGV),
    ],
    ids=["pi", "gemini-acp"],
)
def test_the_argv_carries_the_spec_and_never_the_prompt(
    fake: Fake, spec: dict[str, str], argv: list[str]
) -> None:
    rig = fake.rig([fake.turn("ok")], **spec)
    rig.turn("a secret prompt")
    assert list(rig.executor.spawned[0].argv) == argv


FIXTURES = Path(__file__).parents[2] / "fixtures"


RECORDED: dict[str, tuple[Callable[..., Any], Callable[[Path], Any]]] = {
    "claude": (ClaudeStreamTransport, ClaudeRecordedPeer),
    "pi": (PiRpcTransport, PiRecordedPeer),
}


@pytest.mark.parametrize(
    ("name", "case", "stderr", "after", "answer"),
    [
        ("claude", "a2_interrupt", "want to proceed", "TURN-TWO after interrupt", "Tool finished."),
        ("pi", "c2_abort_midtool", "Command aborted", "TURN-TWO after abort", "Reply two."),
    ],
)
def test_an_interrupt_during_a_tool_as_recorded(
    name: str, case: str, stderr: str, after: str, answer: str
) -> None:
    """Stopped at its tool call, the turn ends interrupted as the CLI printed it; the next
    turn gets its own answer and nothing of the stopped one."""
    transport, recording = RECORDED[name]
    recorded = recording(FIXTURES / name / "stream" / f"{case}.transcript.jsonl")
    conversation = conversation_on(name, transport, lambda request: recorded)
    result, events = turn_stopped_at(conversation, "SLOW20 run the slow tool", ToolCall)
    assert result.interrupted
    (stopped,) = events.of_type(ToolResult)
    assert stopped.failed
    assert stderr in stopped.stderr
    next_events = RecordingEventHandler()
    next_turn = conversation.turn(TurnRequest(after), next_events)
    assert (next_turn.text, next_turn.interrupted) == (answer, False)
    assert next_events.lifecycle("between_turns") == []
    assert recorded.unmatched == []
