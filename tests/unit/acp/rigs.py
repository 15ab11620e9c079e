"""What the per-agent ACP tests share: a transport on a fake or recorded agent, and events."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from pathlib import Path
from typing import Any

from agentshim.acp.client import AcpTransport
from agentshim.acp.dialect import AcpDialect
from agentshim.acp.jsonrpc import Notification, Request, Response, read_message
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import Conversation, ConversationSpec
from agentshim.core.events import (
    AgentEvent,
    ApprovalAnswered,
    AssistantText,
    TurnInterrupted,
)
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.execution.process import SpawnRequest
from agentshim.testing import FakeExecutor
from agentshim.testing.acp import AcpPeer, AcpPeers, AcpPeerTurn, AcpQuirks, AcpRecordedPeer
from agentshim.testing.process import FakePeer
from agentshim.testing.recording import RecordingEventHandler
from tests.unit.long_lived_rig import TransportRig, installed_cli, of, turn_acting_at

FIXTURES = Path(__file__).parents[2] / "fixtures"


def transport_on(
    provider: str, dialect: AcpDialect, peers: Callable[[SpawnRequest], FakePeer], **options: Any
) -> tuple[AcpTransport, FakeExecutor]:
    """``dialect``'s transport, every spawn of which is a peer made by ``peers``."""
    ctx, executor = installed_cli(provider, peers)
    return AcpTransport(ctx, dialect, **options), executor


class Rig(TransportRig):
    """An ACP transport with ``dialect`` on a scripted fake agent with ``quirks``.

    ``transport_options`` go to the transport (``sleep``, timeouts), ``spec`` to its
    ConversationSpec; ``lost`` are sessions the agent no longer has.
    """

    def __init__(
        self,
        provider: str,
        dialect: AcpDialect,
        quirks: AcpQuirks,
        turns: Iterable[AcpPeerTurn],
        *,
        lost: Iterable[str] = (),
        **spec: Any,
    ) -> None:
        peers = AcpPeers(turns, quirks=quirks, lost=lost)
        super().__init__(
            provider, peers, partial(AcpTransport, dialect=dialect), cwd="/work", **spec
        )

    @property
    def peer(self) -> AcpPeer:
        return self.peers.peers[-1]


def turn_on(
    conversation: Conversation,
    prompt: str,
    *,
    interrupt_at: Callable[[AgentEvent], bool] | None = None,
) -> tuple[Any, RecordingEventHandler]:
    """One turn of ``prompt`` on ``conversation``, interrupted at its first event for which
    ``interrupt_at`` holds, if given (from another thread, as a caller would)."""
    if interrupt_at is None:
        events = RecordingEventHandler()
        return conversation.turn(TurnRequest(prompt), events), events
    request = TurnRequest(prompt, timeout=60)
    return turn_acting_at(conversation, request, interrupt_at, conversation.interrupt)


def methods(peer: AcpPeer) -> list[str]:
    return [str(frame.get("method", "answer")) for frame in peer.received]


def recorded_lines(provider: str, case: str, direction: str) -> Iterator[str]:
    """The complete lines one direction of a recorded ACP session carried."""
    path = FIXTURES / provider / "acp" / case / "transcript.jsonl"
    pending = ""
    for raw in path.read_text(encoding="utf-8").splitlines():
        record = json.loads(raw)
        if record["dir"] == direction and isinstance(record["data"], str):
            pending += record["data"]
            *lines, pending = pending.split("\n")
            yield from (line for line in lines if line.startswith("{"))


def recorded_messages(
    provider: str, case: str, direction: str = "out"
) -> list[Response | Request | Notification]:
    messages: list[Response | Request | Notification] = []
    for line in recorded_lines(provider, case, direction):
        message = read_message(json.loads(line))
        assert message is not None, line[:200]
        messages.append(message)
    return messages


def recorded_cases(provider: str) -> list[str]:
    return sorted(p.name for p in (FIXTURES / provider / "acp").iterdir() if p.is_dir())


def replay(
    provider: str, dialect: AcpDialect, case: str
) -> tuple[AcpTransport, list[AcpRecordedPeer]]:
    """``dialect``'s transport on the recording ``case``: each spawn replays it anew."""
    peers: list[AcpRecordedPeer] = []
    transcript = FIXTURES / provider / "acp" / case / "transcript.jsonl"

    def spawn(_: SpawnRequest) -> AcpRecordedPeer:
        peers.append(AcpRecordedPeer(transcript))
        return peers[-1]

    return transport_on(provider, dialect, spawn, close_grace=0.5)[0], peers


