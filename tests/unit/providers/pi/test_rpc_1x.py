"""The rpc transport on Pi 1.x: turns end at agent_settled, dispositions are honoured.

On the fake (``PiRpcPeers(cli_version=...)``) and on the transcripts recorded from Pi 1.6.0
(``tests/fixtures/pi/stream-1.6.0/``, ``scripts/record_pi_rpc.py``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.core.errors import CliExitError, FailureKind
from agentshim.core.events import AgentEvent, AssistantText, Lifecycle, ToolCall, ToolResult
from agentshim.core.turn import TurnRequest
from agentshim.providers.pi.parser import PiStreamParser
from agentshim.providers.pi.rpc_protocol import read_response
from agentshim.providers.pi.rpc_transport import PiRpcConversation, PiRpcTransport
from agentshim.testing.pi_rpc import PiPeerTurn, PiRecordedPeer, PiRpcPeers
from agentshim.testing.recording import RecordingEventHandler
from tests.unit.long_lived_rig import conversation_on, turn_stopped_at

from .test_rpc_transport import SLEEP, sent_types

RECORDED = Path(__file__).parents[3] / "fixtures" / "pi" / "stream-1.6.0"
ERROR_500 = '500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}'


def open_conversation(
    turns: list[PiPeerTurn], cli_version: str = "1.6.0"
) -> tuple[PiRpcConversation, PiRpcPeers]:
    peers = PiRpcPeers(turns, cli_version=cli_version)
    conversation = conversation_on("pi", PiRpcTransport, peers)
    return conversation, peers


def turn(conversation: PiRpcConversation, prompt: str = "go") -> tuple[Any, RecordingEventHandler]:
    events = RecordingEventHandler()
    # A turn that waited for a frame that never comes would end at this budget, failing.
    request = TurnRequest(prompt, timeout=60.0)
    return conversation.turn(request, events), events


class TestOnTheFake:
    def test_each_turn_ends_at_its_settle_and_the_next_meets_nothing_of_it(self) -> None:
        conversation, peers = open_conversation([PiPeerTurn("one"), PiPeerTurn("two")])
        first, first_events = turn(conversation)
        second, second_events = turn(conversation)
        assert (first.text, second.text) == ("one", "two")
        assert first_events.lifecycle("agent_settled") == [""]
        assert second_events.lifecycle("between_turns") == []
        assert second_events.lifecycle("agent_settled") == [""]
        assert sent_types(peers.peers[0]) == ["get_state", "prompt", "prompt"]

    def test_a_prompt_pi_handles_without_a_run_ends_the_turn_at_once(self) -> None:
        conversation, _ = open_conversation([PiPeerTurn(handled=True), PiPeerTurn("after")])
        handled, events = turn(conversation, "/an-extension-command")
        assert handled.text == ""
        assert not handled.interrupted
        assert events.lifecycle("prompt_handled") == ["pi handled the prompt without a run"]
        assert turn(conversation)[0].text == "after"

    def test_an_abort_settles_aborted_and_the_next_turn_is_clean(self) -> None:
        conversation, _ = open_conversation(
            [PiPeerTurn("never", tool="bash", tool_input=SLEEP, hang=True), PiPeerTurn("after")]
        )
        result, events = turn_stopped_at(conversation, TurnRequest("go", timeout=60.0), ToolCall)
        assert result.interrupted
        assert events.lifecycle("agent_settled") == ["aborted"]
        after, after_events = turn(conversation)
        assert after.text == "after"
        assert after_events.lifecycle("between_turns") == []

    def test_pis_retries_end_at_the_settle_without_asking_its_state(self) -> None:
        conversation, peers = open_conversation(
            [PiPeerTurn(error=ERROR_500, retries=2), PiPeerTurn("fine")]
        )
        with pytest.raises(CliExitError) as caught:
            turn(conversation)
        assert caught.value.kind is FailureKind.TRANSIENT
        after, events = turn(conversation)
        assert after.text == "fine"
        assert events.lifecycle("between_turns") == []
        # 0.73 needs a get_state after a failed run to learn of a retry; 1.x says willRetry.
        assert sent_types(peers.peers[0]) == ["get_state", "prompt", "prompt"]

    def test_a_pi_that_settles_without_a_disposition_is_learned_from_its_first_settle(
        self,
    ) -> None:
        conversation, _ = open_conversation(
            [PiPeerTurn("one"), PiPeerTurn("two"), PiPeerTurn("three")], cli_version="0.90.0"
        )
        texts: list[str] = []
        for _ in range(3):
            result, events = turn(conversation)
            texts.append(result.text)
            assert events.lifecycle("between_turns") == []
        assert texts == ["one", "two", "three"]


# -- the property --------------------------------------------------------------------------

_TURNS = st.builds(
    PiPeerTurn,
    text=st.sampled_from(["alpha", "beta", "gamma", "delta"]),
    tool=st.sampled_from([None, "bash"]),
    tool_input=st.just({"command": "true"}),
    error=st.sampled_from([None, None, None, ERROR_500]),
    retries=st.integers(0, 2),
    handled=st.sampled_from([False, False, True]),
)


@given(
    turns=st.lists(_TURNS, min_size=2, max_size=5),
    cli_version=st.sampled_from(["0.73.1", "0.90.0", "1.6.0"]),
)
def test_no_frame_after_a_turns_end_becomes_the_next_turns_output(
    turns: list[PiPeerTurn], cli_version: str
) -> None:
    conversation, _ = open_conversation(turns, cli_version)
    handles = cli_version == "1.6.0"
    for scripted in turns:
        events = RecordingEventHandler()
        request = TurnRequest("go", timeout=60.0)
        handled = scripted.handled and handles
        if scripted.error is not None and not handled:
            with pytest.raises(CliExitError) as caught:
                conversation.turn(request, events)
            assert caught.value.kind is FailureKind.TRANSIENT
        else:
            result = conversation.turn(request, events)
            expected = "" if handled else scripted.text
            assert result.text == expected
            streamed = "".join(e.text for e in events.of_type(AssistantText))
            assert streamed == expected
        assert events.lifecycle("between_turns") == []
        assert [e for e in events.of_type(Lifecycle) if e.kind.startswith("unknown_frame")] == []


# -- the recordings ------------------------------------------------------------------------


def replay(case: str) -> tuple[PiRpcConversation, PiRecordedPeer]:
    recorded = PiRecordedPeer(RECORDED / f"{case}.transcript.jsonl")
    conversation = conversation_on("pi", PiRpcTransport, lambda request: recorded)
    return conversation, recorded


def _recorded_frames(case: str) -> list[Mapping[str, Any]]:
    text = ""
    for raw in (RECORDED / f"{case}.transcript.jsonl").read_text().splitlines():
        record = json.loads(raw)
        if record["dir"] == "out":
            text += record["data"]
    return [json.loads(line) for line in text.splitlines() if line]


CASES = sorted(p.name.split(".")[0] for p in RECORDED.glob("*.transcript.jsonl"))


class TestRecorded:
    def test_the_recordings_are_there(self) -> None:
        assert CASES == ["abort_midtool", "steer_midtool", "two_turns"]

    @pytest.mark.parametrize("case", CASES)
    def test_every_recorded_frame_is_understood(self, case: str) -> None:
        events = RecordingEventHandler()
        parser = PiStreamParser(events)
        for frame in _recorded_frames(case):
            if frame.get("type") == "response":
                assert read_response(frame).command != "?"
            else:
                parser.dispatch(frame, json.dumps(frame))
        assert [e.kind for e in events.of_type(Lifecycle) if e.kind.startswith("unknown")] == []
        assert events.lifecycle("malformed_frame") == []

    def test_two_turns_as_pi_1_6_printed_them(self) -> None:
        conversation, peer = replay("two_turns")
        first, _ = turn(conversation, "TURN-ONE please")
        second, events = turn(conversation, "TURN-TWO please")
        assert (first.text, second.text) == ("Reply one.", "Reply two.")
        assert events.lifecycle("between_turns") == []
        assert events.lifecycle("agent_settled") == [""]
        assert peer.unmatched == []

    def test_an_abort_during_a_tool_as_pi_1_6_printed_it(self) -> None:
        conversation, peer = replay("abort_midtool")
        request = TurnRequest("Sleep a while.", timeout=60.0)
        result, events = turn_stopped_at(conversation, request, ToolCall)
        assert result.interrupted
        assert events.lifecycle("agent_settled") == ["aborted"]
        assert "aborted" in events.of_type(ToolResult)[0].stderr.lower()
        after, after_events = turn(conversation, "Say something.")
        assert after.text == "After it."
        assert after_events.lifecycle("between_turns") == []
        assert peer.unmatched == []

    def test_a_steer_during_a_tool_as_pi_1_6_printed_it(self) -> None:
        conversation, peer = replay("steer_midtool")
        steer = "STEER-MARKER also mention a banana"
        sent: list[str] = []
        events = RecordingEventHandler()

        def steer_on_tool(event: AgentEvent) -> None:
            events(event)
            if isinstance(event, ToolCall) and not sent:
                sent.append(steer)
                conversation.steer(steer)

        result = conversation.turn(TurnRequest("Sleep a little.", timeout=60.0), steer_on_tool)
        assert result.text == "Banana, done."
        assert events.lifecycle("steered") == [steer]
        assert events.lifecycle("steer_carried_over") == []
        assert peer.unmatched == []
