"""The ACP client against an agent written from the v1 schema: every update kind, every
client method, every stop reason, for the generic provider's defaults."""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.acp.client import AcpTransport
from agentshim.acp.clientside import AcpClientMethods
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.attachments import PromptImage, PromptLink, PromptResource
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import CliExitError, FailureKind, ProviderCapabilityError
from agentshim.core.events import (
    AgentContent,
    AssistantText,
    CommandsAvailable,
    ConfigOptionsChanged,
    Lifecycle,
    ModeChanged,
    Plan,
    Reasoning,
    SessionTitle,
    ToolCall,
    ToolCallUpdated,
    ToolResult,
    UsageReport,
    UsageScope,
)
from agentshim.core.permissions import NativePermissions
from agentshim.core.turn import StopReason, TurnRequest, TurnResult
from agentshim.execution.process import ProcessExited, SpawnRequest, StdoutLine
from agentshim.providers.acp import AcpAgentConfig, AcpProvider
from agentshim.testing import FakeExecutor
from agentshim.testing.process import FakePeer, PeerOutput
from agentshim.testing.recording import RecordingEventHandler
from agentshim.transport.installed import InstalledCli

from .schema_agent import Initialize, SchemaAgent, Script, ask, text, update

WRITE = NativePermissions.workspace_write()


def allow(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision.allow()


class Rig:
    def __init__(
        self,
        scripts: Sequence[Script],
        *,
        cwd: Path | str = "/work",
        client: AcpClientMethods | None = None,
        init: Initialize | None = None,
        approvals: Any = allow,
        **config: Any,
    ) -> None:
        self.agent = SchemaAgent(scripts, init)
        # Other processes (a terminal's commands) are made by ``commands``, when set.
        self.commands: Any = None
        executor = FakeExecutor(peers=self._spawn)
        self.executor = executor
        config = AcpAgentConfig(name="schema", command="schema-agent", **config)
        context = InstalledCli(
            provider=AcpProvider(profile=config.profile()),
            executor=executor,
            binary_path="/usr/bin/schema-agent",
            env={"PATH": "/usr/bin"},
        )
        self.transport = AcpTransport(context, config.dialect(), client=client, close_grace=0.2)
        self.conversation = self.transport.open(
            ConversationSpec(permissions=WRITE, approvals=approvals, cwd=str(cwd))
        )

    def _spawn(self, request: SpawnRequest) -> FakePeer:
        if request.argv[0] == "/usr/bin/schema-agent" or self.commands is None:
            return self.agent
        return self.commands(request)

    def turn(self, prompt: str = "go") -> tuple[TurnResult, RecordingEventHandler]:
        events = RecordingEventHandler()
        try:
            return self.conversation.turn(TurnRequest(prompt), events), events
        finally:
            self.events = events

    def close(self) -> None:
        self.conversation.close()

    def answer(self, request_id: int) -> dict[str, Any]:
        return self.agent.answers[request_id]


EVERY_UPDATE = [
    update({"sessionUpdate": "user_message_chunk", "content": {"type": "text", "text": "hi"}}),
    text("Let me look. ", "agent_thought_chunk"),
    update(
        {
            "sessionUpdate": "agent_thought_chunk",
            "content": {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        }
    ),
    update(
        {
            "sessionUpdate": "plan",
            "entries": [
                {"content": "read the file", "priority": "high", "status": "in_progress"},
                {"content": "edit it", "priority": "medium", "status": "pending"},
            ],
        }
    ),
    update(
        {
            "sessionUpdate": "tool_call",
            "toolCallId": "call_1",
            "title": "Read file",
            "kind": "read",
            "status": "pending",
        }
    ),
    update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_1",
            "title": "Read src/app.py",
            "status": "in_progress",
            "rawInput": {"path": "src/app.py"},
            "locations": [{"path": "/work/src/app.py", "line": 3}],
        }
    ),
    update(
        {
            "sessionUpdate": "tool_call_update",
            "toolCallId": "call_1",
            "status": "completed",
            "content": [
                {"type": "content", "content": {"type": "text", "text": "print(1)"}},
                {"type": "diff", "path": "/work/src/app.py", "oldText": "a", "newText": "b"},
            ],
        }
    ),
    update(
        {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [{"name": "web", "description": "search the web"}],
        }
    ),
    update({"sessionUpdate": "current_mode_update", "currentModeId": "plan"}),
    update(
        {
            "sessionUpdate": "config_option_update",
            "configOptions": [
                {
                    "id": "model",
                    "name": "Model",
                    "category": "model",
                    "type": "select",
                    "currentValue": "m1",
                    "options": [
                        {"value": "m1", "name": "M1"},
                        {
                            "group": "more",
                            "name": "More",
                            "options": [{"value": "m2", "name": "M2"}],
                        },
                    ],
                },
                {"id": "fast", "name": "Fast", "type": "boolean", "currentValue": True},
            ],
        }
    ),
    update({"sessionUpdate": "session_info_update", "title": "Fixing app.py"}),
    update(
        {
            "sessionUpdate": "usage_update",
            "used": 5300,
            "size": 200000,
            "cost": {"amount": 0.25, "currency": "USD"},
        }
    ),
    update(
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "resource_link", "uri": "file:///work/a.md", "name": "a.md"},
        }
    ),
    update(
        {
            "sessionUpdate": "agent_message_chunk",
            "content": {
                "type": "resource",
                "resource": {"uri": "file:///work/b.md", "text": "B", "mimeType": "text/markdown"},
            },
        }
    ),
    text("Done: "),
    text("fixed."),
    # Another session's update never reaches this one.
    update(
        {"sessionUpdate": "agent_message_chunk", "content": {"type": "text", "text": "X"}}, "other"
    ),
]