def answers(peer: AcpRecordedPeer) -> list[dict[str, Any]]:
    """The outcome of every answer written to a recorded peer."""
    frames = [json.loads(line) for line in peer.written]
    return [frame["result"]["outcome"] for frame in frames if "method" not in frame]


def replay_conversation(
    provider: str,
    dialect: AcpDialect,
    case: str,
    *,
    permissions: NativePermissions | None = None,
    approvals: object = ApprovalPolicy.DENY,
    resume: str | None = None,
) -> tuple[Conversation, list[AcpRecordedPeer]]:
    """One conversation in ``/work`` of :func:`replay`'s transport on the recording ``case``.

    It runs with bypass permissions and denies approvals unless told otherwise.
    """
    transport, peers = replay(provider, dialect, case)
    spec = ConversationSpec(
        permissions=permissions or NativePermissions.bypass(),
        approvals=approvals,  # type: ignore[arg-type]
        cwd="/work",
        resume_session_id=resume,
    )
    return transport.open(spec), peers


class RecordedMainSession:
    """``provider``'s recording ``session_main``, replayed as one workspace-write conversation.

    Its approvals are answered as when it was recorded: a ``touch`` is denied, the fourth
    request (SLOWB's, cancelled while it is pending) interrupts its turn and is then allowed,
    every other is allowed.
    """

    def __init__(self, provider: str, dialect: AcpDialect) -> None:
        self.asked: list[ApprovalRequest] = []
        self.conversation, self.peers = replay_conversation(
            provider,
            dialect,
            "session_main",
            permissions=NativePermissions.workspace_write(),
            approvals=self._decide,
        )

    def _decide(self, request: ApprovalRequest) -> ApprovalDecision:
        self.asked.append(request)
        if "touch" in request.tool:
            return ApprovalDecision.deny("no")
        if len(self.asked) == 4:
            self.conversation.interrupt()
        return ApprovalDecision.allow()

    def turn(
        self, prompt: str, *, interrupt_at: Callable[[AgentEvent], bool] | None = None
    ) -> tuple[Any, RecordingEventHandler]:
        """The next recorded turn, interrupted at its first event ``interrupt_at`` holds for."""
        return turn_on(self.conversation, prompt, interrupt_at=interrupt_at)

    def interrupted_turns(self) -> tuple[RecordingEventHandler, RecordingEventHandler, str]:
        """Play the recording's three interrupted turns, then the one after them.

        SLOWA is interrupted once its command was allowed (the third approval, answered before
        the interrupt as when recorded), SLOWB while its approval is pending,
        DRIP once its stream started: each ends interrupted (SLOWA with a TurnInterrupted, SLOWB's
        approval decided by the interrupt), and the next turn answers as recorded. Returns
        SLOWA's and SLOWB's events and the text DRIP got out.
        """
        slow_a, slow_a_events = self.turn("SLOWA run sleep", interrupt_at=of(ApprovalAnswered))
        assert slow_a.interrupted
        assert slow_a_events.of_type(TurnInterrupted)
        slow_b, slow_b_events = self.turn("SLOWB run sleep")
        assert slow_b.interrupted
        assert slow_b_events.of_type(ApprovalAnswered)[0].decided_by == "interrupted"
        drip, _ = self.turn("DRIP stream", interrupt_at=of(AssistantText))
        assert drip.interrupted
        assert self.turn("Say hello after cancel.")[0].text == "Hello from the scripted model."
        return slow_a_events, slow_b_events, drip.text

    def chosen(self) -> list[str]:
        """Close the conversation; what :func:`closed_and_chosen` says its answers chose."""
        return closed_and_chosen(self.conversation, self.peers)


def closed_and_chosen(conversation: Conversation, peers: list[AcpRecordedPeer]) -> list[str]:
    """Close ``conversation``; the option each approval answer to its one recorded peer chose
    (``cancelled`` for a cancel), once that peer matched every line it was sent."""
    conversation.close()
    (peer,) = peers
    assert peer.unmatched == []
    return [
        str(answer["optionId"] if answer["outcome"] == "selected" else answer["outcome"])
        for answer in answers(peer)
    ]


def turn_after_load(
    provider: str, dialect: AcpDialect, case: str, resume: str
) -> tuple[Any, RecordingEventHandler]:
    """The turn a recorded session that reopened ``resume`` ran (its prompt is always the same),
    its conversation closed after it."""
    conversation, _ = replay_conversation(provider, dialect, case, resume=resume)
    try:
        return turn_on(conversation, "Say hello after load.")
    finally:
        conversation.close()
