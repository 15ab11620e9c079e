"""The ACP transport, against fake ACP agents with Gemini CLI's quirks and others'."""

from __future__ import annotations

import json
import signal
import threading
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from agentshim import Agent
from agentshim.acp.client import AcpTransport
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import (
    ApprovalRequiredError,
    CliDiedError,
    CliExitError,
    CliTimeoutError,
    FailureKind,
    InvalidRequestError,
    ProviderCapabilityError,
    TurnStalledError,
)
from agentshim.core.events import (
    ApprovalAnswered,
    ApprovalRequested,
    AssistantText,
    CommandsAvailable,
    ToolCall,
    ToolResult,
    TurnInterrupted,
    UsageReport,
)
from agentshim.core.mcp import HttpMcpServer, StdioMcpServer
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.session_policy import Continuity
from agentshim.core.turn import TurnRequest
from agentshim.execution.process import ProcessExited, SpawnRequest, StderrLine, StdoutLine
from agentshim.providers.gemini.acp import GEMINI_ACP
from agentshim.testing import FakeClock, FakeExecutor
from agentshim.testing.acp import GEMINI_QUIRKS, AcpPeer, AcpPeers, AcpPeerTurn, AcpQuirks
from agentshim.testing.process import FakePeer, SilentPeer
from agentshim.testing.recording import RecordingEventHandler
from tests.unit.session.helpers import stream_agent

from .rigs import Rig as AcpRig
from .rigs import methods, transport_on

BYPASS = NativePermissions.bypass()
WRITE = NativePermissions.workspace_write()


def make_transport(
    peers: Callable[[SpawnRequest], FakePeer], **options: Any
) -> tuple[AcpTransport, FakeExecutor]:
    return transport_on("gemini", GEMINI_ACP, peers, **options)


class Rig(AcpRig):
    """Gemini's ACP transport on a scripted fake agent; its backoff sleeps are recorded."""

    def __init__(
        self,
        turns: Iterable[AcpPeerTurn],
        *,
        quirks: AcpQuirks = GEMINI_QUIRKS,
        transport_options: dict[str, Any] | None = None,
        **options: Any,
    ) -> None:
        self.waits = FakeClock()
        transport = {"waits": self.waits, **(transport_options or {})}
        super().__init__(
            "gemini", GEMINI_ACP, quirks, turns, transport_options=transport, **options
        )


class TestTurnsOnOneProcess:
    @pytest.mark.parametrize(
        ("permissions", "mode"),
        [
            (NativePermissions.read_only(), "plan"),
            (NativePermissions.workspace_write(), "auto_edit"),
        ],
    )
    def test_permissions_choose_the_approval_mode(
        self, permissions: NativePermissions, mode: str
    ) -> None:
        rig = Rig([AcpPeerTurn("ok")], permissions=permissions)
        rig.turn()
        argv = list(rig.executor.spawned[0].argv)
        assert argv[argv.index("--approval-mode") + 1] == mode

    def test_initialize_advertises_no_fs_and_no_terminal(self) -> None:
        rig = Rig([AcpPeerTurn("ok")])
        rig.turn()
        capabilities = rig.peer.client_capabilities
        assert capabilities is not None
        assert capabilities["terminal"] is False
        assert not any(capabilities["fs"].values())
        assert rig.peer.received[0]["params"]["protocolVersion"] == 1

    def test_session_new_carries_the_cwd_and_mcp_servers(self) -> None:
        servers = [
            StdioMcpServer("local", "/usr/bin/tool", args=("-v",), env={"K": "V"}),
            HttpMcpServer("remote", "http://127.0.0.1:9/mcp", headers={"A": "B"}),
        ]
        rig = Rig([AcpPeerTurn("ok")], mcp_servers=servers)
        rig.turn()
        params = rig.peer.received[1]["params"]
        assert params["cwd"] == "/work"
        assert params["mcpServers"] == [
            {
                "name": "local",
                "command": "/usr/bin/tool",
                "args": ["-v"],
                "env": [{"name": "K", "value": "V"}],
            },
            {
                "type": "http",
                "name": "remote",
                "url": "http://127.0.0.1:9/mcp",
                "headers": [{"name": "A", "value": "B"}],
            },
        ]

    def test_chunks_stream_as_deltas_and_join_into_the_answer(self) -> None:
        rig = Rig([AcpPeerTurn("Hello from the scripted model.", chunks=3)])
        result, events = rig.turn()
        deltas = events.of_type(AssistantText)
        assert len(deltas) == 3
        assert all(d.delta for d in deltas)
        assert "".join(d.text for d in deltas) == result.text == "Hello from the scripted model."

    def test_usage_is_the_turns_quota(self) -> None:
        rig = Rig([AcpPeerTurn("a", input_tokens=2400, output_tokens=35)])
        result, events = rig.turn()
        assert result.usage.tokens.input_tokens == 2400
        assert result.usage.tokens.output_tokens == 35
        assert result.usage.model == "gemini-3.8-flash"
        assert [r.usage for r in events.of_type(UsageReport)] == [result.usage]

    def test_a_mode_update_in_the_text_stream_is_a_notice_not_the_answer(self) -> None:
        quirks = AcpQuirks(announces_permissioned_calls=False, notice="[MODE_UPDATE] yolo")
        rig = Rig([AcpPeerTurn("answer")], quirks=quirks)
        result, events = rig.turn()
        assert result.text == "answer"
        assert events.lifecycle("agent_notice") == ["[MODE_UPDATE] yolo"]

    def test_updates_before_session_new_answers_are_kept_not_lost(self) -> None:
        quirks = AcpQuirks(updates_before_session_id=True)
        rig = Rig([AcpPeerTurn("ok")], quirks=quirks)
        result, events = rig.turn()
        assert result.text == "ok"
        assert len(events.of_type(CommandsAvailable)) == 2

    def test_a_tool_call_and_its_update_become_call_and_result(self) -> None:
        rig = Rig([AcpPeerTurn("Done.", tool="echo hello")])
        _, events = rig.turn()
        (call,) = events.of_type(ToolCall)
        (result,) = events.of_type(ToolResult)
        assert call.tool == "echo hello"
        assert call.args == "echo hello"
        assert call.kind.value == "command"
        assert (result.tool_id, result.stdout, result.exit_code) == (
            call.tool_id,
            "ran echo hello",
            0,
        )

    def test_a_model_the_agent_does_not_offer_is_refused(self) -> None:
        rig = Rig([AcpPeerTurn("never")])
        with pytest.raises(InvalidRequestError, match="offers the models"):
            rig.turn(model="other")
        # Whether it has one is known only from its answer: nothing was prompted.
        assert "session/prompt" not in methods(rig.peer)