class TestEveryUpdateKind:
    def test_each_is_a_typed_event_and_only_message_text_is_the_answer(self) -> None:
        rig = Rig([Script(EVERY_UPDATE)])
        result, events = rig.turn()
        rig.close()
        assert result.text == "Done: fixed."
        assert [e.text for e in events.of_type(AssistantText)] == ["Done: ", "fixed."]
        assert [e.text for e in events.of_type(Reasoning)] == ["Let me look. "]
        contents = events.of_type(AgentContent)
        assert [(c.content_type, c.thought) for c in contents] == [
            ("image", True),
            ("resource_link", False),
            ("resource", False),
        ]
        assert contents[2].text == "B"
        assert contents[1].uri == "file:///work/a.md"
        (plan,) = events.of_type(Plan)
        assert [(i.text, i.status) for i in plan.items] == [
            ("read the file", "in_progress"),
            ("edit it", "pending"),
        ]
        (call,) = events.of_type(ToolCall)
        assert (call.tool_id, call.tool) == ("call_1", "Read file")
        refined, finished = events.of_type(ToolCallUpdated)
        assert (refined.tool, refined.status, refined.args) == (
            "Read src/app.py",
            "in_progress",
            {"path": "src/app.py"},
        )
        assert refined.locations == ("/work/src/app.py:3",)
        assert finished.status == "completed"
        assert [(d.path, d.old_text, d.new_text) for d in finished.diffs] == [
            ("/work/src/app.py", "a", "b")
        ]
        (done,) = events.of_type(ToolResult)
        assert (done.tool, done.exit_code) == ("Read src/app.py", 0)
        assert "print(1)" in done.stdout
        assert events.of_type(CommandsAvailable)[0].commands == ("web",)
        assert [e.mode_id for e in events.of_type(ModeChanged)] == ["plan"]
        (config,) = events.of_type(ConfigOptionsChanged)
        assert [(o.option_id, o.value, o.choices) for o in config.options] == [
            ("model", "m1", ("m1", "m2")),
            ("fast", "true", ()),
        ]
        assert [e.title for e in events.of_type(SessionTitle)] == ["Fixing app.py"]
        live = [e for e in events.of_type(UsageReport) if e.scope is UsageScope.CALL]
        assert live[0].cost_usd == 0.25
        assert (result.context_tokens, result.context_window) == (5300, 200000)
        assert result.stop_reason is StopReason.END_TURN
        assert "X" not in result.text


