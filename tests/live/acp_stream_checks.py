"""What every ACP agent's live stream suite checks alike (Gemini CLI, opencode, Copilot CLI).

A suite subclasses :class:`AcpStreamChecks` (and :class:`AcpEditChecks` where its agent's
permission modes decide edits) next to its own tests, gives it the ``live`` fixture
(``tests/live/streams.py``) and says how its agent differs (what it spawns, how it names a
shell tool asking for approval). The checks assert what the ACP client promises for every
agent: two turns on one process, an interrupt that kills the running tool and keeps the
process, an API failure classified with the session kept, no steer, a session loaded by a
new agent, and approvals decided by the handler.
"""

from __future__ import annotations

import time
from typing import ClassVar

import pytest

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.events import ApprovalAnswered
from agentshim.core.permissions import NativePermissions
from agentshim.core.turn import TurnResult
from agentshim.doctor.model_server import Hang, Match, Message, Rule, Text, ToolCall
from agentshim.execution.process import SpawnRequest

from .stream_checks import ApiFailureChecks, InterruptChecks
from .streams import (
    AFTER_TOOL,
    HELLO,
    PROMPT_RETURN_S,
    SEEN_WITHIN_S,
    TURN_TIMEOUT,
    Background,
    Live,
    model_asked,
    tool_then_text,
    wait_for,
)

__all__ = ["AcpEditChecks", "AcpStreamChecks"]


class AcpStreamChecks(InterruptChecks, ApiFailureChecks):
    """The checks every ACP agent's live suite runs on its own pinned CLI."""

    #: Whether the agent replays a loaded session's history (kept out of the turn).
    replays_history: ClassVar[bool] = False
    #: Whether a denied shell command ends the turn (no answer after it).
    a_denial_ends_the_turn: ClassVar[bool] = True

    def check_spawn(self, request: SpawnRequest, first: TurnResult) -> None:
        """What the agent's own process and first result look like."""
        raise NotImplementedError

    def approval_tool(self, command: str) -> str:
        """The tool an approval request for shell ``command`` names."""
        return command

    def before_load(self) -> None:
        """What to wait for before a new agent loads a session another one created."""

    def test_two_turns_run_on_one_process_and_the_second_starts_fast(self, live: Live) -> None:
        live.script(Rule(respond=Text(HELLO)))
        with live.session() as session:
            first = session.turn("Say hello.").result
            started = time.monotonic()
            second = session.turn("Say hello again.").result
            second_s = time.monotonic() - started
        assert (first.text, second.text) == (HELLO, HELLO)
        assert (first.resumed, second.resumed) == (False, True)
        assert first.session_id == second.session_id
        assert first.session_id is not None
        assert first.usage.tokens.input_tokens > 0
        ((request, _),) = live.executor.spawned
        self.check_spawn(request, first)
        assert second_s < 10.0, f"the second turn took {second_s:.1f} s on a running process"

    def test_steer_is_refused(self, live: Live) -> None:
        live.script(Rule(respond=Hang(30.0), times=1), Rule(respond=Text(HELLO)))
        with live.session() as session:
            running = Background(lambda: session.turn("Think.").result)
            # The turn runs once the model is asked (a cold start takes seconds).
            wait_for(lambda: model_asked(live.server), SEEN_WITHIN_S, "the model call")
            with pytest.raises(ProviderCapabilityError):
                session.steer("more")
            session.interrupt()
            assert running.join(PROMPT_RETURN_S + TURN_TIMEOUT).interrupted

    def test_a_session_loads_in_a_new_process_of_a_new_agent(self, live: Live) -> None:
        live.script(
            Rule(match=Match(assistant_turns=0), respond=Text("Noted: MANGOSTEEN.")),
            Rule(respond=Text("You said MANGOSTEEN.")),
        )
        with live.session() as session:
            first = session.turn("Remember MANGOSTEEN.").result
        assert first.session_id is not None
        self.before_load()
        with live.session(session_id=first.session_id) as again:
            second = again.turn("What did I say?").result
        # The answer's rule needs an assistant turn in the request: the history was sent.
        assert second.text == "You said MANGOSTEEN."
        assert second.resumed
        assert second.session_id == first.session_id
        assert len(live.executor.spawned) == 2
        if self.replays_history:
            # Its replay before the load response reached no turn.
            assert live.lifecycle("replay_suppressed")

    def test_an_approval_handler_denies_then_allows_touch(self, live: Live) -> None:
        # Under workspace_write() the agent asks about a shell command such as touch, as a
        # session/request_permission the handler decides.
        asked: list[ApprovalRequest] = []

        def decide(request: ApprovalRequest) -> ApprovalDecision:
            asked.append(request)
            if "denied.txt" in request.tool:
                return ApprovalDecision.deny("not that file")
            return ApprovalDecision.allow()

        agent = live.agent(permissions=NativePermissions.workspace_write(), approvals=decide)
        with live.session(agent) as session:
            live.script(*tool_then_text("touch denied.txt"))
            denied = session.turn("Create denied.txt.").result
            if not self.a_denial_ends_the_turn:
                assert denied.text.endswith(AFTER_TOOL)
            live.script(*tool_then_text("touch allowed.txt"))
            allowed = session.turn("Create allowed.txt.").result
        assert allowed.text.endswith(AFTER_TOOL)
        assert not (live.work / "denied.txt").exists()
        assert (live.work / "allowed.txt").exists()
        tools = [self.approval_tool("touch denied.txt"), self.approval_tool("touch allowed.txt")]
        assert [r.tool for r in asked] == tools
        assert [a.allowed for a in live.events if isinstance(a, ApprovalAnswered)] == [False, True]
        assert len(live.executor.spawned) == 1


class AcpEditChecks:
    """The agent's own permission modes decide whether an edit runs, unasked."""

    def edit_call(self, target: str) -> ToolCall:
        """The agent's file-writing tool call that writes ``made\\n`` to ``target``."""
        raise NotImplementedError

    @pytest.mark.parametrize(
        ("permissions", "written"),
        [(NativePermissions.workspace_write(), True), (NativePermissions.read_only(), False)],
        ids=["workspace_write", "read_only"],
    )
    def test_native_permissions_decide_whether_an_edit_runs(
        self, live: Live, permissions: NativePermissions, written: bool
    ) -> None:
        # workspace_write() lets edits in the workspace run unasked; read_only() refuses them.
        asked: list[ApprovalRequest] = []

        def deny(request: ApprovalRequest) -> ApprovalDecision:
            asked.append(request)
            return ApprovalDecision.deny("no")

        target = live.work / "made.txt"
        live.script(
            Rule(
                match=Match(last_input_is_tool_result=False),
                respond=Message((Text("Writing it."), self.edit_call(str(target)))),
            ),
            Rule(match=Match(last_input_is_tool_result=True), respond=Text(AFTER_TOOL)),
        )
        with live.session(live.agent(permissions=permissions, approvals=deny)) as session:
            session.turn("Write made.txt.")
        assert target.exists() is written
        if written:
            assert asked == []