class TestApprovals:
    def test_gemini_announces_a_permissioned_call_only_by_its_request(self) -> None:
        seen: list[ApprovalRequest] = []

        def allow(request: ApprovalRequest) -> ApprovalDecision:
            seen.append(request)
            return ApprovalDecision.allow()

        rig = Rig(
            [AcpPeerTurn("Done.", tool="touch x.txt", ask=True)], permissions=WRITE, approvals=allow
        )
        result, events = rig.turn()
        assert result.text == "Done."
        (call,) = events.of_type(ToolCall)
        assert call.tool == "touch x.txt"
        assert seen[0].tool == "touch x.txt"
        assert seen[0].tool_id == call.tool_id
        assert rig.peer.answers == [
            {"outcome": {"outcome": "selected", "optionId": "proceed_once"}}
        ]
        assert events.of_type(ApprovalAnswered)[0].allowed
        assert events.of_type(ToolResult)[0].stdout == "ran touch x.txt"

    def test_a_deny_selects_the_reject_option(self) -> None:
        rig = Rig([AcpPeerTurn("x", tool="touch x.txt", ask=True)], permissions=WRITE)
        result, events = rig.turn()
        assert rig.peer.answers == [{"outcome": {"outcome": "selected", "optionId": "cancel"}}]
        assert result.text == "denied"
        answered = events.of_type(ApprovalAnswered)[0]
        assert (answered.allowed, answered.decided_by) == (False, "policy")

    def test_an_agent_that_announces_calls_gets_one_tool_call_event(self) -> None:
        rig = Rig(
            [AcpPeerTurn("x", tool="touch x.txt", ask=True)],
            quirks=AcpQuirks(),
            permissions=WRITE,
            approvals=lambda _: ApprovalDecision.allow(),
        )
        _, events = rig.turn()
        assert len(events.of_type(ToolCall)) == 1
        assert len(events.of_type(ApprovalRequested)) == 1

    def test_a_handler_that_raises_denies(self) -> None:
        def broken(_: ApprovalRequest) -> ApprovalDecision:
            raise RuntimeError("boom")

        rig = Rig([AcpPeerTurn("x", tool="t", ask=True)], permissions=WRITE, approvals=broken)
        _, events = rig.turn()
        assert events.of_type(ApprovalAnswered)[0].decided_by == "handler_error"
        assert rig.peer.answers[0]["outcome"]["optionId"] == "cancel"

    def test_rewritten_arguments_cannot_be_carried_so_the_call_is_denied(self) -> None:
        rig = Rig(
            [AcpPeerTurn("x", tool="t", ask=True, raw_input={"command": "rm -rf /"})],
            quirks=AcpQuirks(),
            permissions=WRITE,
            approvals=lambda _: ApprovalDecision.allow(args={"command": "ls"}),
        )
        _, events = rig.turn()
        answered = events.of_type(ApprovalAnswered)[0]
        assert not answered.allowed
        assert "rewritten" in answered.message
        assert rig.peer.answers[0]["outcome"]["optionId"] == "cancel"

    def test_read_only_denies_without_asking_the_handler(self) -> None:
        asked: list[ApprovalRequest] = []
        rig = Rig(
            [AcpPeerTurn("x", tool="t", ask=True)],
            permissions=NativePermissions.read_only(),
            approvals=lambda r: asked.append(r) or ApprovalDecision.allow(),
        )
        _, events = rig.turn()
        assert asked == []
        assert events.of_type(ApprovalAnswered)[0].decided_by == "read_only"

    def test_fail_turn_answers_and_fails_the_turn(self) -> None:
        rig = Rig(
            [AcpPeerTurn("x", tool="t", ask=True)],
            quirks=AcpQuirks(),
            permissions=WRITE,
            approvals=ApprovalPolicy.FAIL_TURN,
        )
        with pytest.raises(ApprovalRequiredError):
            rig.turn()
        assert rig.peer.answers[0]["outcome"]["optionId"] == "cancel"

    def test_a_cancel_during_the_handler_answers_cancelled_so_gemini_ends_the_prompt(self) -> None:
        rig: Rig

        def interrupt_then_allow(_: ApprovalRequest) -> ApprovalDecision:
            rig.conversation.interrupt()
            return ApprovalDecision.allow()

        # An unanswered cancel would wait out a ten-minute grace: the turn's minute ends it first.
        rig = Rig(
            [AcpPeerTurn("never", tool="sleep 30", ask=True), AcpPeerTurn("after")],
            permissions=WRITE,
            approvals=interrupt_then_allow,
            transport_options={"interrupt_grace": 600},
        )
        result, events = rig.turn(timeout=60)
        assert result.interrupted
        assert methods(rig.peer)[-2:] == ["session/cancel", "answer"]
        assert rig.peer.answers == [{"outcome": {"outcome": "cancelled"}}]
        assert events.of_type(ApprovalAnswered)[0].decided_by == "interrupted"
        assert events.of_type(TurnInterrupted)
        assert rig.turn()[0].text == "after"
        assert len(rig.executor.spawned) == 1, "the cancelled turn's process was killed"


