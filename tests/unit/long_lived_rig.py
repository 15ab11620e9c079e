"""What the long-lived transports' unit tests share: a CLI on a fake executor, and a rig.

Every per-transport test (Claude stream, Pi rpc, Codex app-server, the ACP agents) builds the
same thing: an installed CLI whose every spawn is a scripted fake peer, a transport on it, and
one conversation of that transport with a turn helper. :func:`installed_cli` is the first,
:class:`TransportRig` the rest; each transport's rig subclasses it to choose its peers and its
transport. The helpers below it are the scenarios those tests play alike (a turn stopped at
an event, two conversations sharing a process).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from functools import partial
from typing import Any

from agentshim.core.conversation import ConversationSpec, TurnStop
from agentshim.core.events import AgentEvent, Lifecycle
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.provider import Provider
from agentshim.core.turn import TurnRequest
from agentshim.execution.process import SpawnRequest
from agentshim.providers import get_plugin
from agentshim.providers.claude.stream_transport import ClaudeStreamTransport
from agentshim.providers.codex.app_server.transport import CodexAppServerTransport
from agentshim.providers.pi.rpc_transport import PiRpcTransport
from agentshim.testing import FakeExecutor
from agentshim.testing.claude_stream import ClaudePeerTurn, ClaudeStreamPeer, ClaudeStreamPeers
from agentshim.testing.codex_app_server import (
    CodexAppServerPeer,
    CodexAppServerPeers,
    CodexPeerTurn,
)
from agentshim.testing.pi_rpc import PiPeerTurn, PiRecordedPeer, PiRpcPeer, PiRpcPeers
from agentshim.testing.process import FakePeer
from agentshim.testing.recording import RecordingEventHandler
from agentshim.transport.installed import InstalledCli

BYPASS = NativePermissions.bypass()


def installed_cli(
    name: str,
    peers: Callable[[SpawnRequest], FakePeer],
    *,
    provider: Provider | None = None,
    monotonic: Callable[[], float] = time.monotonic,
) -> tuple[InstalledCli, FakeExecutor]:
    """Provider ``name``'s CLI at ``/usr/bin/<binary>``, every spawn of which ``peers`` plays.

    ``provider`` replaces the one the plugin makes (a configured one, or another provider's).
    """
    executor = FakeExecutor(peers=peers)
    plugin = get_plugin(name)
    cli = InstalledCli(
        provider=provider or plugin.create_provider(),
        executor=executor,
        binary_path=f"/usr/bin/{plugin.profile.binary}",
        env={"PATH": "/usr/bin"},
        monotonic=monotonic,
    )
    return cli, executor


class TransportRig:
    """One conversation of provider ``name``'s long-lived transport, its CLI played by ``peers``.

    ``transport`` builds the transport on the installed CLI, with ``transport_options``;
    ``spec`` adds ConversationSpec fields to a conversation that asks nothing (bypass
    permissions, approvals denied) unless told otherwise. ``peer`` is the fake of the latest
    spawn, ``executor`` the fake executor that spawned them all.
    """

    def __init__(
        self,
        name: str,
        peers: Any,
        transport: Callable[..., Any],
        *,
        transport_options: Mapping[str, Any] | None = None,
        permissions: NativePermissions = BYPASS,
        approvals: object = ApprovalPolicy.DENY,
        resume: str | None = None,
        **spec: Any,
    ) -> None:
        self.peers = peers
        cli, self.executor = installed_cli(name, peers)
        self.transport = transport(cli, **(transport_options or {}))
        self.spec = ConversationSpec(
            permissions=permissions,
            approvals=approvals,  # type: ignore[arg-type]
            resume_session_id=resume,
            **spec,
        )
        self.conversation = self.transport.open(self.spec)

    def turn(
        self, prompt: str | TurnRequest = "go", **request: Any
    ) -> tuple[Any, RecordingEventHandler]:
        """One turn of ``prompt`` (or of a whole request), with every event it reported."""
        events = RecordingEventHandler()
        if not isinstance(prompt, TurnRequest):
            prompt = TurnRequest(prompt, **request)
        return self.conversation.turn(prompt, events), events

    def turn_acting_at(
        self, at: Callable[[AgentEvent], bool], action: Callable[[], None], prompt: str = "go"
    ) -> tuple[Any, RecordingEventHandler]:
        """One turn of ``prompt``; see :func:`turn_acting_at`."""
        return turn_acting_at(self.conversation, TurnRequest(prompt, timeout=60), at, action)

    @property
    def peer(self) -> Any:
        return self.peers.peers[-1]


def sent_to(peers: Any, method: str) -> list[dict[str, Any]]:
    """Every JSON-RPC request or notification named ``method`` any of ``peers`` was sent."""
    return [m for peer in peers.peers for m in peer.received if m.get("method") == method]


def bypass_spec(resume: str | None = None) -> ConversationSpec:
    """A conversation that asks nothing (bypass permissions, approvals denied)."""
    return ConversationSpec(
        permissions=BYPASS, approvals=ApprovalPolicy.DENY, resume_session_id=resume
    )


def ignore() -> Callable[[AgentEvent], None]:
    """An event handler that drops every event."""
    return [].append


def take_turns(transport: Any) -> tuple[Any, Any]:
    """Two conversations on ``transport`` taking turns (first, second, first); the turns must
    answer ``a1``, ``b1``, ``a2`` in order. Returns both."""
    first, second = transport.open(bypass_spec()), transport.open(bypass_spec())
    answers = [
        first.turn(TurnRequest("one"), ignore()).text,
        second.turn(TurnRequest("two"), ignore()).text,
        first.turn(TurnRequest("three"), ignore()).text,
    ]
    assert answers == ["a1", "b1", "a2"]
    return first, second


def turn_acting_at(
    conversation: Any,
    request: TurnRequest,
    at: Callable[[AgentEvent], bool],
    action: Callable[[], None],
) -> tuple[Any, RecordingEventHandler]:
    """One turn of ``request`` on ``conversation``; at its first event for which ``at`` holds,
    ``action`` runs on another thread, as a caller's other thread steers or interrupts a turn
    it sees running (never before it runs, however slow the machine). The thread is joined
    before this returns; give the request a timeout, so an action that is lost fails the turn."""
    events = RecordingEventHandler()
    acting: list[threading.Thread] = []

    def act(event: AgentEvent) -> None:
        events(event)
        if not acting and at(event):
            acting.append(threading.Thread(target=action, name="acting-at"))
            acting[0].start()

    try:
        return conversation.turn(request, act), events
    finally:
        for thread in acting:
            thread.join()


def of(kind: type[AgentEvent]) -> Callable[[AgentEvent], bool]:
    """Holds for an event of type ``kind``."""
    return lambda event: isinstance(event, kind)


def lifecycle(kind: str) -> Callable[[AgentEvent], bool]:
    """Holds for a ``Lifecycle`` event of ``kind``."""
    return lambda event: isinstance(event, Lifecycle) and event.kind == kind


def interrupt_the_second(transport: Any) -> tuple[Any, Any]:
    """Two Codex conversations on ``transport``: the first runs a turn, then the second one,
    interrupted once Codex says it started, which must end interrupted. Returns both."""
    quiet, interrupted = transport.open(bypass_spec()), transport.open(bypass_spec())
    quiet.turn(TurnRequest("one"), ignore())
    # An interrupt that never arrived would leave the turn to its minute, and it would time out.
    request = TurnRequest("two", timeout=60)
    started = lifecycle("turn_started")
    result, _ = turn_acting_at(interrupted, request, started, interrupted.interrupt)
    assert result.interrupted
    return quiet, interrupted


def conversation_on(
    name: str,
    transport: Callable[..., Any],
    spawn: Callable[[SpawnRequest], FakePeer],
    **spec: Any,
) -> Any:
    """A conversation of ``transport`` on provider ``name``'s CLI, each spawn played by ``spawn``
    (a fake with a quirk of its own, or a recorded session); ``spec`` as :class:`TransportRig`."""
    return TransportRig(name, spawn, transport, **spec).conversation


def turn_stopped_at(
    conversation: Any, request: TurnRequest | str, at: type[AgentEvent]
) -> tuple[Any, RecordingEventHandler]:
    """One turn of ``request`` on ``conversation``, stopped by its TurnStop at its first ``at``
    event (the stop a caller's handler asks for when it sees that event)."""
    events = RecordingEventHandler()
    stop = TurnStop()

    def stop_at(event: AgentEvent) -> None:
        events(event)
        if isinstance(event, at):
            stop.request()

    if not isinstance(request, TurnRequest):
        request = TurnRequest(request)
    return conversation.turn(request, stop_at, stop), events


class ClaudeStreamRig(TransportRig):
    """A Claude Code stream transport on a scripted fake Claude Code."""

    def __init__(self, turns: Iterable[ClaudePeerTurn], **spec: Any) -> None:
        super().__init__("claude", ClaudeStreamPeers(turns), ClaudeStreamTransport, **spec)

    @property
    def peer(self) -> ClaudeStreamPeer:
        return self.peers.peers[-1]


def claude_frames(peer: ClaudeStreamPeer) -> list[str]:
    """The kinds of frame Claude Code was sent: ``user``, ``control_request:<subtype>``."""
    out: list[str] = []
    for frame in peer.received:
        body = frame.get("request")
        subtype = body.get("subtype") if isinstance(body, dict) else None
        out.append(f"{frame['type']}:{subtype}" if subtype else str(frame["type"]))
    return out


class PiRpcRig(TransportRig):
    """A Pi rpc transport on a scripted fake Pi; ``missing`` are sessions it does not have."""

    def __init__(
        self, turns: Iterable[PiPeerTurn], *, missing: Sequence[str] = (), **spec: Any
    ) -> None:
        super().__init__("pi", PiRpcPeers(turns, missing=missing), PiRpcTransport, **spec)

    @property
    def peer(self) -> PiRpcPeer:
        return self.peers.peers[-1]


def pi_frames(peer: PiRpcPeer | PiRecordedPeer) -> list[str]:
    """The types of command Pi was sent: ``get_state``, ``prompt``, ``abort``..."""
    return [str(frame["type"]) for frame in peer.received]


class CodexAppServerRig(TransportRig):
    """A Codex app-server transport on a scripted fake Codex; ``reaped`` lists the markers
    whose processes it reaped."""

    def __init__(
        self, turns: Iterable[CodexPeerTurn], *, missing: Sequence[str] = (), **spec: Any
    ) -> None:
        self.reaped: list[str] = []
        peers = CodexAppServerPeers(turns, missing=missing)
        super().__init__("codex", peers, partial(CodexAppServerTransport, reap=self._reap), **spec)

    def _reap(self, marker: str) -> int:
        self.reaped.append(marker)
        return 1

    @property
    def peer(self) -> CodexAppServerPeer:
        return self.peers.peers[-1]

    def sent(self, method: str) -> list[dict[str, Any]]:
        """Every request or notification named ``method`` any of its processes was sent."""
        return sent_to(self.peers, method)
