"""Copilot CLI's ACP dialect, on recorded ``copilot --acp`` sessions and on the fake agent."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.acp.client import AcpTransport
from agentshim.acp.dialect import AcpArgv
from agentshim.acp.jsonrpc import Notification, Response, RpcError
from agentshim.core import errors
from agentshim.core import events as ev
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import ConversationSpec
from agentshim.core.mcp import HttpMcpServer, StdioMcpServer
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.tools import tool
from agentshim.core.turn import TurnRequest
from agentshim.execution import HostCommandExecutor
from agentshim.execution.process import SpawnRequest
from agentshim.providers import get_plugin
from agentshim.providers.copilot.acp import (
    COPILOT_ACP,
    acp_argv,
    failure_kind,
    is_notice,
    session_lost,
    usage,
)
from agentshim.testing import FakeExecutor
from agentshim.testing.acp import COPILOT_QUIRKS, AcpPeers, AcpPeerTurn
from agentshim.transport.installed import InstalledCli
from tests.unit.acp.rigs import (
    RecordedMainSession,
    Rig,
    recorded_messages,
    transport_on,
    turn_after_load,
)

P = "copilot"
MAIN_SESSION = "01c62b18-3ff4-498e-af30-e6a63fea9e89"
HELLO = "Hello from the scripted model."
WRITE = NativePermissions.workspace_write()
RECORDED_500 = (
    "Error: Failed to get response from the AI model; retried 5 times (total retry wait "
    "time: 15.39 seconds) Last error: 500 scripted 500 boom"
)
# What 1.0.102 printed for a 401 from the model server.
SEEN_401 = (
    "Error: Authentication failed with provider at http://127.0.0.1:36549/v1 (HTTP 401).\n"
    "  Check your COPILOT_PROVIDER_API_KEY, COPILOT_PROVIDER_BEARER_TOKEN, or provider "
    "configuration."
)


class _HostWithPeers(HostCommandExecutor):
    """The host executor (so tools are served on this machine); its processes the fake's."""

    def __init__(self, peers: AcpPeers) -> None:
        super().__init__()
        self.fake = FakeExecutor(peers=peers)

    def spawn(self, request: SpawnRequest) -> Any:
        return self.fake.spawn(request)


def rig(turns: Sequence[AcpPeerTurn], **options: Any) -> Rig:
    return Rig(P, COPILOT_ACP, COPILOT_QUIRKS, turns, **options)


def args(permissions: NativePermissions, model: str | None = None) -> AcpArgv:
    return AcpArgv(binary_path="copilot", model=model, permissions=permissions)


def agent_texts(case: str) -> list[str]:
    return [
        m.params["update"]["content"]["text"]
        for m in recorded_messages(P, case)
        if isinstance(m, Notification)
        and m.params["update"]["sessionUpdate"] == "agent_message_chunk"
    ]


class TestArgv:
    @pytest.mark.parametrize(
        ("permissions", "tail"),
        [
            (NativePermissions.bypass(), ["--allow-all"]),
            (NativePermissions.read_only(), ["--deny-tool=write"]),
            (
                NativePermissions.workspace_write(["/data"]),
                ["--allow-tool=write", "--add-dir", "/data"],
            ),
        ],
    )
    def test_permissions_map_to_tool_permissions(
        self, permissions: NativePermissions, tail: list[str]
    ) -> None:
        assert acp_argv(args(permissions)) == ["copilot", "--acp", "--no-auto-update", *tail]

    def test_the_model_is_a_flag(self) -> None:
        argv = acp_argv(args(NativePermissions.bypass(), "fake-model"))
        assert argv[3:5] == ["--model", "fake-model"]

    def test_a_model_that_reads_as_a_flag_is_refused(self) -> None:
        with pytest.raises(errors.InvalidRequestError):
            acp_argv(args(NativePermissions.bypass(), "--yolo"))


class TestNoticesAndFailures:
    def test_the_recorded_status_lines_are_notices(self) -> None:
        notices = [t for t in agent_texts("session_main") if is_notice(t)]
        assert "Info: Operation cancelled by user" in notices
        assert RECORDED_500 in notices
        assert not is_notice(HELLO)

    @pytest.mark.parametrize(
        ("text", "kind"),
        [
            (RECORDED_500, errors.FailureKind.TRANSIENT),
            (SEEN_401, errors.FailureKind.AUTH),
            (
                "Error: the conversation exceeded the context window",
                errors.FailureKind.CONTEXT_OVERFLOW,
            ),
            ("Error: something went wrong", errors.FailureKind.OTHER),
        ],
    )
    def test_an_error_line_says_how_the_turn_failed(
        self, text: str, kind: errors.FailureKind
    ) -> None:
        assert failure_kind(text) is kind

    def test_info_lines_and_answers_are_no_failure(self) -> None:
        for text in agent_texts("session_main"):
            if not text.startswith("Error: "):
                assert failure_kind(text) is None, text

    @given(st.text(max_size=300))
    def test_any_text_reads_as_no_failure_or_a_kind(self, text: str) -> None:
        kind = failure_kind(text)
        assert kind is None or isinstance(kind, errors.FailureKind)
        assert (kind is None) == (not text.startswith("Error: "))

    def test_an_internal_error_is_no_lost_session(self) -> None:
        # The recorded answer for an unknown session is one: see tests/unit/acp/test_agents.py.
        assert not session_lost(RpcError(-32603, "Internal error", {}))