def interrupted_at_its_tool_call(rig: Rig) -> tuple[Any, RecordingEventHandler]:
    """A turn interrupted once the agent reported its tool call (the command is running)."""
    events = RecordingEventHandler()

    def interrupt_at_call(event: Any) -> None:
        events(event)
        if isinstance(event, ToolCall):
            rig.conversation.interrupt()

    return rig.conversation.turn(TurnRequest("go"), interrupt_at_call), events


class TestInterrupt:
    def test_interrupt_cancels_in_band_and_keeps_the_process(self) -> None:
        rig = Rig([AcpPeerTurn("never", tool="sleep 30", hang=True), AcpPeerTurn("next")])
        result, events = interrupted_at_its_tool_call(rig)
        assert result.interrupted
        assert events.of_type(TurnInterrupted)
        # Gemini reports the stopped command as completed.
        assert [r.stdout for r in events.of_type(ToolResult)] == ["Command cancelled by user."]
        assert rig.turn()[0].text == "next"
        assert len(rig.executor.spawned) == 1

    def test_a_call_the_cancel_left_without_an_end_still_gets_a_result(self) -> None:
        quirks = AcpQuirks(reports_cancelled_calls=False)
        rig = Rig([AcpPeerTurn("never", tool="sleep 30", hang=True)], quirks=quirks)
        _, events = interrupted_at_its_tool_call(rig)
        (result,) = events.of_type(ToolResult)
        assert result.stderr == "cancelled with the turn"

    def test_a_stall_cancels_and_raises(self) -> None:
        rig = Rig([AcpPeerTurn("never", hang=True)], stall_timeout=0.3)
        with pytest.raises(TurnStalledError):
            rig.turn()
        assert "session/cancel" in methods(rig.peer)


