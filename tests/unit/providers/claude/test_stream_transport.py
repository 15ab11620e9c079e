"""The Claude Code stream transport, against fake stream-json processes and recorded ones."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import pytest

from agentshim.core import errors
from agentshim.core import events as ev
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.execution.process import ProcessExited, SpawnRequest, StdoutLine
from agentshim.providers.claude.provider import ClaudeProvider
from agentshim.providers.claude.stream_transport import (
    ClaudeStreamConversation,
    ClaudeStreamTransport,
)
from agentshim.testing.claude_stream import (
    ClaudePeerTurn,
    ClaudeRecordedPeer,
    ClaudeStreamPeer,
    ClaudeStreamPeers,
)
from agentshim.testing.process import FakePeer, PeerOutput
from agentshim.testing.recording import RecordingEventHandler
from tests.unit.long_lived_rig import ClaudeStreamRig as Rig
from tests.unit.long_lived_rig import claude_frames as sent_types
from tests.unit.long_lived_rig import conversation_on, lifecycle

FIXTURES = Path(__file__).parents[3] / "fixtures" / "claude" / "stream"
BYPASS = NativePermissions.bypass()
WRITE = NativePermissions.workspace_write()
SLEEP = {"command": "sleep 30"}
TOUCH = {"command": "touch x.txt"}


class TestTurnsOnOneProcess:
    def test_argv_is_stream_json_both_ways_and_never_holds_the_prompt(self) -> None:
        rig = Rig([ClaudePeerTurn("ok")])
        rig.turn("a secret prompt")
        argv = list(rig.executor.spawned[0].argv)
        assert argv[:7] == [
            "/usr/bin/claude",
            "-p",
            "--input-format",
            "stream-json",
            "--output-format",
            "stream-json",
            "--verbose",
        ]
        assert "--dangerously-skip-permissions" in argv
        assert not any("secret" in arg for arg in argv)

    def test_each_turn_reports_its_own_cost_not_the_process_total(self) -> None:
        rig = Rig([ClaudePeerTurn("a", cost_usd=0.25), ClaudePeerTurn("b", cost_usd=0.5)])
        first, _ = rig.turn()
        second, events = rig.turn()
        assert first.usage.total_cost_usd == pytest.approx(0.25)
        assert second.usage.total_cost_usd == pytest.approx(0.5)
        assert second.cost_usd == pytest.approx(0.5)
        reports = events.of_type(ev.UsageReport)
        assert [r.cost_usd for r in reports if r.scope is ev.UsageScope.TURN] == [
            pytest.approx(0.5)
        ]
        # The model call's report comes first, without a cost of its own.
        assert [r.cost_usd for r in reports if r.scope is ev.UsageScope.CALL] == [None]
        assert second.usage.tokens.output_tokens == 20

    def test_a_turn_may_switch_the_model_in_band(self) -> None:
        rig = Rig([ClaudePeerTurn("a"), ClaudePeerTurn("b")])
        rig.turn()
        result, events = rig.turn(model="claude-sonnet-4-5")
        assert result.text == "b"
        assert sent_types(rig.peer) == ["user", "control_request:set_model", "user"]
        assert rig.peer.model == "claude-sonnet-4-5"
        assert events.lifecycle("model_switched") == ["claude-sonnet-4-5"]
        assert len(rig.executor.spawned) == 1

    def test_a_model_the_cli_refuses_fails_the_turn_before_it_is_sent(self) -> None:
        class Refuses(ClaudeStreamPeer):
            def on_stdin(self, line: str) -> Iterable[PeerOutput]:
                frame = json.loads(line)
                if frame.get("type") == "control_request":
                    self.received.append(frame)
                    body = {"subtype": "error", "request_id": frame["request_id"], "error": "no"}
                    return [
                        StdoutLine(
                            json.dumps({"type": "control_response", "response": body}) + "\n"
                        )
                    ]
                return super().on_stdin(line)

        family = ClaudeStreamPeers([ClaudePeerTurn("still here")])
        peers: list[Refuses] = []

        def spawn(request: SpawnRequest) -> Refuses:
            peers.append(Refuses(family, "refuses-1", request.argv))
            return peers[-1]

        conversation = conversation_on("claude", ClaudeStreamTransport, spawn)
        with pytest.raises(errors.TurnFailedError) as caught:
            conversation.turn(TurnRequest("go", model="claude-nope"), RecordingEventHandler())
        assert caught.value.kind is errors.FailureKind.MODEL
        assert sent_types(peers[0]) == ["control_request:set_model"]
        assert conversation.turn(TurnRequest("go"), RecordingEventHandler()).text == "still here"


class TestInterrupt:
    def test_interrupt_mid_stream_returns_interrupted(self) -> None:
        rig = Rig([ClaudePeerTurn(hang=True), ClaudePeerTurn("next")])
        # Claude Code says `init` once it has the prompt; the hanging answer follows it.
        result, events = rig.turn_acting_at(lifecycle("init"), rig.conversation.interrupt)
        assert result.interrupted
        assert result.text == ""
        assert "[Request interrupted by user]" in events.lifecycle("user_message")
        assert rig.turn()[0].text == "next"

    def test_interrupt_while_a_permission_answer_is_pending(self) -> None:
        holder: list[ClaudeStreamConversation] = []

        def interrupt_then_allow(request: ApprovalRequest) -> ApprovalDecision:
            holder[0].interrupt()
            return ApprovalDecision.allow()

        rig = Rig(
            [ClaudePeerTurn(tool="Bash", tool_input=TOUCH, ask=True), ClaudePeerTurn("next")],
            permissions=WRITE,
            approvals=interrupt_then_allow,
        )
        holder.append(rig.conversation)
        result, events = rig.turn()
        assert result.interrupted
        assert events.lifecycle("control_cancel_request")
        assert rig.peer.answers == [], "the CLI acted on an answer to a withdrawn request"
        assert rig.turn()[0].text == "next"


def _init(session_id: str) -> dict[str, Any]:
    return {"type": "system", "subtype": "init", "session_id": session_id, "model": "m"}


class TestApprovals:
    def run(self, approvals: object, **rig: Any) -> tuple[Rig, Any, RecordingEventHandler]:
        built = Rig(
            [ClaudePeerTurn("after the tool", tool="Bash", tool_input=TOUCH, ask=True)],
            permissions=rig.pop("permissions", WRITE),
            approvals=approvals,
            **rig,
        )
        result, events = built.turn()
        return built, result, events

    def test_the_cli_is_asked_on_stdio_in_accept_edits_mode(self) -> None:
        rig, _, _ = self.run(ApprovalPolicy.DENY)
        argv = list(rig.executor.spawned[0].argv)
        assert "--permission-prompt-tool" in argv
        assert argv[argv.index("--permission-prompt-tool") + 1] == "stdio"
        assert argv[argv.index("--permission-mode") + 1] == "acceptEdits"
        assert "--dangerously-skip-permissions" not in argv

    def test_a_handler_allow_runs_the_tool_with_its_own_args(self) -> None:
        seen: list[ApprovalRequest] = []

        def allow(request: ApprovalRequest) -> ApprovalDecision:
            seen.append(request)
            return ApprovalDecision.allow()

        rig, result, events = self.run(allow)
        assert seen[0].tool == "Bash"
        assert dict(seen[0].args) == TOUCH
        assert seen[0].tool_id is not None
        assert rig.peer.answers == [{"behavior": "allow", "updatedInput": TOUCH}]
        assert result.text == "after the tool"
        requested, answered = (
            events.of_type(ev.ApprovalRequested),
            events.of_type(ev.ApprovalAnswered),
        )
        assert requested[0].tool_id == answered[0].tool_id == seen[0].tool_id
        assert answered[0].allowed
        assert answered[0].decided_by == "handler"

    def test_an_allow_may_rewrite_the_args_and_the_cli_runs_the_rewrite(self) -> None:
        rewritten = {"command": "touch y.txt"}
        rig, _, events = self.run(lambda request: ApprovalDecision.allow(rewritten))
        assert rig.peer.answers == [{"behavior": "allow", "updatedInput": rewritten}]
        tool_output = events.of_type(ev.ToolResult)[0].stdout
        assert "touch y.txt" in tool_output
        assert "x.txt" not in tool_output
        assert events.of_type(ev.ApprovalAnswered)[0].args == rewritten

    def test_a_deny_reaches_the_agent_as_the_tools_error(self) -> None:
        rig, result, events = self.run(lambda request: ApprovalDecision.deny("not today"))
        assert rig.peer.answers == [{"behavior": "deny", "message": "not today"}]
        failed = events.of_type(ev.ToolResult)[0]
        assert failed.failed
        assert "not today" in failed.stderr
        assert not result.interrupted

    def test_policy_deny_answers_without_a_handler(self) -> None:
        rig, result, events = self.run(ApprovalPolicy.DENY)
        assert rig.peer.answers[0]["behavior"] == "deny"
        assert events.of_type(ev.ApprovalAnswered)[0].decided_by == "policy"
        assert result.text == "after the tool"

    def test_policy_fail_turn_denies_stops_the_turn_and_keeps_the_conversation(self) -> None:
        rig = Rig(
            [ClaudePeerTurn(tool="Bash", tool_input=TOUCH, ask=True), ClaudePeerTurn("later")],
            permissions=WRITE,
            approvals=ApprovalPolicy.FAIL_TURN,
        )
        with pytest.raises(errors.ApprovalRequiredError) as caught:
            rig.turn()
        assert caught.value.tool == "Bash"
        assert rig.peer.answers[0]["behavior"] == "deny"
        assert rig.turn()[0].text == "later"

    def test_read_only_denies_every_request_without_asking_the_handler(self) -> None:
        asked: list[ApprovalRequest] = []

        def never(request: ApprovalRequest) -> ApprovalDecision:
            asked.append(request)
            return ApprovalDecision.allow()

        rig, _, events = self.run(never, permissions=NativePermissions.read_only())
        assert asked == []
        assert rig.peer.answers[0]["behavior"] == "deny"
        assert events.of_type(ev.ApprovalAnswered)[0].decided_by == "read_only"
        argv = list(rig.executor.spawned[0].argv)
        assert argv[argv.index("--permission-mode") + 1] == "default"


def test_the_handler_runs_on_the_turns_thread() -> None:
    threads: list[int] = []

    def record(request: ApprovalRequest) -> ApprovalDecision:
        threads.append(threading.get_ident())
        return ApprovalDecision.allow()

    Rig(
        [ClaudePeerTurn(tool="Bash", tool_input=TOUCH, ask=True)],
        permissions=WRITE,
        approvals=record,
    ).turn()
    assert threads == [threading.get_ident()]


class TestSteer:
    def test_a_steered_message_is_folded_into_the_running_turn(self) -> None:
        rig = Rig([ClaudePeerTurn("answer", hang=True)])
        steered = threading.Event()

        def steer() -> None:
            rig.conversation.steer("also say banana")
            steered.set()
            rig.conversation.interrupt()

        result, events = rig.turn_acting_at(lifecycle("init"), steer)
        assert steered.is_set()
        assert rig.peer.steered == ["also say banana"]
        assert events.lifecycle("steered") == ["also say banana"]
        assert result.interrupted


class TestFailures:
    def test_an_api_error_result_is_classified_and_keeps_the_process(self) -> None:
        rig = Rig(
            [
                ClaudePeerTurn(
                    error="Invalid API key · Fix external API key", api_error_status=401
                ),
                ClaudePeerTurn("fine"),
            ]
        )
        with pytest.raises(errors.CliExitError) as caught:
            rig.turn()
        assert caught.value.kind is errors.FailureKind.AUTH
        assert rig.turn()[0].text == "fine"
        assert len(rig.executor.spawned) == 1

    def test_a_stalled_turn_reports_the_silence_that_stopped_it(self) -> None:
        # The interrupt's answer comes at once; the error is about the silence before it.
        rig = Rig([ClaudePeerTurn(tool="Bash", tool_input=SLEEP, hang=True)], stall_timeout=0.2)
        with pytest.raises(errors.TurnStalledError) as caught:
            rig.turn()
        assert caught.value.silent_s is not None
        assert caught.value.silent_s >= 0.2
        assert "printed nothing for 0.2 s" in str(caught.value)


class TestBetweenTurns:
    def test_frames_printed_between_turns_never_become_the_next_turns_output(self) -> None:
        class Wakes(ClaudeStreamPeer):
            def on_stdin(self, line: str) -> Iterable[PeerOutput]:
                out = list(super().on_stdin(line))
                if len(self.received) == 1:
                    # A background task wakes a turn of the CLI's own after the result.
                    own = {
                        "type": "assistant",
                        "session_id": self.session_id,
                        "message": {
                            "model": "claude-opus-4-8",
                            "content": [{"type": "text", "text": "BACKGROUND"}],
                        },
                    }
                    done = {
                        "type": "result",
                        "subtype": "success",
                        "is_error": False,
                        "result": "BACKGROUND",
                        "session_id": self.session_id,
                    }
                    out += [StdoutLine(json.dumps(own) + "\n"), StdoutLine(json.dumps(done) + "\n")]
                return out

        family = ClaudeStreamPeers([ClaudePeerTurn("first"), ClaudePeerTurn("second")])
        conversation = conversation_on(
            "claude", ClaudeStreamTransport, lambda request: Wakes(family, "wakes-1", request.argv)
        )
        assert conversation.turn(TurnRequest("1"), RecordingEventHandler()).text == "first"
        events = RecordingEventHandler()
        second = conversation.turn(TurnRequest("2"), events)
        assert second.text == "second"
        assert [e.text for e in events.of_type(ev.AssistantText)] == ["second"]
        between = events.lifecycle("between_turns")
        assert len(between) == 2
        assert "BACKGROUND" in between[0]


def replay(case: str, **spec: Any) -> tuple[ClaudeStreamConversation, ClaudeRecordedPeer]:
    peer = ClaudeRecordedPeer(FIXTURES / f"{case}.transcript.jsonl")
    return conversation_on("claude", ClaudeStreamTransport, lambda request: peer, **spec), peer


class TestRecordedTranscripts:
    def test_two_turns_as_claude_code_printed_them(self) -> None:
        conversation, peer = replay("a1_two_turns")
        first = conversation.turn(TurnRequest("TURN-ONE please"), RecordingEventHandler())
        events = RecordingEventHandler()
        second = conversation.turn(TurnRequest("TURN-TWO please"), events)
        assert (first.text, second.text) == ("Reply one.", "Reply two.")
        assert first.session_id == second.session_id == "3551485d-6518-4592-829f-6f99b447d975"
        # Cumulative 0.014975 after the second turn: its own share is the difference.
        assert first.usage.total_cost_usd == pytest.approx(0.005475)
        assert second.usage.total_cost_usd == pytest.approx(0.0095)
        assert second.usage.tokens.input_tokens == 2000
        assert peer.unmatched == []

    def test_permission_allow_with_rewrite_then_deny_as_recorded(self) -> None:
        answers = iter(
            [
                ApprovalDecision.allow({"command": "touch perm-allowed-MODIFIED.txt"}),
                ApprovalDecision.deny("tp denies this command"),
            ]
        )
        conversation, peer = replay(
            "a4_permissions", permissions=WRITE, approvals=lambda request: next(answers)
        )
        events = RecordingEventHandler()
        first = conversation.turn(TurnRequest("PERM-A"), events)
        second = conversation.turn(TurnRequest("PERM-D"), events)
        assert first.text == second.text == "Tool finished."
        answered = events.of_type(ev.ApprovalAnswered)
        assert [a.allowed for a in answered] == [True, False]
        assert [r.tool for r in events.of_type(ev.ApprovalRequested)] == ["Bash", "Bash"]
        assert events.lifecycle("permission_denied") == ["Bash"]
        assert peer.unmatched == []

    def test_an_interrupt_while_a_permission_request_is_pending_as_recorded(self) -> None:
        holder: list[ClaudeStreamConversation] = []

        def interrupt(request: ApprovalRequest) -> ApprovalDecision:
            holder[0].interrupt()
            return ApprovalDecision.allow()

        conversation, _ = replay(
            "a9_interrupt_while_can_use_tool_pending", permissions=WRITE, approvals=interrupt
        )
        holder.append(conversation)
        events = RecordingEventHandler()
        result = conversation.turn(TurnRequest("PERM-A run touch"), events)
        assert result.interrupted
        assert events.lifecycle("control_cancel_request")
        assert (
            conversation.turn(TurnRequest("TURN-TWO next"), RecordingEventHandler()).text
            == "Tool finished."
        )

    def test_an_api_error_turn_as_recorded(self) -> None:
        conversation, _ = replay("a8_authfail_malformed_sdkshape")
        with pytest.raises(errors.CliExitError) as caught:
            conversation.turn(TurnRequest("AUTHFAIL please fail"), RecordingEventHandler())
        assert caught.value.kind is errors.FailureKind.AUTH

    def test_sigkill_mid_tool_as_recorded_is_cli_died_keeping_the_conversation(self) -> None:
        recorded = {frame.get("session_id") for frame in _turn_frames("a7b_sigkill_midturn")}
        conversation, _ = replay("a7b_sigkill_midturn")
        with pytest.raises(errors.CliDiedError) as caught:
            conversation.turn(
                TurnRequest("SLOW20 run the slow tool again"), RecordingEventHandler()
            )
        assert caught.value.returncode == -9
        assert caught.value.session_id == conversation.session_id
        assert recorded == {conversation.session_id}


def _turn_frames(case: str) -> Sequence[Mapping[str, Any]]:
    frames: list[Mapping[str, Any]] = []
    for raw in (FIXTURES / f"{case}.transcript.jsonl").read_text().splitlines():
        record = json.loads(raw)
        if record["dir"] == "out":
            frames.extend(json.loads(line) for line in record["data"].splitlines())
    return frames


class TestRecordedFrameTypes:
    @pytest.mark.parametrize(
        "case", sorted(p.name.split(".")[0] for p in FIXTURES.glob("*.transcript.jsonl"))
    )
    def test_every_recorded_frame_is_understood(self, case: str) -> None:
        """What the transport does not handle itself, the parser reads without a complaint."""
        control = {"control_request", "control_response", "control_cancel_request"}
        events: list[ev.AgentEvent] = []
        parser = ClaudeProvider().new_parser(events.append, expect_structured=False)
        frames = _turn_frames(case)
        assert frames
        for frame in frames:
            if frame.get("type") not in control:
                parser.dispatch(dict(frame), json.dumps(frame))
        complaints = [
            event
            for event in events
            if isinstance(event, (ev.Lifecycle, ev.RawOutput))
            and (
                isinstance(event, ev.RawOutput)
                or event.kind.startswith("unknown_")
                or event.kind == "malformed_frame"
            )
        ]
        assert complaints == []


class TestProcessExitShapes:
    def test_a_process_that_exits_zero_before_the_result_is_cli_died(self) -> None:
        class Quits(FakePeer):
            def on_stdin(self, line: str) -> Iterable[PeerOutput]:
                return (StdoutLine(json.dumps(_init("quits-1")) + "\n"), ProcessExited(0))

        conversation = conversation_on("claude", ClaudeStreamTransport, lambda request: Quits())
        with pytest.raises(errors.CliDiedError) as caught:
            conversation.turn(TurnRequest("go"), RecordingEventHandler())
        assert caught.value.session_id == "quits-1"
        assert conversation.session_id == "quits-1"