class TestStopReasons:
    @pytest.mark.parametrize(
        "reason", [StopReason.MAX_TOKENS, StopReason.MAX_TURN_REQUESTS, StopReason.REFUSAL]
    )
    def test_a_limit_or_refusal_is_a_typed_outcome(self, reason: StopReason) -> None:
        rig = Rig([Script([text("partial")], stop_reason=reason.value)])
        result, _ = rig.turn()
        rig.close()
        assert result.stop_reason is reason
        assert not result.interrupted
        assert result.text == "partial"

    def test_an_agent_that_cancels_its_own_turn_is_not_an_interrupt_of_the_caller(self) -> None:
        call = {"sessionUpdate": "tool_call", "toolCallId": "c", "title": "rm x", "kind": "delete"}
        rig = Rig([Script([update(call)], stop_reason="cancelled")])
        result, events = rig.turn()
        rig.close()
        assert not result.interrupted
        assert result.stop_reason is StopReason.CANCELLED
        assert events.lifecycle("cancelled_by_agent")
        # The call it left open still has an end.
        assert [r.tool_id for r in events.of_type(ToolResult)] == ["c"]


class TestUsageAndAuth:
    def test_prompt_usage_adds_up_over_the_session_and_each_turn_gets_its_share(self) -> None:
        first = {"inputTokens": 100, "outputTokens": 10, "totalTokens": 110}
        second = {"inputTokens": 250, "outputTokens": 30, "totalTokens": 280}
        rig = Rig([Script([text("a")], usage=first), Script([text("b")], usage=second)])
        one, _ = rig.turn()
        two, _ = rig.turn()
        rig.close()
        assert (one.usage.tokens.input_tokens, one.usage.tokens.output_tokens) == (100, 10)
        assert (two.usage.tokens.input_tokens, two.usage.tokens.output_tokens) == (150, 20)
        assert one.usage.provider == "schema"

    def test_the_callers_auth_method_is_authenticated_when_the_agent_lists_it(self) -> None:
        methods = [{"id": "api-key", "name": "API key"}]
        rig = Rig(
            [Script([text("ok")])], init=Initialize(auth_methods=methods), auth_method="api-key"
        )
        rig.turn()
        rig.close()
        (asked,) = [f for f in rig.agent.received if f.get("method") == "authenticate"]
        assert asked["params"] == {"methodId": "api-key"}

    def test_an_auth_method_the_agent_does_not_list_is_refused_naming_those_it_does(self) -> None:
        methods = [{"id": "oauth", "name": "Log in"}]
        rig = Rig([Script([])], init=Initialize(auth_methods=methods), auth_method="api-key")
        with pytest.raises(ProviderCapabilityError, match="lists oauth"):
            rig.turn()
        rig.close()

    def test_authentication_required_is_an_auth_failure(self) -> None:
        rig = Rig([Script([], error=(-32000, "Authentication required"))])
        with pytest.raises(CliExitError) as caught:
            rig.turn()
        rig.close()
        assert caught.value.kind is FailureKind.AUTH