class TestFailures:
    @pytest.mark.parametrize(
        ("code", "message", "kind"),
        [
            (
                500,
                '{"error":{"code":500,"message":"scripted 500 boom","status":"INTERNAL"}}',
                FailureKind.TRANSIENT,
            ),
            (
                401,
                '{"error":{"code":401,"message":"bad key scripted","status":"UNAUTHENTICATED"}}',
                FailureKind.AUTH,
            ),
            (
                400,
                '{"error":{"code":400,"message":"The input token count (1200000) exceeds the maximum number of tokens allowed (1048576).","status":"INVALID_ARGUMENT"}}',
                FailureKind.CONTEXT_OVERFLOW,
            ),
            (429, '{"error":{"code":429,"message":"slow down"}}', FailureKind.TRANSIENT),
        ],
    )
    def test_a_json_rpc_error_is_classified_by_its_http_code(
        self, code: int, message: str, kind: FailureKind
    ) -> None:
        rig = Rig([AcpPeerTurn(error=(code, message)), AcpPeerTurn("after")])
        with pytest.raises(CliExitError) as caught:
            rig.turn()
        assert caught.value.kind is kind
        # The session survives a failed prompt.
        assert rig.turn()[0].text == "after"

    def test_process_death_keeps_the_session_and_the_next_turn_loads_it(self) -> None:
        rig = Rig([AcpPeerTurn("one"), AcpPeerTurn("x", tool="t", die=-9), AcpPeerTurn("three")])
        first, _ = rig.turn()
        with pytest.raises(CliDiedError) as caught:
            rig.turn()
        assert caught.value.session_id == first.session_id
        third, events = rig.turn()
        assert third.text == "three"
        assert third.resumed
        assert len(rig.executor.spawned) == 2
        assert methods(rig.peer)[:3] == ["initialize", "session/load", "session/prompt"]
        assert rig.peer.received[1]["params"]["sessionId"] == first.session_id
        # Its history was replayed, and none of it reached this turn.
        assert events.lifecycle("replay_suppressed")
        assert [e.text for e in events.of_type(AssistantText)] == ["three"]

    def test_a_load_in_the_minute_the_session_was_made_waits_for_the_next(self) -> None:
        now = [600.0 + 10.0]
        rig = Rig(
            [AcpPeerTurn("one"), AcpPeerTurn("x", tool="t", die=1), AcpPeerTurn("three")],
            transport_options={"wall_clock": lambda: now[0]},
        )
        rig.turn()
        with pytest.raises(CliDiedError):
            rig.turn()
        _, events = rig.turn()
        assert rig.waits.waits == [pytest.approx(51.0)]
        assert events.lifecycle("load_deferred")

    def test_an_agent_request_we_do_not_offer_is_refused_and_fails_the_turn(self) -> None:
        class AsksToRead(AcpPeer):
            def on_stdin(self, line: str) -> Iterable[Any]:
                out = list(super().on_stdin(line))
                if '"session/prompt"' in line:
                    read = '{"jsonrpc":"2.0","id":0,"method":"fs/read_text_file","params":{}}\n'
                    out.insert(0, StdoutLine(read))
                return out

        peers = AcpPeers([AcpPeerTurn("ok")])
        started: list[AsksToRead] = []

        def spawn(request: SpawnRequest) -> AsksToRead:
            started.append(AsksToRead(peers, request.argv))
            return started[-1]

        transport, _ = make_transport(spawn)
        spec = ConversationSpec(permissions=BYPASS, approvals=ApprovalPolicy.DENY)
        with pytest.raises(ProviderCapabilityError, match=r"fs/read_text_file.*read_files=True"):
            transport.open(spec).turn(TurnRequest("go"), RecordingEventHandler())
        (refusal,) = [f for f in started[0].received if "method" not in f]
        assert refusal["id"] == 0
        assert refusal["error"]["code"] == -32601

    def test_close_ends_an_agent_that_ignores_stdin_eof(self) -> None:
        quirks = AcpQuirks(exits_on_stdin_eof=False)
        rig = Rig([AcpPeerTurn("ok")], quirks=quirks, transport_options={"close_grace": 0.2})
        rig.turn()
        rig.conversation.close()
        process = rig.executor.processes[-1]
        # Stdin's end came first; left unanswered, it was followed by SIGTERM, which ended it.
        assert process.stdin_closed
        assert process.returncode == -signal.SIGTERM
        assert (process.terminate_calls, process.kill_calls) == (1, 0)


class _DiesAtStart(FakePeer):
    def on_start(self) -> Iterable[Any]:
        return [StderrLine("Error: 401 Unauthorized: API key not valid\n"), ProcessExited(41)]


class _RefusesInitialize(FakePeer):
    def on_stdin(self, line: str) -> Iterable[Any]:
        request_id = json.loads(line)["id"]
        error = {"code": -32000, "message": "Authentication required"}
        return [StdoutLine(json.dumps({"jsonrpc": "2.0", "id": request_id, "error": error}) + "\n")]


