"""opencode's ACP dialect, on recorded ``opencode acp`` sessions and on the fake agent."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Sequence
from functools import partial
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim import Agent
from agentshim.acp.client import AcpTransport
from agentshim.acp.dialect import AcpArgv
from agentshim.acp.jsonrpc import Notification, Response, RpcError
from agentshim.acp.updates import UpdateReader
from agentshim.core import errors
from agentshim.core import events as ev
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import TransportKind
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.providers.opencode.acp import (
    OPENCODE_ACP,
    acp_argv,
    acp_env,
    classify_rpc_error,
    permission_rules,
    session_lost,
    usage,
)
from agentshim.testing import FakeExecutor
from agentshim.testing.acp import OPENCODE_QUIRKS, AcpPeers, AcpPeerTurn
from agentshim.testing.recording import RecordingEventHandler
from tests.unit.acp.rigs import (
    RecordedMainSession,
    Rig,
    methods,
    recorded_messages,
    turn_after_load,
)
from tests.unit.long_lived_rig import TransportRig

P = "opencode"
MAIN_SESSION = "ses_dcfb717f2ffeDOHbTbkvtpW974"
HELLO = "Hello from the scripted model."
WRITE = NativePermissions.workspace_write()


def rig(turns: Sequence[AcpPeerTurn], **options: Any) -> Rig:
    return Rig(P, OPENCODE_ACP, OPENCODE_QUIRKS, turns, **options)


class PromptedPeers(AcpPeers):
    """opencode's fake, saying when a prompt reached it (its silent turns show no event)."""

    def __init__(self, turns: Sequence[AcpPeerTurn]) -> None:
        super().__init__(turns, quirks=OPENCODE_QUIRKS)
        self.prompted = threading.Event()

    def turn_for(self, prompt: str) -> AcpPeerTurn | None:
        turn = super().turn_for(prompt)
        self.prompted.set()
        return turn


def args(permissions: NativePermissions, model: str | None = None) -> AcpArgv:
    return AcpArgv(binary_path="opencode", model=model, permissions=permissions)


def prompt_results(case: str) -> list[dict[str, Any]]:
    return [
        dict(m.result)
        for m in recorded_messages(P, case)
        if isinstance(m, Response) and m.result is not None and "stopReason" in m.result
    ]


def prompt_errors(case: str) -> list[RpcError]:
    return [
        m.error
        for m in recorded_messages(P, case)
        if isinstance(m, Response) and m.error is not None
    ]


class TestArgvAndEnv:
    def test_argv_is_the_acp_subcommand_and_never_the_model(self) -> None:
        assert acp_argv(args(NativePermissions.bypass(), "fake/m")) == ["opencode", "acp"]

    def test_the_model_goes_in_the_config_content(self) -> None:
        env = acp_env(args(NativePermissions.bypass(), "fake/fake-model"))
        assert json.loads(env["OPENCODE_CONFIG_CONTENT"]) == {"model": "fake/fake-model"}
        assert "OPENCODE_CONFIG_CONTENT" not in acp_env(args(NativePermissions.bypass()))

    def test_a_model_that_reads_as_a_flag_is_refused(self) -> None:
        with pytest.raises(errors.InvalidRequestError):
            acp_env(args(NativePermissions.bypass(), "--yolo"))

    def test_bypass_allows_everything(self) -> None:
        rules = permission_rules(NativePermissions.bypass())
        assert set(rules.values()) == {"allow"}

    def test_workspace_write_allows_edits_and_asks_about_commands_and_outside_paths(
        self,
    ) -> None:
        rules = permission_rules(NativePermissions.workspace_write(["/data/"]))
        assert (rules["edit"], rules["bash"], rules["webfetch"]) == ("allow", "ask", "ask")
        assert rules["external_directory"] == {"*": "ask", "/data/*": "allow"}

    def test_read_only_denies_edits(self) -> None:
        rules = permission_rules(NativePermissions.read_only())
        assert (rules["edit"], rules["bash"]) == ("deny", "ask")

    def test_the_spawned_process_gets_the_rules_in_its_env(self) -> None:
        r = rig([AcpPeerTurn("ok")], permissions=WRITE, model="fake/fake-model")
        r.turn()
        (spawned,) = r.executor.spawned
        assert list(spawned.argv) == ["/usr/bin/opencode", "acp"]
        assert json.loads(spawned.env["OPENCODE_PERMISSION"])["bash"] == "ask"
        assert spawned.env["PATH"] == "/usr/bin"


