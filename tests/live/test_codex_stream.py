"""Live: Codex's app-server transport, one ``codex app-server`` process per session, run as
``streams.py`` says with the shared checks of ``stream_checks.py``, and Codex's own: usage per
turn, approvals, threads resumed (or missing), API failures and structured output.

Run with ``pytest tests/live/test_codex_stream.py``; skipped when the pinned codex is not
installed.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import FailureKind, SessionResumeError
from agentshim.core.events import ApprovalAnswered
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.doctor.model_server import (
    HttpError,
    Match,
    Rule,
    StructuredOutput,
    Text,
    Usage,
)

from .stream_checks import InterruptChecks, SteerChecks, api_failure_takes_the_next_turn
from .streams import (
    AFTER_TOOL,
    HELLO,
    NEEDS_PROC,
    PROMPT_RETURN_S,
    Live,
    suite_fixtures,
    tool_then_text,
    wait_for,
)

pytestmark = NEEDS_PROC

rig, live = suite_fixtures("codex")

SCHEMA = {
    "type": "object",
    "properties": {"answer": {"type": "string"}, "count": {"type": "integer"}},
    "required": ["answer", "count"],
    "additionalProperties": False,
}


class TestStreamChecks(InterruptChecks, SteerChecks):
    """The checks long-lived transports share, on Codex's app-server."""

    # Codex leaves the command running after turn/interrupt: the transport ends it before
    # the interrupted turn returns.
    tool_ends_within_s = 0.0
    short_tool = "sleep 3"
    short_tool_seen = "sleep 3"


# -- two turns, one process ------------------------------------------------------------------


def test_two_turns_run_on_one_process_with_their_own_usage(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO, usage=Usage(1200, 40, cache_read=1000, reasoning=8))))
    with live.session() as session:
        first = session.turn("Say hello.").result
        second = session.turn("Say hello again.").result
    assert first.text == second.text == HELLO
    argvs = live.executor.argvs
    assert len(argvs) == 1, f"expected one process for two turns, spawned: {argvs}"
    assert argvs[0][1] == "app-server"
    assert first.session_id
    assert second.session_id == first.session_id
    assert not first.resumed
    assert second.resumed
    for result in (first, second):
        assert result.usage.tokens.input_tokens == 1200
        assert result.usage.tokens.cache_read_input_tokens == 1000
        assert result.usage.tokens.output_tokens == 40
        assert result.context_window is not None
        assert result.context_window > 0
        assert result.context_tokens == 1200


# -- approvals -------------------------------------------------------------------------------


def test_approvals_accept_runs_the_command_and_decline_does_not(live: Live) -> None:
    asked: list[ApprovalRequest] = []

    def decide(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        command = str(request.args.get("command", ""))
        if "approved.txt" in command:
            return ApprovalDecision.allow()
        return ApprovalDecision.deny("not this one")

    agent = live.agent(permissions=NativePermissions.workspace_write(), approvals=decide)
    with live.session(agent) as session:
        live.script(*tool_then_text("touch approved.txt"))
        accepted = session.turn("Touch a file.").result
        live.script(*tool_then_text("touch declined.txt"))
        declined = session.turn("Touch another file.").result
    assert accepted.text == declined.text == AFTER_TOOL
    assert (live.work / "approved.txt").exists()
    assert not (live.work / "declined.txt").exists()
    assert [r.tool for r in asked] == ["command_execution", "command_execution"]
    answers = [e.allowed for e in live.events if isinstance(e, ApprovalAnswered)]
    assert answers == [True, False]


# -- resume ----------------------------------------------------------------------------------


def test_a_thread_resumes_in_a_new_process_with_its_history(live: Live) -> None:
    live.script(
        Rule(match=Match(assistant_turns=0), respond=Text("Noted: MANGOSTEEN.")),
        Rule(respond=Text(HELLO)),
    )
    with live.session() as session:
        first = session.turn("Remember the word MANGOSTEEN.").result
        session.release()
        wait_for(lambda: not live.cli_pids(), PROMPT_RETURN_S, "the released process ending")
        after = session.turn("Which word?").result
    assert after.text == HELLO
    assert after.session_id == first.session_id
    assert after.resumed
    assert "MANGOSTEEN" in live.main_bodies()[-1], "the new process did not carry the history"
    assert len(live.executor.spawned) == 2
    # The resumed thread replays its stored total; the turn counts only its own request.
    assert after.usage.tokens.input_tokens == first.usage.tokens.input_tokens


def test_resuming_a_thread_codex_does_not_have_raises_session_resume_error(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    missing = "00000000-0000-7000-8000-000000000000"
    spec = ConversationSpec(
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        cwd=str(live.work),
        resume_session_id=missing,
    )
    conversation = live.agent().transport.open(spec)
    try:
        with pytest.raises(SessionResumeError) as failed:
            conversation.turn(TurnRequest("Say hello."), live.events.append)
    finally:
        conversation.close()
    assert failed.value.session_id == missing
    assert not live.main_bodies(), "the refused resume reached the model"


# -- failures ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (HttpError(500), FailureKind.TRANSIENT),
        (HttpError.context_overflow(), FailureKind.CONTEXT_OVERFLOW),
        (HttpError(401), FailureKind.AUTH),
    ],
    ids=["500", "400-context", "401"],
)
def test_an_api_failure_is_classified_and_the_process_takes_the_next_turn(
    live: Live, answer: HttpError, kind: FailureKind
) -> None:
    api_failure_takes_the_next_turn(live, answer, kind)
    if kind is not FailureKind.CONTEXT_OVERFLOW:
        # (A session forgets a conversation whose context overflowed: that one starts anew.)
        assert len(live.executor.spawned) == 1, live.executor.argvs


# -- structured output -------------------------------------------------------------------------


def test_an_output_schema_gives_the_structured_answer(live: Live, tmp_path: Path) -> None:
    live.script(Rule(respond=StructuredOutput({"answer": "hello", "count": 2})))
    with live.session() as session:
        request = TurnRequest("Answer.", output_schema=OutputSchema(SCHEMA, tmp_path))
        result = session.turn(request).result
    assert result.structured_output == {"answer": "hello", "count": 2}
    assert '"json_schema"' in live.main_bodies()[-1]