class TestStartFailures:
    def test_a_cli_that_dies_at_start_fails_the_turn_with_its_stderr_classified(self) -> None:
        transport, executor = make_transport(lambda _: _DiesAtStart())
        conversation = transport.open(
            ConversationSpec(permissions=BYPASS, approvals=ApprovalPolicy.DENY)
        )
        with pytest.raises(CliExitError) as caught:
            conversation.turn(TurnRequest("go"), RecordingEventHandler())
        assert caught.value.kind is FailureKind.AUTH
        assert caught.value.returncode == 41
        assert "API key not valid" in caught.value.stderr
        assert len(executor.spawned) == 1

    def test_an_initialize_error_fails_the_turn_and_closes_the_process(self) -> None:
        transport, executor = make_transport(lambda _: _RefusesInitialize())
        conversation = transport.open(
            ConversationSpec(permissions=BYPASS, approvals=ApprovalPolicy.DENY)
        )
        with pytest.raises(CliExitError, match="Authentication required") as caught:
            conversation.turn(TurnRequest("go"), RecordingEventHandler())
        assert caught.value.kind is FailureKind.AUTH
        assert executor.processes[0].stdin_closed

    def test_a_silent_start_times_out(self) -> None:
        transport, _ = make_transport(lambda _: SilentPeer(), start_timeout=0.3, close_grace=0.2)
        conversation = transport.open(
            ConversationSpec(permissions=BYPASS, approvals=ApprovalPolicy.DENY)
        )
        with pytest.raises(CliTimeoutError, match="did not answer initialize"):
            conversation.turn(TurnRequest("go"), RecordingEventHandler())


class TestRefusals:
    def test_fork_is_refused_when_the_agent_does_not_offer_it(self) -> None:
        transport, _ = make_transport(AcpPeers([]), close_grace=0.2)
        spec = ConversationSpec(
            permissions=BYPASS,
            approvals=ApprovalPolicy.DENY,
            resume_session_id="c0de0000-0000-4000-8000-000000000001",
            fork=True,
        )
        conversation = transport.open(spec)
        with pytest.raises(ProviderCapabilityError, match="session/fork"):
            conversation.turn(TurnRequest("go"), RecordingEventHandler())
        conversation.close()


def gemini_agent(peers: AcpPeers) -> tuple[Agent, FakeExecutor]:
    return stream_agent("gemini", peers)


class TestGeminiStreamSessions:
    def test_agent_gemini_stream_runs_every_turn_on_one_acp_process(self) -> None:
        agent, executor = gemini_agent(AcpPeers([AcpPeerTurn("a"), AcpPeerTurn("b")]))
        with agent.start_session() as session:
            first = session.turn("one")
            second = session.turn("two")
        assert (first.result.text, second.result.text) == ("a", "b")
        assert second.continuity is Continuity.CONTINUED
        assert len(executor.spawned) == 1
        assert executor.spawned[0].argv[1] == "--acp"
        assert executor.processes[0].stdin_closed, "closing the session ends the process"

    def test_steer_raises_provider_capability_error(self) -> None:
        agent, _ = gemini_agent(AcpPeers([AcpPeerTurn("x", hang=True)]))
        with agent.start_session() as session:
            results: list[Any] = []
            thinking = threading.Event()

            def think() -> None:
                def on_event(event: Any) -> None:
                    if isinstance(event, AssistantText):
                        thinking.set()

                results.append(session.turn("think", on_event=on_event))

            worker = threading.Thread(target=think)
            worker.start()
            assert thinking.wait(60), "the turn never started"
            with pytest.raises(ProviderCapabilityError):
                session.steer("more")
            session.interrupt()
            worker.join(60)
            assert not worker.is_alive()
        assert results[0].result.interrupted

    def test_a_released_session_reopens_by_id_after_the_minute_of_its_creation(self) -> None:
        peers = AcpPeers([AcpPeerTurn("a"), AcpPeerTurn("b")])
        transport, executor = make_transport(peers, wall_clock=lambda: 610.0, waits=FakeClock())
        agent = Agent(transport, permissions=BYPASS, approvals=ApprovalPolicy.DENY)
        with agent.start_session() as session:
            first = session.turn("one").result
            session.release()
            second = session.turn("two").result
        assert second.session_id == first.session_id
        assert second.resumed
        assert (
            next(m for m in methods(peers.peers[1]) if m.startswith("session/")) == "session/load"
        )
        assert len(executor.spawned) == 2