class TestFailures:
    def test_the_recorded_500_is_transient(self) -> None:
        (error,) = prompt_errors("session_main")
        assert error.data["errorName"] == "APIError"
        assert classify_rpc_error(error) is errors.FailureKind.TRANSIENT
        assert not session_lost(error)

    @pytest.mark.parametrize(
        ("message", "name", "kind"),
        [
            # What 1.18.33 answered for a 401 from the model server.
            ("Internal error: Incorrect API key provided.", "APIError", errors.FailureKind.AUTH),
            ("Internal error: Internal server error", "APIError", errors.FailureKind.TRANSIENT),
            (
                "Internal error: prompt too long",
                "ContextOverflowError",
                errors.FailureKind.CONTEXT_OVERFLOW,
            ),
            ("Internal error: no key", "ProviderAuthError", errors.FailureKind.AUTH),
            ("Internal error: something odd", "APIError", errors.FailureKind.TRANSIENT),
            ("Internal error: something odd", "UnknownError", errors.FailureKind.OTHER),
        ],
    )
    def test_error_names_and_messages_classify(
        self, message: str, name: str, kind: errors.FailureKind
    ) -> None:
        error = RpcError(-32603, message, {"service": "session", "errorName": name})
        assert classify_rpc_error(error) is kind

    @given(st.integers(), st.text(max_size=200), st.none() | st.text(max_size=30))
    def test_any_error_classifies_to_a_kind(
        self, code: int, message: str, name: str | None
    ) -> None:
        data = {"errorName": name} if name is not None else {}
        assert isinstance(classify_rpc_error(RpcError(code, message, data)), errors.FailureKind)

    def test_a_prompt_error_fails_the_turn_and_the_session_goes_on(self) -> None:
        r = rig(
            [AcpPeerTurn(error=(-32603, "Internal error: scripted 500 boom")), AcpPeerTurn("ok")]
        )
        with pytest.raises(errors.CliExitError, match="scripted 500 boom") as caught:
            r.turn()
        assert caught.value.kind is errors.FailureKind.TRANSIENT
        assert r.turn()[0].text == "ok"


class TestUsage:
    def test_cache_and_reasoning_are_folded_into_input_and_output(self) -> None:
        plain = usage(prompt_results("session_main")[0])
        assert plain is not None
        tokens = plain.tokens
        assert (tokens.input_tokens, tokens.cache_read_input_tokens) == (1200, 1000)
        assert (tokens.output_tokens, tokens.reasoning_output_tokens) == (40, 8)

    def test_a_cancelled_turn_reports_zero(self) -> None:
        cancelled = [r for r in prompt_results("session_main") if r["stopReason"] == "cancelled"]
        assert len(cancelled) == 3
        for result in cancelled:
            reported = usage(result)
            assert reported is not None
            assert reported.tokens.total_tokens == 0

    def test_a_turn_with_a_tool_has_its_usage_marked_not_known(self) -> None:
        r = rig([AcpPeerTurn("a"), AcpPeerTurn("b", tool="echo hello")])
        plain, _ = r.turn()
        with_tool, _ = r.turn()
        assert plain.usage.increment_known
        assert plain.usage.tokens.input_tokens == 1200
        assert not with_tool.usage.increment_known


class TestCompactionSummaries:
    def test_a_compaction_summary_is_kept_out_of_the_answer(self) -> None:
        # The ERRCTX turn: a summary message, then the answer as another message.
        events = RecordingEventHandler()
        reader = UpdateReader(events, OPENCODE_ACP.notice, superseded=True)
        messages = recorded_messages(P, "session_main")
        prompts = [i for i, m in enumerate(messages) if isinstance(m, Response)]
        start, end = prompts[-3], prompts[-2]  # after the 500's error, up to ERRCTX's result
        for message in messages[start + 1 : end]:
            if isinstance(message, Notification):
                reader.read(message.params["update"])
        assert reader.text == HELLO
        assert events.lifecycle("message_superseded") == [
            "Summary: a scripted conversation, nothing left to do."
        ]
        assert "".join(e.text for e in events.of_type(ev.AssistantText)).startswith("Summary")


class TestRecordedSession:
    def test_the_main_session_replays_turn_by_turn(self) -> None:
        main = RecordedMainSession(P, OPENCODE_ACP)
        plain, _ = main.turn("Say hello.")
        assert (plain.text, plain.session_id) == (HELLO, MAIN_SESSION)
        assert plain.usage.tokens.input_tokens == 1200

        echo, events = main.turn("TOOLECHO run echo hello")
        assert echo.text == "Running echo.Done."
        (call,) = events.of_type(ev.ToolCall)
        assert (call.tool, call.kind.value) == ("bash", "command")
        assert events.of_type(ev.ToolResult)[0].stdout == "hello\n"
        # The request names the command, not the "bash" the call was announced as.
        assert events.of_type(ev.ApprovalRequested)[0].tool == "echo hello"
        assert not echo.usage.increment_known

        rejected, events = main.turn("TOOLREJ touch a file")
        assert rejected.text == ""
        (failed,) = events.of_type(ev.ToolResult)
        assert failed.failed
        assert "rejected permission" in failed.stderr

        mcp, events = main.turn("MCPCALL call the ping tool")
        assert mcp.text == "Done."
        assert events.of_type(ev.ToolResult)[0].stdout == "pong from fakemcp"

        slow_a, slow_b, drip = main.interrupted_turns()
        assert "User aborted the command" in slow_a.of_type(ev.ToolResult)[0].stdout
        assert slow_b.of_type(ev.ToolResult)[0].stderr == "Tool execution aborted"
        assert drip == "y" * 48
        with pytest.raises(errors.CliExitError, match="scripted 500 boom") as failed_turn:
            main.turn("ERR500 now")
        assert failed_turn.value.kind is errors.FailureKind.TRANSIENT
        compacted, events = main.turn("ERRCTX now")
        assert compacted.text == HELLO
        assert events.lifecycle("message_superseded")
        assert main.turn("Say hello after errors.")[0].text == HELLO
        assert main.chosen() == ["once", "reject", "once", "cancelled"]

    def test_a_load_drops_the_replayed_history(self) -> None:
        # The capture loaded with session/load; the dialect reattaches with session/resume,
        # which replays nothing. A load replays the history before its response.
        loading = dataclasses.replace(OPENCODE_ACP, attach="session/load")
        result, events = turn_after_load(P, loading, "session_load", MAIN_SESSION)
        assert result.text == HELLO
        assert result.resumed
        (suppressed,) = events.lifecycle("replay_suppressed")
        assert suppressed.startswith("33 ")
        assert events.lifecycle("message_superseded") == []


