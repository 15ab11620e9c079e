"""What Claude Code's live suites check alike on its stream-json and its TUI transport.

Both run the same pinned binary: :class:`ClaudeChecks` holds the checks whose behaviour is
Claude Code's own whichever way it is driven (an approval handler's allow, deny and
rewritten input; an interrupt during a tool), next to each suite's own tests.
"""

from __future__ import annotations

from typing import ClassVar

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.events import ApprovalAnswered, ApprovalRequested
from agentshim.core.permissions import NativePermissions

from .stream_checks import InterruptChecks
from .streams import AFTER_TOOL, Live, tool_then_text

__all__ = ["LONG_TOOL", "LONG_TOOL_SEEN", "ClaudeChecks"]

# Claude Code 2.1.332 refuses a standalone `sleep N` ("use Monitor or run_in_background"),
# so the tools that must run for a while sleep in Python; their command lines are unique.
LONG_TOOL = "python3 -c 'import time; time.sleep(30)'"
LONG_TOOL_SEEN = "time.sleep(30)"


class ClaudeChecks(InterruptChecks):
    """The checks both of Claude Code's long-lived transports pass."""

    long_tool: ClassVar[str] = LONG_TOOL
    long_tool_seen: ClassVar[str] = LONG_TOOL_SEEN
    #: Whether an approval request names the tool call it is about (its ``tool_id``).
    approvals_name_the_call: ClassVar[bool] = True

    def test_an_approval_handler_denies_allows_and_rewrites_touch(self, live: Live) -> None:
        # workspace_write() runs Claude Code in acceptEdits mode: a ``touch`` inside the
        # workspace is an edit it makes without asking, so the files go to a directory
        # outside it, which the CLI asks about (the handler's answer goes back to it).
        outside = live.outside()
        asked: list[ApprovalRequest] = []

        def decide(request: ApprovalRequest) -> ApprovalDecision:
            asked.append(request)
            command = str(request.args.get("command", ""))
            if "denied.txt" in command:
                return ApprovalDecision.deny("not that file")
            if "rewrite-me.txt" in command:
                rewritten = command.replace("rewrite-me.txt", "rewritten.txt")
                return ApprovalDecision.allow({**request.args, "command": rewritten})
            return ApprovalDecision.allow()

        agent = live.agent(permissions=NativePermissions.workspace_write(), approvals=decide)
        with live.session(agent) as session:
            for name in ("denied.txt", "allowed.txt", "rewrite-me.txt"):
                live.script(*tool_then_text(f"touch {outside / name}"))
                result = session.turn(f"Create {name}.").result
                assert result.text.endswith(AFTER_TOOL)
            asked_outside = len(asked)
            live.script(*tool_then_text("touch inside.txt"))
            session.turn("Create inside.txt.")
        assert sorted(p.name for p in outside.iterdir()) == ["allowed.txt", "rewritten.txt"]
        assert (live.work / "inside.txt").exists()
        assert asked_outside == len(asked) == 3, "the in-workspace touch was asked about"
        assert [r.tool for r in asked] == ["Bash", "Bash", "Bash"]
        if self.approvals_name_the_call:
            assert all(r.tool_id for r in asked)
        answers = [e for e in live.events if isinstance(e, ApprovalAnswered)]
        assert [a.allowed for a in answers] == [False, True, True]
        assert {a.decided_by for a in answers} == {"handler"}
        assert len([e for e in live.events if isinstance(e, ApprovalRequested)]) == 3
        denied_body = next(b for b in live.main_bodies() if "not that file" in b)
        assert "denied.txt" in denied_body
        assert len(live.executor.spawned) == 1
