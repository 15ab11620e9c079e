"""The Codex app-server transport against recorded codex-cli 0.171.0 transcripts, replayed."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest, approvals_value
from agentshim.core.conversation import Conversation, ConversationSpec
from agentshim.core.errors import CliExitError, FailureKind
from agentshim.core.events import (
    AgentEvent,
    ApprovalAnswered,
    Lifecycle,
    ToolCall,
    ToolResult,
    TurnInterrupted,
)
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.execution.process import SpawnRequest
from agentshim.providers.codex.app_server.transport import CodexAppServerTransport
from agentshim.providers.codex.provider import CodexProvider
from agentshim.testing import FakeExecutor
from agentshim.testing.codex_app_server import CodexRecordedPeer
from agentshim.testing.recording import RecordingEventHandler
from agentshim.transport.installed import InstalledCli

STREAM = Path(__file__).parents[3] / "fixtures" / "codex" / "stream"
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["answer", "count"],
    "additionalProperties": False,
}


class Replay:
    """A conversation whose process replays ``case``."""

    def __init__(self, case: str, **spec: Any) -> None:
        self.peers: list[CodexRecordedPeer] = []
        self.reaped: list[str] = []

        def spawn(request: SpawnRequest) -> CodexRecordedPeer:
            peer = CodexRecordedPeer(STREAM / f"{case}.transcript.jsonl")
            self.peers.append(peer)
            return peer

        context = InstalledCli(
            provider=CodexProvider(),
            executor=FakeExecutor(peers=spawn),
            binary_path="/usr/bin/codex",
            env={"PATH": "/usr/bin"},
        )
        transport = CodexAppServerTransport(context, reap=self._reap)
        spec.setdefault("permissions", NativePermissions.bypass())
        spec.setdefault("approvals", ApprovalPolicy.DENY)
        self.conversation: Conversation = transport.open(ConversationSpec(**spec))

    def _reap(self, marker: str) -> int:
        self.reaped.append(marker)
        return 0

    def turn(
        self, request: TurnRequest | str = "go", hook: Callable[[AgentEvent], None] | None = None
    ) -> tuple[Any, RecordingEventHandler]:
        events = RecordingEventHandler()

        def emit(event: AgentEvent) -> None:
            events.on_event(event)
            if hook is not None:
                hook(event)

        request = request if isinstance(request, TurnRequest) else TurnRequest(request)
        return self.conversation.turn(request, emit), events


def test_a_plain_turn_a_tool_turn_and_a_structured_turn(tmp_path: Path) -> None:
    replay = Replay("basic_two_turns_schema")
    first, _ = replay.turn()
    assert first.text == "Hello from the scripted model."
    assert first.usage.tokens.input_tokens == 1200
    assert first.usage.tokens.cache_read_input_tokens == 1000
    assert first.context_window == 258400
    second, events = replay.turn()
    (call,) = events.of_type(ToolCall)
    assert call.tool == "command_execution"
    (result,) = events.of_type(ToolResult)
    assert result.stdout == "hello\n"
    assert second.session_id == first.session_id
    third, _ = replay.turn(TurnRequest("json", output_schema=OutputSchema(SCHEMA, tmp_path)))
    assert third.structured_output == {"answer": "hello", "count": 2}
    assert replay.peers[0].unmatched == []
    assert len(replay.peers) == 1


def test_an_interrupted_command_is_closed_by_the_transport_and_the_next_turn_runs() -> None:
    replay = Replay("interrupt_sleep")
    conversation = replay.conversation

    def interrupt_on_command(event: AgentEvent) -> None:
        if isinstance(event, ToolCall):
            conversation.interrupt()

    first, events = replay.turn(hook=interrupt_on_command)
    assert first.interrupted
    assert events.of_type(TurnInterrupted)
    (closed,) = events.of_type(ToolResult)
    assert closed.failed
    assert replay.reaped, "the interrupted turn's commands were not ended"
    second, _ = replay.turn()
    assert second.text == "Hello from the scripted model."
    assert not second.interrupted

    def interrupt_when_named(event: AgentEvent) -> None:
        if isinstance(event, Lifecycle) and event.kind == "turn_started":
            conversation.interrupt()

    third, _ = replay.turn(hook=interrupt_when_named)
    assert third.interrupted
    assert replay.peers[0].unmatched == []


def test_approvals_accept_then_decline() -> None:
    answers = iter([True, False])

    def decide(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.allow() if next(answers) else ApprovalDecision.deny("no")

    replay = Replay(
        "approvals_accept_decline",
        permissions=NativePermissions.workspace_write(),
        approvals=approvals_value("test", decide),
    )
    _, first = replay.turn()
    _, second = replay.turn()
    assert [
        e.allowed for e in first.of_type(ApprovalAnswered) + second.of_type(ApprovalAnswered)
    ] == [
        True,
        False,
    ]
    assert [r.failed for r in first.of_type(ToolResult) + second.of_type(ToolResult)] == [
        False,
        True,
    ]
    replies = [m for m in replay.peers[0].received if "result" in m]
    assert replies == [
        {"id": 0, "result": {"decision": "accept"}},
        {"id": 1, "result": {"decision": "decline"}},
    ]


def test_failures_are_classified_and_the_process_takes_the_next_turn() -> None:
    replay = Replay("errors_500_ctx")
    with pytest.raises(CliExitError) as server_error:
        replay.turn()
    assert server_error.value.kind is FailureKind.TRANSIENT
    with pytest.raises(CliExitError) as overflow:
        replay.turn()
    assert overflow.value.kind is FailureKind.CONTEXT_OVERFLOW
    after, _ = replay.turn()
    assert after.text
    assert len(replay.peers) == 1


def test_a_resumed_thread_counts_only_its_own_turn_after_the_replayed_total() -> None:
    replay = Replay(
        "resume_other_process", resume_session_id="01a2303f-ee4d-78e3-baa0-362db2780bd1"
    )
    result, _ = replay.turn()
    assert result.resumed
    assert result.session_id == "01a2303f-ee4d-78e3-baa0-362db2780bd1"
    # The recorded totals: 3785 replayed by thread/resume, 5025 after the turn.
    assert result.usage.tokens.input_tokens == 1200
    assert result.usage.tokens.output_tokens == 40