class TestUsage:
    def test_usage_adds_up_over_the_process(self) -> None:
        results = [
            dict(m.result)
            for m in recorded_messages(P, "session_main")
            if isinstance(m, Response) and m.result is not None and "stopReason" in m.result
        ]
        first, second = usage(results[0]), usage(results[1])
        assert first is not None
        assert second is not None
        assert (first.tokens.input_tokens, first.tokens.cache_read_input_tokens) == (1200, 1000)
        assert (first.tokens.output_tokens, first.tokens.reasoning_output_tokens) == (40, 8)
        assert (second.tokens.input_tokens, second.tokens.output_tokens) == (3600, 75)

    def test_each_turn_reports_its_share_and_a_new_process_starts_again(self) -> None:
        r = rig(
            [
                AcpPeerTurn("a", input_tokens=1200, output_tokens=40),
                AcpPeerTurn("b", input_tokens=2400, output_tokens=35),
                AcpPeerTurn("x", tool="t", die=-9),
                AcpPeerTurn("c", input_tokens=1300, output_tokens=5),
            ]
        )
        first, _ = r.turn()
        second, events = r.turn()
        assert (first.usage.tokens.input_tokens, first.usage.tokens.output_tokens) == (1200, 40)
        assert (second.usage.tokens.input_tokens, second.usage.tokens.output_tokens) == (2400, 35)
        assert second.usage.tokens.turns == 1
        assert [u.usage for u in events.of_type(ev.UsageReport)] == [second.usage]
        with pytest.raises(errors.CliDiedError):
            r.turn()
        third, _ = r.turn()
        assert (third.usage.tokens.input_tokens, third.usage.tokens.output_tokens) == (1300, 5)


class TestRecordedSession:
    def test_the_main_session_replays_turn_by_turn(self) -> None:
        main = RecordedMainSession(P, COPILOT_ACP)
        plain, events = main.turn("Say hello.")
        assert (plain.text, plain.session_id) == (HELLO, MAIN_SESSION)
        # Copilot spoke of the session before session/new answered: kept, not lost.
        assert len(events.of_type(ev.CommandsAvailable)) == 2
        assert events.of_type(ev.SessionTitle)[0].title == "Say hello."
        assert (plain.usage.tokens.input_tokens, plain.usage.tokens.output_tokens) == (1200, 40)

        echo, events = main.turn("TOOLECHO run echo hello")
        assert echo.text == "Running echo.Done."
        assert "hello" in events.of_type(ev.ToolResult)[0].stdout
        assert (echo.usage.tokens.input_tokens, echo.usage.tokens.output_tokens) == (2400, 35)

        rejected, events = main.turn("TOOLREJ touch a file")
        assert rejected.text == ""
        assert events.lifecycle("agent_notice") == ["Info: Operation cancelled by user"]
        assert events.of_type(ev.ToolResult)[0].stderr == "The user rejected this tool call."

        slow_a, _, drip = main.interrupted_turns()
        # Copilot sends no end for the stopped command; the transport gives it one.
        assert slow_a.of_type(ev.ToolResult)[0].stderr == "cancelled with the turn"
        assert drip.startswith("yyyyyyyy")

        with pytest.raises(errors.CliExitError, match="scripted 500 boom") as failed:
            main.turn("ERR500 now")
        assert failed.value.kind is errors.FailureKind.TRANSIENT
        compacted, events = main.turn("ERRCTX now")
        assert compacted.text == HELLO
        assert events.lifecycle("agent_notice")[0].startswith("Info: The conversation exceeded")
        assert main.turn("Say hello after errors.")[0].text == HELLO
        assert main.chosen() == ["allow_once", "reject_once", "allow_once", "cancelled"]

    def test_a_loaded_session_replays_no_history_and_no_old_failure(self) -> None:
        result, events = turn_after_load(P, COPILOT_ACP, "session_load", MAIN_SESSION)
        # The replay holds the old "Error: ..." line: it fails nothing now.
        assert result.text == HELLO
        assert result.resumed
        assert events.lifecycle("replay_suppressed")
        assert [e.text for e in events.of_type(ev.AssistantText)] == [
            "Hello from the s",
            "cripted model.",
        ]
        # A new process starts its count again.
        assert result.usage.tokens.input_tokens == 1200


