"""Bad input from an ACP agent costs only the line it came on, for every dialect."""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.acp.dialect import AcpDialect
from agentshim.acp.updates import UpdateReader
from agentshim.core.conversation import ConversationSpec
from agentshim.core.events import AgentEvent, AssistantText, ToolCall, ToolResult
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.execution.process import SpawnRequest, StdoutLine
from agentshim.providers.copilot.acp import COPILOT_ACP
from agentshim.providers.gemini.acp import GEMINI_ACP
from agentshim.providers.opencode.acp import OPENCODE_ACP
from agentshim.testing.acp import (
    COPILOT_QUIRKS,
    GEMINI_QUIRKS,
    OPENCODE_QUIRKS,
    AcpPeer,
    AcpPeers,
    AcpPeerTurn,
    AcpQuirks,
)
from agentshim.testing.recording import RecordingEventHandler

from .rigs import transport_on

DIALECTS = [
    ("gemini", GEMINI_ACP, GEMINI_QUIRKS),
    ("opencode", OPENCODE_ACP, OPENCODE_QUIRKS),
    ("copilot", COPILOT_ACP, COPILOT_QUIRKS),
]

GARBAGE = [
    "not json at all\n",
    "{truncated\n",
    "[1, 2, 3]\n",
    '{"jsonrpc": "2.0"}\n',
    '{"jsonrpc":"2.0","method":"session/update","params":"nope"}\n',
    '{"jsonrpc":"2.0","method":"session/update","params":{"update":{"sessionUpdate":7}}}\n',
    '{"jsonrpc":"2.0","method":"session/update","params":{"update":'
    '{"sessionUpdate":"agent_message_chunk","content":"x"}}}\n',
    '{"jsonrpc":"2.0","method":"session/update","params":{"update":'
    '{"sessionUpdate":"tool_call_update","status":"completed"}}}\n',
    '{"jsonrpc":"2.0","method":"session/update","params":{"update":'
    '{"sessionUpdate":"plan","entries":[1,{"content":null}]}}}\n',
    '{"jsonrpc":"2.0","id":"agentshim_999","result":{"stopReason":"end_turn"}}\n',
]


class _Noisy(AcpPeer):
    """An agent that prints every kind of garbage before it answers a prompt."""

    def on_stdin(self, line: str) -> Iterable[Any]:
        out = list(super().on_stdin(line))
        if '"session/prompt"' in line:
            return [*(StdoutLine(g) for g in GARBAGE), *out]
        return out


@pytest.mark.parametrize(("provider", "dialect", "quirks"), DIALECTS, ids=[d[0] for d in DIALECTS])
def test_garbage_lines_cost_only_themselves(
    provider: str, dialect: AcpDialect, quirks: AcpQuirks
) -> None:
    peers = AcpPeers([AcpPeerTurn("the answer"), AcpPeerTurn("again")], quirks=quirks)

    def spawn(request: SpawnRequest) -> _Noisy:
        peer = _Noisy(peers, request.argv)
        peers.spawned(request, peer)
        return peer

    transport, _ = transport_on(provider, dialect, spawn)
    conversation = transport.open(
        ConversationSpec(permissions=NativePermissions.bypass(), approvals=ApprovalPolicy.DENY)
    )
    events = RecordingEventHandler()
    result = conversation.turn(TurnRequest("go"), events)
    assert result.text == "the answer"
    assert len(events.lifecycle("malformed_frame")) >= 3
    assert conversation.turn(TurnRequest("go"), RecordingEventHandler()).text == "again"
    conversation.close()


_JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=20,
)
_KINDS = st.sampled_from(
    [
        "agent_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "plan",
        "session_info_update",
        "usage_update",
        "current_mode_update",
        "something_new",
    ]
)


@given(
    st.lists(
        st.builds(
            lambda kind, extra, message_id: {
                **extra,
                "sessionUpdate": kind,
                "messageId": message_id,
            },
            _KINDS,
            st.dictionaries(
                st.sampled_from(
                    ["content", "toolCallId", "status", "title", "entries", "rawInput"]
                ),
                _JSON,
                max_size=4,
            ),
            st.none() | st.sampled_from(["msg_1", "msg_2"]),
        ),
        max_size=12,
    ),
    st.sampled_from([d[1] for d in DIALECTS]),
)
def test_any_updates_read_without_raising(
    updates: list[dict[str, Any]], dialect: AcpDialect
) -> None:
    seen: list[AgentEvent] = []
    reader = UpdateReader(
        seen.append, dialect.notice, failed=dialect.failed, superseded=dialect.superseded_messages
    )
    for update in updates:
        reader.read(json.loads(json.dumps(update)))
    streamed = "".join(e.text for e in seen if isinstance(e, AssistantText))
    # The answer is what streamed, less what was later found not to be the answer.
    assert len(reader.text) <= len(streamed)
    # Every result ends a call announced before it, once.
    announced: set[str | None] = set()
    ended: list[str | None] = []
    for event in seen:
        if isinstance(event, ToolCall):
            announced.add(event.tool_id)
        elif isinstance(event, ToolResult):
            assert event.tool_id in announced
            ended.append(event.tool_id)
    assert len(ended) == len(set(ended))