class TestClientMethods:
    def test_reads_inside_the_workspace_are_served_and_others_refused(self, tmp_path: Path) -> None:
        (tmp_path / "a.txt").write_text("one\ntwo\nthree\n")
        outside = tmp_path.parent / f"{tmp_path.name}-outside.txt"
        outside.write_text("secret")
        os.symlink(outside, tmp_path / "link.txt")
        frames = [
            ask(1, "fs/read_text_file", path=str(tmp_path / "a.txt"), line=2, limit=1),
            ask(2, "fs/read_text_file", path=str(outside)),
            ask(3, "fs/read_text_file", path=str(tmp_path / "link.txt")),
            ask(4, "fs/read_text_file", path="a.txt"),
            text("read"),
        ]
        rig = Rig([Script(frames)], cwd=tmp_path, client=AcpClientMethods(read_files=True))
        result, _ = rig.turn()
        rig.close()
        outside.unlink()
        assert result.text == "read"
        assert rig.answer(1)["result"] == {"content": "two\n"}
        for refused in (2, 3, 4):
            assert "error" in rig.answer(refused)
        assert "outside" in rig.answer(3)["error"]["message"]
        # The capability was advertised, and only it.
        init = rig.agent.received[0]["params"]["clientCapabilities"]
        assert init["fs"] == {"readTextFile": True, "writeTextFile": False}

    def test_writes_go_to_the_approvals_and_stay_in_the_workspace(self, tmp_path: Path) -> None:
        def only_b(request: ApprovalRequest) -> ApprovalDecision:
            path = str(request.args["path"])
            return (
                ApprovalDecision.allow() if path.endswith("b.txt") else ApprovalDecision.deny("no")
            )

        frames = [
            ask(1, "fs/write_text_file", path=str(tmp_path / "b.txt"), content="B"),
            ask(2, "fs/write_text_file", path=str(tmp_path / "c.txt"), content="C"),
            text("wrote"),
        ]
        client = AcpClientMethods(write_files=True)
        rig = Rig([Script(frames)], cwd=tmp_path, client=client, approvals=only_b)
        rig.turn()
        rig.close()
        assert (tmp_path / "b.txt").read_text() == "B"
        assert not (tmp_path / "c.txt").exists()
        assert rig.answer(1)["result"] == {}
        assert rig.answer(2)["error"]["message"] == "no"

    def test_elicitation_is_answered_by_the_callers_handler(self) -> None:
        seen: list[Any] = []

        def handler(params: Any) -> dict[str, Any]:
            seen.append(params["message"])
            return {"action": "accept", "content": {"name": "x"}}

        schema = {"type": "object", "properties": {"name": {"type": "string"}}}
        frames = [
            ask(1, "elicitation/create", mode="form", message="Name?", requestedSchema=schema),
            text("thanks"),
        ]
        rig = Rig([Script(frames)], client=AcpClientMethods(elicitation=handler))
        rig.turn()
        rig.close()
        assert seen == ["Name?"]
        assert rig.answer(1)["result"] == {"action": "accept", "content": {"name": "x"}}

    @pytest.mark.parametrize(
        "method",
        ["fs/read_text_file", "fs/write_text_file", "terminal/create", "elicitation/create"],
    )
    def test_a_method_not_turned_on_is_refused_and_the_turn_says_so(self, method: str) -> None:
        rig = Rig([Script([ask(1, method, path="/work/x", command="ls"), text("ok")])])
        with pytest.raises(ProviderCapabilityError, match=method):
            rig.turn()
        rig.close()
        assert rig.answer(1)["error"]["code"] == -32601

    def test_an_agents_cancel_request_is_noted(self) -> None:
        cancel = {"jsonrpc": "2.0", "method": "$/cancel_request", "params": {"requestId": 7}}
        rig = Rig([Script([cancel, text("ok")])])
        _, events = rig.turn()
        rig.close()
        assert events.lifecycle("request_cancelled") == ["7"]


# -- any sequence of valid updates ---------------------------------------------------------

_IDS = st.sampled_from(["t1", "t2", "t3"])
_CHUNK = st.text(alphabet="abc xyz.", min_size=1, max_size=6)


