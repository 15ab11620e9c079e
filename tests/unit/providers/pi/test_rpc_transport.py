"""The Pi rpc transport, against fake ``pi --mode rpc`` processes and recorded ones."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.core import errors
from agentshim.core import events as ev
from agentshim.core.approvals import ApprovalDecision
from agentshim.core.conversation import ConversationSpec, TurnStop
from agentshim.core.mcp import StdioMcpServer
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.execution.process import ProcessExited, SpawnRequest, StdoutLine
from agentshim.providers.pi.provider import PiProvider
from agentshim.providers.pi.rpc_protocol import read_response
from agentshim.providers.pi.rpc_transport import PiRpcConversation, PiRpcTransport
from agentshim.testing import FakeExecutor
from agentshim.testing.pi_rpc import PiPeerTurn, PiRecordedPeer, PiRpcPeer, PiRpcPeers
from agentshim.testing.process import FakePeer, PeerOutput, SilentPeer
from agentshim.testing.recording import RecordingEventHandler
from agentshim.transport.installed import InstalledCli
from tests.unit.long_lived_rig import PiRpcRig as Rig
from tests.unit.long_lived_rig import conversation_on, installed_cli, of, turn_stopped_at
from tests.unit.long_lived_rig import pi_frames as sent_types

FIXTURES = Path(__file__).parents[3] / "fixtures" / "pi" / "stream"
BYPASS = NativePermissions.bypass()
SLEEP = {"command": "sleep 30"}
AUTH_ERROR = (
    '401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}'
)


def context(
    peers: Callable[[SpawnRequest], FakePeer],
    *,
    monotonic: Callable[[], float] = time.monotonic,
    provider: PiProvider | None = None,
) -> tuple[InstalledCli, FakeExecutor]:
    return installed_cli("pi", peers, provider=provider, monotonic=monotonic)


class TestTurnsOnOneProcess:
    def test_command_ids_are_unique_for_the_process(self) -> None:
        rig = Rig([PiPeerTurn("a"), PiPeerTurn("b"), PiPeerTurn("c")])
        for _ in range(3):
            rig.turn()
        ids = [frame["id"] for frame in rig.peer.received]
        assert len(set(ids)) == len(ids) == 4

    def test_usage_is_the_turns_own_from_its_assistant_messages(self) -> None:
        rig = Rig(
            [
                PiPeerTurn("a", input_tokens=100, output_tokens=20, cost_usd=0.25),
                PiPeerTurn("b", tool="bash", tool_input={"command": "ls"}, cost_usd=0.5),
            ]
        )
        first, _ = rig.turn()
        second, events = rig.turn()
        assert first.usage.total_cost_usd == pytest.approx(0.25)
        assert first.usage.tokens.input_tokens == 100
        assert second.usage.total_cost_usd == pytest.approx(0.5)
        # Two model calls: the tool request (300 in) and the answer (100 in).
        assert second.usage.tokens.input_tokens == 400
        calls = [r for r in events.of_type(ev.UsageReport) if r.scope is ev.UsageScope.CALL]
        assert len(calls) == 2

    def test_a_tool_turn_reports_the_call_and_its_result(self) -> None:
        rig = Rig([PiPeerTurn("listed", tool="bash", tool_input={"command": "ls"})])
        result, events = rig.turn()
        assert result.text == "listed"
        (call,) = events.of_type(ev.ToolCall)
        assert call.tool == "bash"
        (tool_result,) = events.of_type(ev.ToolResult)
        assert not tool_result.failed
        assert '"command": "ls"' in tool_result.stdout

    def test_a_turn_may_switch_the_model_in_band(self) -> None:
        rig = Rig([PiPeerTurn("a"), PiPeerTurn("b")])
        rig.turn()
        result, events = rig.turn(model="other/claude-fake-2")
        assert result.text == "b"
        assert sent_types(rig.peer) == ["get_state", "prompt", "set_model", "prompt"]
        assert rig.peer.received[2]["provider"] == "other"
        assert rig.peer.received[2]["modelId"] == "claude-fake-2"
        assert events.lifecycle("model_switched") == ["other/claude-fake-2"]
        assert len(rig.executor.spawned) == 1

    def test_a_bare_model_id_is_switched_under_the_current_provider(self) -> None:
        rig = Rig([PiPeerTurn("a")])
        rig.turn(model="claude-fake-2")
        assert rig.peer.received[1] == {
            "id": rig.peer.received[1]["id"],
            "type": "set_model",
            "provider": "fake",
            "modelId": "claude-fake-2",
        }
        assert rig.peer.model == "claude-fake-2"

    def test_a_model_pi_does_not_know_is_refused_before_the_prompt(self) -> None:
        rig = Rig([PiPeerTurn("kept")])
        with pytest.raises(errors.ProviderCapabilityError, match="Model not found"):
            rig.turn(model="unknown-model")
        assert "prompt" not in sent_types(rig.peer)
        assert rig.turn()[0].text == "kept"


class TestSpecRefusals:
    def test_an_approval_handler_is_refused_at_open(self) -> None:
        ctx, _ = context(PiRpcPeers([]))
        spec = ConversationSpec(permissions=BYPASS, approvals=lambda r: ApprovalDecision.allow())
        with pytest.raises(errors.ProviderCapabilityError, match="no approval flow"):
            PiRpcTransport(ctx).open(spec)

    @pytest.mark.parametrize(
        "permissions", [NativePermissions.read_only(), NativePermissions.workspace_write()]
    )
    def test_native_permissions_other_than_bypass_are_refused(
        self, permissions: NativePermissions
    ) -> None:
        ctx, executor = context(PiRpcPeers([]))
        spec = ConversationSpec(permissions=permissions, approvals=ApprovalPolicy.DENY)
        with pytest.raises(errors.ProviderCapabilityError, match="bypass"):
            PiRpcTransport(ctx).open(spec)
        assert executor.spawned == []

    def test_mcp_servers_are_refused_at_open_as_a_one_shot_turn_refuses_them(self) -> None:
        ctx, executor = context(PiRpcPeers([]))
        server = StdioMcpServer("notes", "notes-server", env={"TOKEN": "s3cret"})
        spec = ConversationSpec(
            permissions=BYPASS, approvals=ApprovalPolicy.DENY, mcp_servers=(server,)
        )
        with pytest.raises(errors.ProviderCapabilityError, match="does not pass MCP servers to Pi"):
            PiRpcTransport(ctx).open(spec)
        assert executor.spawned == []


class TestInterrupt:
    def test_a_stop_requested_before_the_turn_sends_nothing(self) -> None:
        rig = Rig([PiPeerTurn("kept")])
        stop = TurnStop()
        stop.request()
        with pytest.raises(errors.TurnCancelledError):
            rig.conversation.turn(TurnRequest("go"), RecordingEventHandler(), stop)
        assert rig.executor.spawned == []
        assert rig.turn()[0].text == "kept"

    def test_an_interrupt_before_the_run_starts_is_sent_once_it_does(self) -> None:
        rig = Rig([PiPeerTurn(tool="bash", tool_input=SLEEP, hang=True), PiPeerTurn("next")])
        # SessionStarted comes before the prompt is even written.
        result, _ = turn_stopped_at(rig.conversation, "go", ev.SessionStarted)
        assert result.interrupted
        assert sent_types(rig.peer) == ["get_state", "prompt", "abort"]


class TestSteer:
    def test_a_steer_runs_inside_the_turn_which_ends_once(self) -> None:
        rig = Rig(
            [
                PiPeerTurn("answer", tool="bash", tool_input=SLEEP, until_steered=True),
                PiPeerTurn("next"),
            ]
        )
        result, events = rig.turn_acting_at(
            of(ev.ToolCall), lambda: rig.conversation.steer("also say banana")
        )
        assert result.text == "answer (and: also say banana)"
        assert not result.interrupted
        assert rig.peer.steered == ["also say banana"]
        assert events.lifecycle("steered") == ["also say banana"]
        assert rig.peer.received[2]["type"] == "steer"
        after, after_events = rig.turn()
        assert after.text == "next"
        assert after_events.lifecycle("between_turns") == []

    def test_a_follow_up_is_queued_for_the_end_of_the_turn(self) -> None:
        rig = Rig([PiPeerTurn("answer", tool="bash", tool_input=SLEEP, until_steered=True)])
        result, events = rig.turn_acting_at(
            of(ev.ToolCall), lambda: rig.conversation.follow_up("then say kiwi")
        )
        assert result.text == "answer (and: then say kiwi)"
        assert events.lifecycle("followed_up") == ["then say kiwi"]
        assert rig.peer.received[2]["type"] == "follow_up"

    def test_a_steer_pi_still_holds_when_the_run_ends_is_reported(self) -> None:
        class Late(PiRpcPeer):
            def on_stdin(self, line: str) -> Iterable[PeerOutput]:
                out = list(super().on_stdin(line))
                if json.loads(line)["type"] == "prompt":
                    # The steer arrived as the run ended: Pi keeps it for the next run.
                    late = {"type": "queue_update", "steering": ["too late"], "followUp": []}
                    out.insert(-1, StdoutLine(json.dumps(late) + "\n"))
                return out

        family = PiRpcPeers([PiPeerTurn("done")])
        sid = "01a23046-0000-7000-8000-000000000019"
        conversation = conversation_on(
            "pi", PiRpcTransport, lambda request: Late(family, sid, request.argv)
        )
        events = RecordingEventHandler()
        assert conversation.turn(TurnRequest("go"), events).text == "done"
        assert events.lifecycle("steer_carried_over") == ["too late"]

    def test_a_steer_taken_in_the_run_is_not_reported_as_carried_over(self) -> None:
        rig = Rig([PiPeerTurn("answer", tool="bash", tool_input=SLEEP, until_steered=True)])
        _, events = rig.turn_acting_at(of(ev.ToolCall), lambda: rig.conversation.steer("in time"))
        assert events.lifecycle("steer_carried_over") == []


class TestFailures:
    def test_an_api_error_is_classified_and_keeps_the_process(self) -> None:
        rig = Rig([PiPeerTurn(error=AUTH_ERROR), PiPeerTurn("fine")])
        with pytest.raises(errors.CliExitError) as caught:
            rig.turn()
        assert caught.value.kind is errors.FailureKind.AUTH
        assert "invalid x-api-key" in str(caught.value)
        assert rig.turn()[0].text == "fine"
        assert len(rig.executor.spawned) == 1

    @pytest.mark.parametrize(
        ("error", "kind"),
        [
            ('500 {"type":"error","error":{"type":"api_error"}}', errors.FailureKind.TRANSIENT),
            (
                '529 {"type":"error","error":{"type":"overloaded_error"}}',
                errors.FailureKind.TRANSIENT,
            ),
        ],
    )
    def test_api_failures_keep_their_one_shot_kind(
        self, error: str, kind: errors.FailureKind
    ) -> None:
        rig = Rig([PiPeerTurn(error=error)])
        with pytest.raises(errors.CliExitError) as caught:
            rig.turn()
        assert caught.value.kind is kind

    def test_pis_own_retries_of_a_failed_call_stay_inside_the_turn(self) -> None:
        error = '500 {"type":"error","error":{"type":"api_error"}}'
        rig = Rig([PiPeerTurn(error=error, retries=2), PiPeerTurn("fine")])
        with pytest.raises(errors.CliExitError) as caught:
            rig.turn()
        assert caught.value.kind is errors.FailureKind.TRANSIENT
        after, events = rig.turn()
        assert after.text == "fine"
        assert events.lifecycle("between_turns") == [], "the retries leaked into the next turn"

    def test_resuming_a_session_pi_does_not_have_is_a_resume_error(self) -> None:
        gone = "01a23046-0000-7000-8000-00000000dead"
        rig = Rig([PiPeerTurn("never")], resume=gone, missing=[gone])
        with pytest.raises(errors.SessionResumeError) as caught:
            rig.turn()
        assert caught.value.session_id == gone

    def test_a_process_that_never_answers_get_state_is_killed_and_replaced(self) -> None:
        now = [0.0]

        def clock() -> float:
            now[0] += 30.0  # every look at the clock is half a minute later
            return now[0]

        family = PiRpcPeers([PiPeerTurn("second process")])
        spawns: list[SpawnRequest] = []

        def peers(request: SpawnRequest) -> FakePeer:
            spawns.append(request)
            return SilentPeer() if len(spawns) == 1 else family(request)

        ctx, executor = context(peers, monotonic=clock)
        conversation = PiRpcTransport(ctx).open(
            ConversationSpec(permissions=BYPASS, approvals=ApprovalPolicy.DENY)
        )
        with pytest.raises(errors.CliTimeoutError, match="get_state"):
            conversation.turn(TurnRequest("go"), RecordingEventHandler())
        assert executor.processes[0].returncode is not None, "the silent process was left running"
        assert (
            conversation.turn(TurnRequest("again"), RecordingEventHandler()).text
            == "second process"
        )
        assert len(spawns) == 2

    def test_a_refused_prompt_fails_the_turn_with_pis_reason(self) -> None:
        class Busy(PiRpcPeer):
            def on_stdin(self, line: str) -> Iterable[PeerOutput]:
                frame = json.loads(line)
                if frame["type"] == "prompt":
                    error = "Agent is already processing."
                    response = {
                        "id": frame["id"],
                        "type": "response",
                        "command": "prompt",
                        "success": False,
                        "error": error,
                    }
                    return (StdoutLine(json.dumps(response) + "\n"),)
                return super().on_stdin(line)

        family = PiRpcPeers([])
        conversation = conversation_on(
            "pi",
            PiRpcTransport,
            lambda request: Busy(family, "01a23046-0000-7000-8000-00000000b05e", request.argv),
        )
        with pytest.raises(errors.CliExitError, match="already processing"):
            conversation.turn(TurnRequest("go"), RecordingEventHandler())

    def test_a_process_that_exits_zero_mid_run_is_cli_died(self) -> None:
        class Quits(PiRpcPeer):
            def on_stdin(self, line: str) -> Iterable[PeerOutput]:
                out = list(super().on_stdin(line))
                if json.loads(line)["type"] == "prompt":
                    return [*out[:3], ProcessExited(0)]
                return out

        family = PiRpcPeers([PiPeerTurn("never")])
        sid = "01a23046-0000-7000-8000-000000000017"
        conversation = conversation_on(
            "pi", PiRpcTransport, lambda request: Quits(family, sid, request.argv)
        )
        with pytest.raises(errors.CliDiedError) as caught:
            conversation.turn(TurnRequest("go"), RecordingEventHandler())
        assert caught.value.session_id == sid
        assert conversation.session_id == sid


class TestFork:
    def test_a_fork_starts_with_fork_then_continues_the_new_session(self) -> None:
        base = "01a23046-0000-7000-8000-0000000000ba"
        rig = Rig([PiPeerTurn("forked"), PiPeerTurn("again")], resume=base, fork=True)
        first, events = rig.turn()
        assert first.session_id == f"{base}-fork"
        assert not first.resumed
        assert events.lifecycle("forked") == [f"{base} -> {base}-fork"]
        argv = list(rig.executor.spawned[0].argv)
        assert argv[argv.index("--fork") + 1] == base
        assert "--session" not in argv
        rig.conversation.close()

    def test_one_shot_pi_forks_with_the_same_flag(self) -> None:
        from agentshim.core.provider import ArgvContext

        argv = PiProvider().build_argv(
            ArgvContext(binary_path="pi", resume_session_id="abc-1", fork_session=True)
        )
        assert argv[-2:] == ["--fork", "abc-1"]


# -- recorded transcripts --------------------------------------------------------------------


def replay(case: str, **peer: Any) -> tuple[PiRpcConversation, PiRecordedPeer]:
    recorded = PiRecordedPeer(FIXTURES / f"{case}.transcript.jsonl", **peer)
    conversation = conversation_on("pi", PiRpcTransport, lambda request: recorded)
    return conversation, recorded


class TestRecordedTranscripts:
    def test_two_turns_as_pi_printed_them(self) -> None:
        conversation, peer = replay("c1_multiturn_commands")
        first_events = RecordingEventHandler()
        first = conversation.turn(TurnRequest("TURN-ONE please"), first_events)
        second = conversation.turn(TurnRequest("TURN-TWO please"), RecordingEventHandler())
        third = conversation.turn(
            TurnRequest("TURN-ONE after the commands"), RecordingEventHandler()
        )
        assert (first.text, second.text, third.text) == ("Reply one.", "Reply two.", "Reply one.")
        sid = "01a23046-29ba-772b-af14-af8ea4a10e4a"
        assert first.session_id == second.session_id == third.session_id == sid
        assert first_events.lifecycle("session_file")[0].endswith(f"_{sid}.jsonl")
        # input 700 uncached + 200 cache read + 100 cache write.
        assert first.usage.tokens.input_tokens == 1000
        assert peer.unmatched == []

    def test_an_abort_during_streamed_text_as_recorded(self) -> None:
        conversation, _ = replay("c2_abort_midtool")
        turn_stopped_at(conversation, "SLOW20 run the slow tool", ev.ToolCall)
        conversation.turn(TurnRequest("TURN-TWO after abort"), RecordingEventHandler())
        result, _ = turn_stopped_at(conversation, "SLOWTEXT stream slowly", ev.AssistantText)
        assert result.interrupted
        assert result.text.startswith("slow text")

    def test_a_steer_and_a_follow_up_run_inside_one_turn_as_recorded(self) -> None:
        conversation, peer = replay("c3_steer_followup", folded={"p-bad", "s1"})
        holder: list[PiRpcConversation] = [conversation]
        sent: list[str] = []

        def steer_on_tool(event: ev.AgentEvent) -> None:
            if isinstance(event, ev.ToolCall) and not sent:
                sent.append("steer")
                holder[0].steer("STEER-MSG also say banana")
                holder[0].follow_up("FOLLOW-UP afterwards say kiwi")

        events = RecordingEventHandler()

        def both(event: ev.AgentEvent) -> None:
            events(event)
            steer_on_tool(event)

        result = conversation.turn(TurnRequest("SLOW5 run the 5s tool"), both)
        assert result.text == "Handled the follow-up."
        assert not result.interrupted
        assert events.lifecycle("steered") == ["STEER-MSG also say banana"]
        assert events.lifecycle("followed_up") == ["FOLLOW-UP afterwards say kiwi"]
        assert [e.text for e in events.of_type(ev.AssistantText)] == [
            "Sleeping 5.",
            "Saw the steering",
            " message.",
            "Handled the foll",
            "ow-up.",
        ]
        assert peer.unmatched == []

    def test_an_auth_failure_as_recorded_is_classified_and_the_process_stays(self) -> None:
        conversation, _ = replay("c4a_session_first")
        first = conversation.turn(TurnRequest("TURN-ONE seed"), RecordingEventHandler())
        assert first.session_id == "01a23046-2a7f-737d-bd27-2e1b51959c9c"
        with pytest.raises(errors.CliExitError) as caught:
            conversation.turn(TurnRequest("AUTHFAIL please"), RecordingEventHandler())
        assert caught.value.kind is errors.FailureKind.AUTH

    def test_sigterm_mid_tool_as_recorded_is_cli_died_keeping_the_conversation(self) -> None:
        conversation, _ = replay("c4a_session_first")
        conversation.turn(TurnRequest("TURN-ONE seed"), RecordingEventHandler())
        with pytest.raises(errors.CliExitError):
            conversation.turn(TurnRequest("AUTHFAIL please"), RecordingEventHandler())
        with pytest.raises(errors.CliDiedError) as caught:
            conversation.turn(TurnRequest("SLOW20 then get killed"), RecordingEventHandler())
        assert caught.value.returncode == 143
        assert caught.value.session_id == "01a23046-2a7f-737d-bd27-2e1b51959c9c"

    def test_a_resumed_session_as_recorded(self) -> None:
        recorded = PiRecordedPeer(FIXTURES / "c4b_resume_session.transcript.jsonl")
        sid = "01a23046-2a7f-737d-bd27-2e1b51959c9c"
        conversation = conversation_on("pi", PiRpcTransport, lambda request: recorded, resume=sid)
        result = conversation.turn(TurnRequest("TURN-TWO after resume"), RecordingEventHandler())
        assert result.text == "Reply two."
        assert result.resumed
        assert result.session_id == sid

    def test_an_extensions_dialog_is_dismissed_as_recorded(self) -> None:
        conversation, peer = replay("c7_extension_confirm_gate")
        events = RecordingEventHandler()
        result = conversation.turn(TurnRequest("ECHO allow this one"), events)
        assert result.text == "Tool finished."
        answers = [f for f in peer.received if f["type"] == "extension_ui_response"]
        assert answers == [
            {
                "type": "extension_ui_response",
                "id": "3cefaa3d-f876-46d4-baf5-a559cbe5efd0",
                "cancelled": True,
            }
        ]
        assert events.lifecycle("extension_dialog_cancelled") == ["confirm: Approve bash?"]


def _recorded_frames(case: str) -> list[Mapping[str, Any]]:
    frames: list[Mapping[str, Any]] = []
    text = ""
    for raw in (FIXTURES / f"{case}.transcript.jsonl").read_text().splitlines():
        record = json.loads(raw)
        if record["dir"] == "out":
            text += record["data"]
    frames.extend(json.loads(line) for line in text.splitlines() if line)
    return frames


class TestRecordedFrameTypes:
    @pytest.mark.parametrize(
        "case", sorted(p.name.split(".")[0] for p in FIXTURES.glob("*.transcript.jsonl"))
    )
    def test_every_recorded_frame_is_understood(self, case: str) -> None:
        """Every type Pi printed is read by the transport or the parser, never "unknown"."""
        from agentshim.providers.pi.parser import PiStreamParser

        events = RecordingEventHandler()
        parser = PiStreamParser(events)
        for frame in _recorded_frames(case):
            kind = frame.get("type")
            if kind == "response":
                assert read_response(frame).command != "?"
            elif kind != "extension_ui_request":
                parser.dispatch(frame, json.dumps(frame))
        unknown = [
            e.kind for e in events.of_type(ev.Lifecycle) if e.kind.startswith("unknown_frame")
        ]
        malformed = events.lifecycle("malformed_frame")
        assert unknown == []
        assert malformed == []

    def test_responses_without_an_id_are_matched_by_command(self) -> None:
        responses = [
            read_response(f)
            for f in _recorded_frames("c1_multiturn_commands")
            if f["type"] == "response"
        ]
        without_id = {r.command for r in responses if r.command_id is None}
        assert without_id == {"no_such_command", "parse"}


@given(st.text(min_size=1).filter(lambda t: t.strip() != ""))
def test_any_steered_text_reaches_pi_unchanged(text: str) -> None:
    rig = Rig([PiPeerTurn("answer", tool="bash", tool_input=SLEEP, until_steered=True)])
    steered = threading.Event()

    def steer_on_tool(event: ev.AgentEvent) -> None:
        if isinstance(event, ev.ToolCall) and not steered.is_set():
            steered.set()
            rig.conversation.steer(text)

    rig.conversation.turn(TurnRequest("go"), steer_on_tool)
    assert rig.peer.steered == [text]


# -- the contracts ---------------------------------------------------------------------------
