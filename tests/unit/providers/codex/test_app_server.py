"""The Codex app-server transport, against fake ``codex app-server`` processes."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterable
from typing import Any

import pytest

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import (
    ApprovalRequiredError,
    CliExitError,
    FailureKind,
    ProviderCapabilityError,
    SchemaDialectError,
    SessionResumeError,
)
from agentshim.core.events import (
    AgentEvent,
    ApprovalAnswered,
    AssistantText,
    Lifecycle,
    SessionStarted,
    SessionTitle,
    ToolCall,
    ToolResult,
    TurnInterrupted,
    UsageReport,
    UsageScope,
)
from agentshim.core.hooks import HookCallbacks
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.tools import tool
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.execution.process import SpawnRequest
from agentshim.providers.codex.app_server.conversation import CodexAppServerConversation
from agentshim.providers.codex.app_server.transport import CodexAppServerTransport
from agentshim.providers.codex.provider import CodexProvider
from agentshim.providers.pi.provider import PiProvider
from agentshim.testing import FakeExecutor
from agentshim.testing.codex_app_server import (
    CodexAppServerPeers,
    CodexPeerTurn,
)
from agentshim.testing.process import FakePeer, PeerOutput
from agentshim.testing.recording import RecordingEventHandler
from agentshim.transport.installed import InstalledCli
from tests.unit.long_lived_rig import CodexAppServerRig as Rig
from tests.unit.long_lived_rig import installed_cli

BYPASS = NativePermissions.bypass()
SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}},
    "required": ["answer"],
    "additionalProperties": False,
}


def context(
    peers: Callable[[SpawnRequest], FakePeer], *, provider: Any = None
) -> tuple[InstalledCli, FakeExecutor]:
    return installed_cli("codex", peers, provider=provider)


def run_then(rig: Rig, action: Callable[[], None]) -> tuple[Any, RecordingEventHandler]:
    """Run a turn; do ``action`` on another thread once the turn reported its command.

    The turn has a minute: an action that did not end or finish it fails the test.
    """
    events = RecordingEventHandler()
    command_seen = threading.Event()
    finished = threading.Event()
    failures: list[BaseException] = []

    def handler(event: AgentEvent) -> None:
        events(event)
        if isinstance(event, ToolCall):
            command_seen.set()

    def act() -> None:
        command_seen.wait()
        if finished.is_set():
            return
        try:
            action()
        except BaseException as error:
            failures.append(error)

    helper = threading.Thread(target=act)
    helper.start()
    try:
        result = rig.conversation.turn(TurnRequest("go", timeout=60), handler)
    finally:
        finished.set()
        command_seen.set()
        helper.join(60)
    assert not helper.is_alive()
    if failures:
        raise failures[0]
    return result, events


# -- the wire --------------------------------------------------------------------------------


def test_the_first_turn_starts_a_thread_and_nothing_written_has_a_jsonrpc_member() -> None:
    rig = Rig([CodexPeerTurn("hello")])
    result, events = rig.turn("hi")
    assert result.text == "hello"
    assert result.session_id == rig.peer.thread_id
    assert events.of_type(SessionStarted) == [SessionStarted(rig.peer.thread_id or "")]
    methods = [m.get("method") for m in rig.peer.received]
    assert methods == ["initialize", "initialized", "thread/start", "turn/start"]
    assert all("jsonrpc" not in m for m in rig.peer.received)
    assert [m["id"] for m in rig.peer.received if "id" in m] == [1, 2, 3]
    (start,) = rig.sent("thread/start")
    assert start["params"]["approvalPolicy"] == "never"
    assert start["params"]["sandbox"] == "danger-full-access"
    (turn,) = rig.sent("turn/start")
    assert turn["params"]["input"] == [{"type": "text", "text": "hi"}]


def test_the_argv_marks_the_agents_commands_and_carries_mcp_flags_without_secrets() -> None:
    from agentshim.core.mcp import StdioMcpServer

    server = StdioMcpServer(name="fake", command="/usr/bin/python3", env={"TOKEN_X": "s3cret"})
    rig = Rig([CodexPeerTurn("hi")], mcp_servers=(server,))
    rig.turn()
    (request,) = rig.peers.requests
    argv = list(request.argv)
    assert argv[:2] == ["/usr/bin/codex", "app-server"]
    assert any(a.startswith("shell_environment_policy.set.AGENTSHIM_TOOL_RUN=") for a in argv)
    assert 'mcp_servers.fake.command="/usr/bin/python3"' in argv
    assert "s3cret" not in " ".join(argv)
    assert request.env["TOKEN_X"] == "s3cret"


def test_thread_name_updated_is_the_sessions_title_and_a_cleared_name_is_not() -> None:
    rig = Rig([CodexPeerTurn("one", title="Fix the parser"), CodexPeerTurn("two", title="")])
    first, named = rig.turn()
    _, cleared = rig.turn()
    assert [(t.title, t.source) for t in named.of_type(SessionTitle)] == [
        ("Fix the parser", "thread/name/updated")
    ]
    assert first.text == "one"
    assert cleared.of_type(SessionTitle) == []


def test_a_resumed_thread_names_its_title() -> None:
    rig = Rig([CodexPeerTurn("one", title="Fix the parser"), CodexPeerTurn("two")])
    first, _ = rig.turn()
    resumed = rig.transport.open(
        ConversationSpec(
            permissions=BYPASS, approvals=ApprovalPolicy.DENY, resume_session_id=first.session_id
        )
    )
    events = RecordingEventHandler()
    try:
        assert resumed.turn(TurnRequest("go"), events).text == "two"
    finally:
        resumed.close()
    assert [(t.title, t.source) for t in events.of_type(SessionTitle)] == [
        ("Fix the parser", "thread/resume")
    ]


def test_model_effort_and_output_schema_go_on_each_turn_start(tmp_path: Any) -> None:
    rig = Rig([CodexPeerTurn('{"answer": "yes"}')], reasoning_effort="low")
    schema = OutputSchema(SCHEMA, tmp_path)
    result, _ = rig.turn(TurnRequest("hi", model="gpt-x", output_schema=schema))
    (turn,) = rig.sent("turn/start")
    assert turn["params"]["model"] == "gpt-x"
    assert turn["params"]["effort"] == "low"
    assert turn["params"]["outputSchema"] == SCHEMA
    assert result.structured_output == {"answer": "yes"}


def test_a_schema_codex_strict_mode_refuses_is_refused_before_anything_runs(
    tmp_path: Any,
) -> None:
    rig = Rig([CodexPeerTurn("never")])
    loose = {"type": "object", "properties": {"a": {"type": "string"}}}
    with pytest.raises(SchemaDialectError):
        rig.turn(TurnRequest("hi", output_schema=OutputSchema(loose, tmp_path)))
    assert rig.peers.peers == []


def test_the_answer_is_the_final_phase_message_and_tool_output_comes_from_item_completed() -> None:
    rig = Rig([CodexPeerTurn("done", command="printf 'line1\\nline2'", output="line1\nline2\n")])
    result, events = rig.turn()
    assert result.text == "done"
    (call,) = events.of_type(ToolCall)
    assert call.tool == "command_execution"
    assert "printf" in call.args["command"]
    (tool,) = events.of_type(ToolResult)
    assert tool.tool_id == call.tool_id
    assert tool.stdout == "line1\nline2\n"  # the first line never came as a delta
    assert [e.text for e in events.of_type(AssistantText)] == ["Running it.", "done"]


# -- usage -----------------------------------------------------------------------------------


def test_each_turn_reports_its_own_share_of_the_thread_total_and_the_window() -> None:
    rig = Rig([CodexPeerTurn("one", input_tokens=1000), CodexPeerTurn("two", input_tokens=500)])
    first, first_events = rig.turn()
    second, _ = rig.turn()
    assert first.usage.tokens.input_tokens == 1000
    assert second.usage.tokens.input_tokens == 500
    assert second.context_tokens == 500
    assert second.context_window == 258400
    calls = [e for e in first_events.of_type(UsageReport) if e.scope is UsageScope.CALL]
    assert len(calls) == 1


def test_a_resumed_thread_counts_from_its_replayed_total() -> None:
    peers = CodexAppServerPeers([CodexPeerTurn("one"), CodexPeerTurn("two", input_tokens=7)])
    ctx, _ = context(peers)
    transport = CodexAppServerTransport(ctx)
    spec = ConversationSpec(permissions=BYPASS, approvals=ApprovalPolicy.DENY)
    first = transport.open(spec)
    one = first.turn(TurnRequest("1"), RecordingEventHandler())
    first.close()
    again = transport.open(
        ConversationSpec(
            permissions=BYPASS, approvals=ApprovalPolicy.DENY, resume_session_id=one.session_id
        )
    )
    two = again.turn(TurnRequest("2"), RecordingEventHandler())
    assert two.resumed
    assert two.usage.tokens.input_tokens == 7
    assert [m["method"] for m in peers.peers[1].received][:3] == [
        "initialize",
        "initialized",
        "thread/resume",
    ]


# -- interrupt and steer ---------------------------------------------------------------------


def test_an_interrupt_closes_the_open_command_and_reaps_what_the_turn_started() -> None:
    rig = Rig([CodexPeerTurn("never", command="sleep 30", hang=True), CodexPeerTurn("after")])
    result, events = run_then(rig, rig.conversation.interrupt)
    assert result.interrupted
    assert events.of_type(TurnInterrupted)
    (tool,) = events.of_type(ToolResult)
    assert tool.failed
    assert tool.stderr == "interrupted before it finished"
    (interrupt,) = rig.sent("turn/interrupt")
    assert set(interrupt["params"]) == {"threadId", "turnId"}
    assert rig.reaped
    spawned = rig.peers.requests[0]
    assert any("AGENTSHIM_TOOL_RUN" in arg and rig.reaped[0] in arg for arg in spawned.argv)
    assert "AGENTSHIM_TOOL_RUN" not in spawned.env, "the app-server is no command to reap"
    after, _ = rig.turn()
    assert after.text == "after"
    assert len(rig.peers.peers) == 1


def test_a_completed_turn_reaps_nothing() -> None:
    rig = Rig([CodexPeerTurn("hi", command="echo hi")])
    rig.turn()
    assert rig.reaped == []


def test_steer_goes_into_the_running_turn() -> None:
    rig = Rig([CodexPeerTurn("done", command="sleep 3", until_steered=True)])
    result, events = run_then(rig, lambda: rig.conversation.steer("also this"))
    assert result.text == "done (and: also this)"
    assert events.lifecycle("steered") == ["also this"]
    (steer,) = rig.sent("turn/steer")
    assert steer["params"]["expectedTurnId"]
    assert steer["params"]["input"] == [{"type": "text", "text": "also this"}]


# -- approvals -------------------------------------------------------------------------------


def _approvals(answer: bool) -> Callable[[ApprovalRequest], ApprovalDecision]:
    def decide(request: ApprovalRequest) -> ApprovalDecision:
        return ApprovalDecision.allow() if answer else ApprovalDecision.deny("no")

    return decide


@pytest.mark.parametrize(("allow", "decision"), [(True, "accept"), (False, "decline")])
def test_an_approval_request_is_answered_by_the_handler(allow: bool, decision: str) -> None:
    from agentshim.core.approvals import approvals_value

    rig = Rig(
        [CodexPeerTurn("ok", command="touch a", approve=True)],
        permissions=NativePermissions.workspace_write(),
        approvals=approvals_value("test", _approvals(allow)),
    )
    result, events = rig.turn()
    assert result.text == "ok"
    replies = [m for m in rig.peer.received if "result" in m]
    assert replies == [{"id": 0, "result": {"decision": decision}}]
    (answer,) = events.of_type(ApprovalAnswered)
    assert answer.allowed is allow
    (tool,) = events.of_type(ToolResult)
    assert tool.failed is not allow
    (start,) = rig.sent("thread/start")
    assert start["params"]["approvalPolicy"] == "untrusted"
    assert start["params"]["sandbox"] == "workspace-write"


def test_fail_turn_cancels_and_fails_the_turn() -> None:
    rig = Rig(
        [CodexPeerTurn("never", command="touch a", approve=True)],
        permissions=NativePermissions.workspace_write(),
        approvals=ApprovalPolicy.FAIL_TURN,
    )
    with pytest.raises(ApprovalRequiredError):
        rig.turn()


def test_a_server_request_nobody_handles_is_refused_with_an_error() -> None:
    class Asking(CodexAppServerPeers):
        def __call__(self, request: SpawnRequest) -> FakePeer:
            peer = super().__call__(request)
            original = peer.on_stdin

            def on_stdin(line: str) -> Iterable[PeerOutput]:
                from agentshim.execution.process import StdoutLine

                out = list(original(line))
                if '"turn/start"' in line:
                    ask = {"method": "item/tool/requestUserInput", "id": 0, "params": {}}
                    out.insert(1, StdoutLine(json.dumps(ask) + "\n"))
                return out

            peer.on_stdin = on_stdin  # type: ignore[method-assign]
            return peer

    peers = Asking([CodexPeerTurn("fine")])
    ctx, _ = context(peers)
    conversation = CodexAppServerTransport(ctx).open(
        ConversationSpec(permissions=BYPASS, approvals=ApprovalPolicy.DENY)
    )
    events = RecordingEventHandler()
    conversation.turn(TurnRequest("hi"), events)
    refusals = [m for m in peers.peers[0].received if "error" in m]
    assert refusals
    assert refusals[0]["id"] == 0
    assert events.lifecycle("server_request_refused") == ["item/tool/requestUserInput"]


# -- failures --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("info", "message", "kind"),
    [
        ("contextWindowExceeded", "Codex ran out of room", FailureKind.CONTEXT_OVERFLOW),
        ("internalServerError", "high demand", FailureKind.TRANSIENT),
        ("usageLimitExceeded", "limit", FailureKind.USAGE_LIMIT),
        ({"httpConnectionFailed": {"httpStatusCode": 401}}, "401 Unauthorized", FailureKind.AUTH),
        ({"httpConnectionFailed": {"httpStatusCode": 503}}, "unavailable", FailureKind.TRANSIENT),
        ("other", "stream disconnected before completion: Overloaded", FailureKind.TRANSIENT),
    ],
)
def test_a_failed_turn_is_classified_from_codex_error_info(
    info: object, message: str, kind: FailureKind
) -> None:
    rig = Rig([CodexPeerTurn(error=info, error_message=message), CodexPeerTurn("after")])
    with pytest.raises(CliExitError) as failed:
        rig.turn()
    assert failed.value.kind is kind
    assert message in str(failed.value)
    after, _ = rig.turn()
    assert after.text == "after"
    assert len(rig.peers.peers) == 1


def test_resuming_a_thread_codex_does_not_have_raises_session_resume_error() -> None:
    missing = "00000000-0000-7000-8000-000000000000"
    rig = Rig([CodexPeerTurn("never")], resume=missing, missing=[missing])
    with pytest.raises(SessionResumeError) as failed:
        rig.turn()
    assert failed.value.session_id == missing
    assert rig.sent("turn/start") == []


def test_open_refuses_another_provider() -> None:
    ctx, _ = context(CodexAppServerPeers([]), provider=PiProvider())
    with pytest.raises(ProviderCapabilityError):
        CodexAppServerTransport(ctx).open(
            ConversationSpec(permissions=BYPASS, approvals=ApprovalPolicy.DENY)
        )


def test_a_fork_opens_a_new_thread_with_the_history_and_continues_it() -> None:
    source = Rig([CodexPeerTurn("first"), CodexPeerTurn("forked"), CodexPeerTurn("again")])
    first, _ = source.turn("remember")
    fork = source.transport.open(
        ConversationSpec(
            permissions=BYPASS,
            approvals=ApprovalPolicy.DENY,
            resume_session_id=first.session_id,
            fork=True,
        )
    )
    forked = fork.turn(TurnRequest("go on"), RecordingEventHandler())
    assert forked.text == "forked"
    assert forked.session_id not in (None, first.session_id)
    (asked,) = [m for m in source.peer.received if m.get("method") == "thread/fork"]
    assert asked["params"]["threadId"] == first.session_id
    assert not [m for m in source.peer.received if m.get("method") == "thread/resume"]
    again = fork.turn(TurnRequest("more"), RecordingEventHandler())
    assert again.session_id == forked.session_id, "the fork is the conversation now"
    fork.close()


def test_open_refuses_hooks_rather_than_dropping_them() -> None:
    ctx, _ = context(CodexAppServerPeers([]))
    with pytest.raises(ProviderCapabilityError, match="hook"):
        CodexAppServerTransport(ctx).open(
            ConversationSpec(
                permissions=BYPASS, approvals=ApprovalPolicy.DENY, hooks=HookCallbacks()
            )
        )


def test_tools_on_another_machine_are_refused_before_anything_starts() -> None:
    def ping(text: str) -> str:
        """Echo ``text``."""
        return text

    ctx, executor = context(CodexAppServerPeers([]))
    spec = ConversationSpec(permissions=BYPASS, approvals=ApprovalPolicy.DENY, tools=(tool(ping),))
    conversation = CodexAppServerTransport(ctx).open(spec)
    with pytest.raises(ProviderCapabilityError, match="HostCommandExecutor"):
        conversation.turn(TurnRequest("hi"), RecordingEventHandler())
    assert not executor.spawned
    conversation.close()


# -- the contracts ---------------------------------------------------------------------------


# -- permissions and deadlines ---------------------------------------------------------------


def test_read_only_and_extra_writable_roots_reach_thread_and_turn_start() -> None:
    rig = Rig([CodexPeerTurn("hi")], permissions=NativePermissions.read_only())
    rig.turn()
    (start,) = rig.sent("thread/start")
    assert (start["params"]["sandbox"], start["params"]["approvalPolicy"]) == (
        "read-only",
        "untrusted",
    )
    assert "sandboxPolicy" not in rig.sent("turn/start")[0]["params"]

    roots = NativePermissions.workspace_write(["/srv/data"], network=True)
    rig = Rig([CodexPeerTurn("hi")], permissions=roots)
    rig.turn()
    (turn,) = rig.sent("turn/start")
    assert turn["params"]["sandboxPolicy"] == {
        "type": "workspaceWrite",
        "networkAccess": True,
        "writableRoots": ["/srv/data"],
    }


def test_a_thread_total_handed_over_from_a_one_shot_turn_is_the_baseline() -> None:
    from agentshim.providers.codex.app_server import protocol as p
    from agentshim.providers.codex.app_server.usage import ThreadUsage

    def update(inp: int, out: int, last_in: int, last_out: int) -> p.ThreadTokenUsage:
        def breakdown(i: int, o: int) -> dict[str, int]:
            return {
                "totalTokens": i + o,
                "inputTokens": i,
                "cachedInputTokens": 0,
                "outputTokens": o,
                "reasoningOutputTokens": 0,
            }

        return p.ThreadTokenUsage.from_wire(
            {"total": breakdown(inp, out), "last": breakdown(last_in, last_out)}
        )

    usage = ThreadUsage(model=None)
    # codex exec's usage frame: no cache-write count.
    usage.known({"input_tokens": 5000, "cached_input_tokens": 0, "output_tokens": 100})
    usage.begin_turn()
    call = usage.update(update(5030, 104, 30, 4))
    assert call is not None
    assert call.tokens.input_tokens == 30
    turn = usage.turn_usage()
    assert turn is not None
    assert (turn.tokens.input_tokens, turn.tokens.output_tokens) == (30, 4)
    assert usage.update(update(5030, 104, 30, 4)) is None  # an interrupt's repeat counts nothing


def test_a_deny_while_the_turn_is_interrupted_is_sent_as_cancel() -> None:
    from agentshim.core.approvals import approvals_value

    holder: list[CodexAppServerConversation] = []

    def interrupt_then_deny(request: ApprovalRequest) -> ApprovalDecision:
        holder[0].interrupt()
        return ApprovalDecision.deny("stopping")

    rig = Rig(
        [CodexPeerTurn("never", command="touch a", approve=True), CodexPeerTurn("after")],
        permissions=NativePermissions.workspace_write(),
        approvals=approvals_value("test", interrupt_then_deny),
    )
    holder.append(rig.conversation)
    result, _ = rig.turn()
    assert result.interrupted
    replies = [m for m in rig.peer.received if "result" in m]
    assert replies == [{"id": 0, "result": {"decision": "cancel"}}]
    after, _ = rig.turn()
    assert after.text == "after"


def test_an_interrupt_before_codex_started_the_turn_waits_for_turn_started() -> None:
    from agentshim.execution.process import StdoutLine
    from agentshim.testing.process import GateMarker, ReplayGates

    gates = ReplayGates(closed=["started"])

    class Slow(CodexAppServerPeers):
        """Codex answers turn/start before the turn is active, and refuses an interrupt then."""

        def __call__(self, request: SpawnRequest) -> FakePeer:
            peer = super().__call__(request)
            original = peer.on_stdin

            def on_stdin(line: str) -> Iterable[PeerOutput]:
                if '"turn/interrupt"' in line and not gates.is_open("started"):
                    sent = json.loads(line)
                    error = {"code": -32600, "message": "no active turn to interrupt"}
                    return [StdoutLine(json.dumps({"error": error, "id": sent["id"]}) + "\n")]
                out = list(original(line))
                if '"turn/start"' in line:
                    return [*out[:2], GateMarker("started"), *out[2:]]
                return out

            peer.on_stdin = on_stdin  # type: ignore[method-assign]
            return peer

    peers = Slow([CodexPeerTurn(hang=True), CodexPeerTurn("after")])
    executor = FakeExecutor(peers=peers, gates=gates)
    ctx = InstalledCli(
        provider=CodexProvider(), executor=executor, binary_path="/usr/bin/codex", env={}
    )
    conversation = CodexAppServerTransport(ctx, interrupt_grace=2.0, reap=lambda m: 0).open(
        ConversationSpec(permissions=BYPASS, approvals=ApprovalPolicy.DENY)
    )
    events = RecordingEventHandler()

    def interrupt_then_start(event: AgentEvent) -> None:
        if isinstance(event, Lifecycle) and event.kind == "turn_started":
            conversation.interrupt()  # named by the response, not yet active
            gates.open("started")

    result = conversation.turn(TurnRequest("wait"), lambda e: (events(e), interrupt_then_start(e)))
    assert result.interrupted
    assert events.lifecycle("request_refused") == []
    assert events.lifecycle("interrupt_unanswered") == []
    after = conversation.turn(TurnRequest("next"), RecordingEventHandler())
    assert after.text == "after"
    assert len(peers.peers) == 1
