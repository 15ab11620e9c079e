"""Live: opencode's ACP transport on the real pinned binary, against the model server.

Every test runs ``Agent("opencode", transport=TransportKind.STREAM)`` on the real
``HostCommandExecutor``: one long-lived ``opencode acp`` process per session, offline
(``agentshim.testing.offline``), the model scripted per test. What is asserted is what a
user sees: results, errors, files the agent wrote, the processes that ran (counted at
``spawn``, found in ``/proc`` by the run's HOME) and what the model was sent.

Run with ``pytest tests/live/test_opencode_stream.py``; skipped when the pinned opencode is
not installed.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.events import ApprovalAnswered
from agentshim.core.permissions import NativePermissions
from agentshim.testing.model_server import (
    Match,
    Message,
    Rule,
    Text,
    ToolCall,
)

from .acp_stream_checks import (
    AFTER_TOOL,
    HELLO,
    AcpStreamChecks,
)
from .streams import (
    Live,
    StreamRig,
    live_test,
    stream_rig,
    tool_then_text,
)

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/environ").exists(), reason="the run's processes are found through /proc"
)

PROVIDER = "opencode"


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StreamRig]:
    yield from stream_rig(PROVIDER, tmp_path_factory)


@pytest.fixture
def live(rig: StreamRig, request: pytest.FixtureRequest) -> Iterator[Live]:
    yield from live_test(rig, request)


def _tool_then_text(command: str, text: str = AFTER_TOOL) -> tuple[Rule, ...]:
    return tool_then_text(command, text)


def test_two_turns_run_on_one_process_and_the_second_starts_fast(live: Live) -> None:
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
    assert first.session_id.startswith("ses_")
    assert first.usage.tokens.input_tokens > 0
    assert first.usage.increment_known
    ((request, _),) = live.executor.spawned
    assert request.argv[1:] == ("acp",)
    assert json.loads(request.env["OPENCODE_PERMISSION"])["*"] == "allow"
    assert second_s < 10.0, f"the second turn took {second_s:.1f} s on a running process"


def test_an_approval_handler_denies_then_allows_touch(live: Live) -> None:
    # workspace_write() asks about every shell command (OPENCODE_PERMISSION bash: ask): each
    # comes as a session/request_permission, decided by the handler.
    asked: list[ApprovalRequest] = []

    def decide(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        if "denied.txt" in request.tool:
            return ApprovalDecision.deny("not that file")
        return ApprovalDecision.allow()

    agent = live.agent(permissions=NativePermissions.workspace_write(), approvals=decide)
    with live.session(agent) as session:
        live.script(*_tool_then_text("touch denied.txt"))
        session.turn("Create denied.txt.")
        live.script(*_tool_then_text("touch allowed.txt"))
        allowed = session.turn("Create allowed.txt.").result
    assert allowed.text.endswith(AFTER_TOOL)
    assert not (live.work / "denied.txt").exists()
    assert (live.work / "allowed.txt").exists()
    assert [r.tool for r in asked] == ["touch denied.txt", "touch allowed.txt"]
    assert [a.allowed for a in live.events if isinstance(a, ApprovalAnswered)] == [False, True]
    assert len(live.executor.spawned) == 1


@pytest.mark.parametrize(
    ("permissions", "written"),
    [(NativePermissions.workspace_write(), True), (NativePermissions.read_only(), False)],
    ids=["workspace_write", "read_only"],
)
def test_native_permissions_decide_whether_an_edit_runs(
    live: Live, permissions: NativePermissions, written: bool
) -> None:
    # workspace_write() lets edits in the workspace run unasked; read_only() refuses them.
    asked: list[ApprovalRequest] = []

    def deny(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision.deny("no")

    target = live.work / "made.txt"
    edit = ToolCall(tool="write", arguments={"filePath": str(target), "content": "made\n"})
    live.script(
        Rule(
            match=Match(last_input_is_tool_result=False),
            respond=Message((Text("Writing it."), edit)),
        ),
        Rule(match=Match(last_input_is_tool_result=True), respond=Text(AFTER_TOOL)),
    )
    with live.session(live.agent(permissions=permissions, approvals=deny)) as session:
        session.turn("Write made.txt.")
    assert target.exists() is written
    if written:
        assert asked == []


def test_a_session_resumes_in_a_new_process_of_a_new_agent(live: Live) -> None:
    live.script(
        Rule(match=Match(assistant_turns=0), respond=Text("Noted: MANGOSTEEN.")),
        Rule(respond=Text("You said MANGOSTEEN.")),
    )
    with live.session() as session:
        first = session.turn("Remember MANGOSTEEN.").result
    assert first.session_id is not None
    with live.session(session_id=first.session_id) as again:
        second = again.turn("What did I say?").result
    assert second.text == "You said MANGOSTEEN."
    assert second.resumed
    assert second.session_id == first.session_id
    assert len(live.executor.spawned) == 2
    # The answer's rule needs an assistant turn in the request: the history was sent.


class TestAcpChecks(AcpStreamChecks):
    """The checks every ACP agent passes, on opencode."""