def _step() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        _CHUNK.map(
            lambda chunk: {
                "sessionUpdate": "agent_message_chunk",
                "content": {"type": "text", "text": chunk},
            }
        ),
        _CHUNK.map(
            lambda chunk: {
                "sessionUpdate": "agent_thought_chunk",
                "content": {"type": "text", "text": chunk},
            }
        ),
        st.builds(
            lambda tool_id, title: {
                "sessionUpdate": "tool_call",
                "toolCallId": tool_id,
                "title": title,
                "kind": "execute",
                "status": "pending",
            },
            _IDS,
            _CHUNK,
        ),
        st.builds(
            lambda tool_id, status: {
                "sessionUpdate": "tool_call_update",
                "toolCallId": tool_id,
                "status": status,
            },
            _IDS,
            st.sampled_from(["pending", "in_progress", "completed", "failed"]),
        ),
        st.just({"sessionUpdate": "plan", "entries": []}),
        st.just({"sessionUpdate": "current_mode_update", "currentModeId": "m"}),
        st.just({"sessionUpdate": "usage_update", "used": 1, "size": 2}),
    )


@given(st.lists(_step(), max_size=25))
def test_any_sequence_of_updates_pairs_tool_events_and_answers_with_streamed_text(
    steps: list[dict[str, Any]],
) -> None:
    rig = Rig([Script([update(step) for step in steps])])
    result, events = rig.turn()
    rig.close()
    calls = [e.tool_id for e in events.of_type(ToolCall)]
    results = [e.tool_id for e in events.of_type(ToolResult)]
    assert sorted(calls) == sorted(results)
    assert len(set(calls)) == len(calls)
    for tool_id in calls:
        started = next(
            i for i, e in enumerate(events) if isinstance(e, ToolCall) and e.tool_id == tool_id
        )
        ended = next(
            i for i, e in enumerate(events) if isinstance(e, ToolResult) and e.tool_id == tool_id
        )
        assert started < ended
    streamed = "".join(
        step["content"]["text"] for step in steps if step["sessionUpdate"] == "agent_message_chunk"
    )
    assert result.text in streamed
    assert result.text == "".join(e.text for e in events.of_type(AssistantText))
    assert not events.lifecycle("unknown_update")
    assert all(not isinstance(e, Lifecycle) or e.kind != "malformed_update" for e in events)


class TestSessions:
    def test_close_closes_the_agents_session_when_it_offers_it(self) -> None:
        rig = Rig([Script([text("ok")])])
        rig.turn()
        rig.close()
        assert [f.get("method") for f in rig.agent.received][-1] == "session/close"

    def test_list_sessions_reads_every_page(self) -> None:
        rig = Rig([])
        pages = iter(
            [
                {
                    "sessions": [{"sessionId": "s1", "cwd": "/a", "title": "one"}],
                    "nextCursor": "p2",
                },
                {"sessions": [{"sessionId": "s2", "cwd": "/b"}]},
            ]
        )
        original = rig.agent.on_stdin

        def on_stdin(raw: str) -> Any:
            if '"session/list"' in raw:
                import json

                from .schema_agent import line

                frame = json.loads(raw)
                rig.agent.received.append(frame)
                return [line({"jsonrpc": "2.0", "id": frame["id"], "result": next(pages)})]
            return original(raw)

        rig.agent.on_stdin = on_stdin  # type: ignore[method-assign]
        sessions = rig.conversation.list_sessions()  # type: ignore[attr-defined]
        rig.close()
        assert [(s.session_id, s.cwd, s.title) for s in sessions] == [
            ("s1", "/a", "one"),
            ("s2", "/b", ""),
        ]
        cursors = [
            f["params"].get("cursor")
            for f in rig.agent.received
            if f.get("method") == "session/list"
        ]
        assert cursors == [None, "p2"]