class TestOnTheFake:
    def test_two_turns_one_process(self) -> None:
        r = rig([AcpPeerTurn("one"), AcpPeerTurn("two")])
        assert (r.turn()[0].text, r.turn()[0].text) == ("one", "two")
        assert len(r.executor.spawned) == 1

    def test_a_new_process_resumes_the_session_without_replay(self) -> None:
        r = rig([AcpPeerTurn("one"), AcpPeerTurn("x", tool="t", die=-9), AcpPeerTurn("three")])
        first, _ = r.turn()
        with pytest.raises(errors.CliDiedError):
            r.turn()
        third, events = r.turn()
        assert third.text == "three"
        assert third.session_id == first.session_id
        assert methods(r.peer)[:3] == ["initialize", "session/resume", "session/prompt"]
        assert events.lifecycle("replay_suppressed") == []

    def test_a_permission_names_the_command_and_a_reject_ends_the_turn(self) -> None:
        seen: list[ApprovalRequest] = []

        def deny(request: ApprovalRequest) -> ApprovalDecision:
            seen.append(request)
            return ApprovalDecision.deny("no")

        r = rig(
            [
                AcpPeerTurn(
                    "never", tool="touch x.txt", ask=True, raw_input={"command": "touch x.txt"}
                )
            ],
            permissions=WRITE,
            approvals=deny,
        )
        result, events = r.turn()
        assert [s.tool for s in seen] == ["touch x.txt"]
        assert events.of_type(ev.ToolCall)[0].tool == "bash"
        assert result.text == ""
        assert events.of_type(ev.ToolResult)[0].failed
        assert r.peer.answers == [{"outcome": {"outcome": "selected", "optionId": "reject"}}]

    def test_a_cancel_answered_with_an_error_is_an_interrupted_turn(self) -> None:
        peers = PromptedPeers([AcpPeerTurn("never", hang=True), AcpPeerTurn("after")])
        r = TransportRig(P, peers, partial(AcpTransport, dialect=OPENCODE_ACP), cwd="/work")

        def interrupt_once_prompted() -> None:
            if peers.prompted.wait(60):
                r.conversation.interrupt()

        helper = threading.Thread(target=interrupt_once_prompted)
        helper.start()
        result, events = r.turn(timeout=60)
        helper.join(60)
        assert not helper.is_alive()
        assert result.interrupted
        assert events.lifecycle("cancel_answered_with_error")
        assert events.of_type(ev.TurnInterrupted)
        assert r.turn()[0].text == "after"

    def test_a_summary_before_the_answer_is_not_the_answer(self) -> None:
        r = rig([AcpPeerTurn("the answer", summary="Summary: what happened so far.")])
        result, events = r.turn()
        assert result.text == "the answer"
        assert events.lifecycle("message_superseded") == ["Summary: what happened so far."]

    def test_text_before_a_tool_call_stays_in_the_answer(self) -> None:
        r = rig([AcpPeerTurn("Done.", tool="echo hello", summary="Running echo.")])
        result, _ = r.turn()
        assert result.text == "Running echo.Done."

    def test_steer_is_refused(self) -> None:
        peers = PromptedPeers([AcpPeerTurn("x", hang=True)])
        executor = FakeExecutor(peers=peers, binaries={"opencode": "/usr/bin/opencode"})
        agent = Agent(
            P,
            executor=executor,
            env={"PATH": "/usr/bin"},
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            transport=TransportKind.LONG_LIVED,
        )
        with agent.start_session() as session:
            worker = threading.Thread(target=lambda: session.turn("think"))
            worker.start()
            assert peers.prompted.wait(60), "the turn never started"
            try:
                with pytest.raises(errors.ProviderCapabilityError):
                    session.steer("more")
            finally:
                session.interrupt()
                worker.join(60)
            assert not worker.is_alive()
        assert executor.spawned[0].argv[1] == "acp"