class TestOnTheFake:
    def test_a_failure_in_text_fails_the_turn_and_the_session_goes_on(self) -> None:
        r = rig(
            [
                AcpPeerTurn(error=(0, "Failed to get response; Last error: 500 boom")),
                AcpPeerTurn("ok"),
            ]
        )
        with pytest.raises(errors.CliExitError, match="500 boom") as caught:
            r.turn()
        assert caught.value.kind is errors.FailureKind.TRANSIENT
        second, events = r.turn()
        assert second.text == "ok"
        assert events.lifecycle("agent_notice") == []

    def test_an_answer_after_an_error_line_is_a_success(self) -> None:
        r = rig([AcpPeerTurn("recovered", summary="Error: first try failed (HTTP 500)")])
        assert r.turn()[0].text == "recovered"

    def test_stdio_mcp_servers_are_refused_before_anything_runs(self) -> None:
        peers = AcpPeers([], quirks=COPILOT_QUIRKS)
        transport, executor = transport_on(P, COPILOT_ACP, peers)
        spec = ConversationSpec(
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            mcp_servers=(StdioMcpServer("local", "/usr/bin/tool"),),
        )
        with pytest.raises(errors.ProviderCapabilityError, match="stdio MCP"):
            transport.open(spec)
        assert executor.spawned == []

    def test_python_tools_go_on_the_command_line_with_the_credential_in_env_only(self) -> None:
        @tool
        def lookup(key: str) -> str:
            """Look ``key`` up."""
            return key

        peers = AcpPeers([AcpPeerTurn("ok")], quirks=COPILOT_QUIRKS)
        executor = _HostWithPeers(peers)
        context = InstalledCli(
            provider=get_plugin(P).create_provider(),
            executor=executor,
            binary_path="/usr/bin/copilot",
            env={"PATH": "/usr/bin"},
        )
        spec = ConversationSpec(
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            cwd="/work",
            tools=(lookup,),
        )
        conversation = AcpTransport(context, COPILOT_ACP).open(spec)
        try:
            assert conversation.turn(TurnRequest("go"), lambda e: None).text == "ok"
        finally:
            conversation.close()
        (request,) = executor.fake.spawned
        argv = list(request.argv)
        config = json.loads(argv[argv.index("--additional-mcp-config") + 1])
        bridge = config["mcpServers"]["agentshim"]
        assert bridge["type"] == "local"
        assert "env" not in bridge
        credential = dict(request.env or {})[bridge["args"][-1]]
        assert len(credential) >= 32
        assert not any(credential in arg for arg in argv)
        # session/new would drop a stdio server: the bridge is not sent there.
        (opened,) = [f for f in peers.peers[-1].received if f.get("method") == "session/new"]
        assert opened["params"]["mcpServers"] == []

    def test_tools_for_a_cli_on_another_machine_are_refused(self) -> None:
        @tool
        def lookup(key: str) -> str:
            """Look ``key`` up."""
            return key

        transport, executor = transport_on(P, COPILOT_ACP, AcpPeers([], quirks=COPILOT_QUIRKS))
        spec = ConversationSpec(
            permissions=NativePermissions.bypass(), approvals=ApprovalPolicy.DENY, tools=(lookup,)
        )
        conversation = transport.open(spec)
        with pytest.raises(errors.ProviderCapabilityError, match="HostCommandExecutor"):
            conversation.turn(TurnRequest("go"), lambda e: None)
        assert executor.spawned == []

    def test_http_mcp_servers_go_to_session_new(self) -> None:
        server = HttpMcpServer("remote", "http://127.0.0.1:9/mcp")
        r = rig([AcpPeerTurn("ok")], mcp_servers=(server,))
        r.turn()
        assert r.peer.received[1]["params"]["mcpServers"][0]["url"] == "http://127.0.0.1:9/mcp"

    def test_a_cancelled_permission_is_answered_cancelled(self) -> None:
        holder: list[Rig] = []

        def interrupt_then_allow(_: ApprovalRequest) -> ApprovalDecision:
            holder[0].conversation.interrupt()
            return ApprovalDecision.allow()

        r = rig(
            [AcpPeerTurn("never", tool="sleep 30", ask=True), AcpPeerTurn("after")],
            permissions=WRITE,
            approvals=interrupt_then_allow,
        )
        holder.append(r)
        result, _ = r.turn()
        assert result.interrupted
        assert r.turn()[0].text == "after"