class TestPromptContent:
    def test_attachments_go_as_blocks_the_agent_takes(self) -> None:
        rig = Rig([Script([text("seen")])])
        request = TurnRequest(
            "look",
            attachments=(
                PromptImage(b"\x89PNG", "image/png"),
                PromptLink("file:///work/a.py", "a.py"),
                PromptResource("file:///work/b.py", "print(2)", "text/x-python"),
            ),
        )
        assert rig.conversation.turn(request, RecordingEventHandler()).text == "seen"
        rig.close()
        (prompt,) = [f for f in rig.agent.received if f.get("method") == "session/prompt"]
        assert prompt["params"]["prompt"] == [
            {"type": "text", "text": "look"},
            {"type": "image", "data": "iVBORw==", "mimeType": "image/png"},
            {"type": "resource_link", "uri": "file:///work/a.py", "name": "a.py"},
            {
                "type": "resource",
                "resource": {
                    "uri": "file:///work/b.py",
                    "text": "print(2)",
                    "mimeType": "text/x-python",
                },
            },
        ]

    def test_an_image_for_an_agent_that_takes_none_is_refused_before_the_prompt(self) -> None:
        rig = Rig([Script([text("never")])], init=Initialize(agent_capabilities={}))
        request = TurnRequest("look", attachments=(PromptImage(b"x", "image/png"),))
        with pytest.raises(ProviderCapabilityError, match="images"):
            rig.conversation.turn(request, RecordingEventHandler())
        rig.close()
        assert "session/prompt" not in [f.get("method") for f in rig.agent.received]

    def test_other_transports_refuse_attachments(self) -> None:
        from agentshim.transport.fixed import refuse_fixed_changes

        spec = ConversationSpec(permissions=WRITE, approvals=allow)
        request = TurnRequest("x", attachments=(PromptLink("file:///a", "a"),))
        with pytest.raises(ProviderCapabilityError, match="attachments"):
            refuse_fixed_changes("Some CLI", request, spec)


class _Command(FakePeer):
    """A command a terminal runs: prints its output and exits, or runs until killed."""

    def __init__(self, argv: Sequence[str]) -> None:
        self.argv = list(argv)

    def on_start(self) -> Iterable[PeerOutput]:
        if self.argv[0] == "sleep":
            return ()
        return (StdoutLine("x" * 30 + "\n"), StdoutLine("tail\n"), ProcessExited(3))

    def on_terminate(self) -> Iterable[PeerOutput]:
        return (ProcessExited(-9),)


class TestTerminals:
    def _rig(self, frames: list[dict[str, Any]], **client: Any) -> tuple[Rig, list[_Command]]:
        commands: list[_Command] = []
        rig = Rig([Script(frames)], client=AcpClientMethods(terminal=True, **client))

        def spawn(request: SpawnRequest) -> FakePeer:
            commands.append(_Command(request.argv))
            return commands[-1]

        rig.commands = spawn
        return rig, commands

    def test_a_command_runs_through_the_executor_with_its_output_limited(self) -> None:
        frames = [
            ask(1, "terminal/create", command="make", args=["test"], outputByteLimit=10),
            ask(2, "terminal/wait_for_exit", terminalId="term_1"),
            ask(3, "terminal/output", terminalId="term_1"),
            ask(4, "terminal/release", terminalId="term_1"),
            ask(5, "terminal/create", command="make", cwd="/elsewhere"),
            text("ran"),
        ]
        rig, commands = self._rig(frames)
        result, _ = rig.turn()
        rig.close()
        assert result.text == "ran"
        assert commands[0].argv == ["make", "test"]
        assert rig.answer(1)["result"] == {"terminalId": "term_1"}
        assert rig.answer(2)["result"] == {"exitCode": 3, "signal": None}
        output = rig.answer(3)["result"]
        assert output["truncated"] is True
        assert output["output"].endswith("tail\n")
        assert len(output["output"].encode()) <= 10
        assert "outside" in rig.answer(5)["error"]["message"]
        assert len(commands) == 1

    def test_a_terminal_left_running_is_killed_when_the_turn_ends(self) -> None:
        frames = [ask(1, "terminal/create", command="sleep", args=["30"]), text("left it")]
        rig, _ = self._rig(frames)
        rig.turn()
        (command,) = [
            process
            for process, request in zip(rig.executor.processes, rig.executor.spawned, strict=True)
            if request.argv[0] == "sleep"
        ]
        assert command.returncode is not None
        rig.close()
