"""Live: Claude Code's stream transport, one ``claude -p --input-format stream-json`` process
per session, on the real pinned binary (set up as ``streams.py`` describes). The checks
long-lived transports share are in ``stream_checks.py``, those of both Claude transports in
``claude_checks.py``.

Run with ``pytest tests/live/test_claude_stream.py -s`` (``-s`` shows the measured start-up
figures); skipped when the pinned claude is not installed.
"""

from __future__ import annotations

import os
import signal
import threading
import time

import pytest

from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.errors import CliDiedError
from agentshim.core.events import AgentEvent, ApprovalAnswered
from agentshim.core.permissions import NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.doctor.model_server import RequestKind, Rule, Text

from .claude_checks import LONG_TOOL, LONG_TOOL_SEEN, ClaudeChecks
from .stream_checks import ReopenChecks, SteerChecks
from .streams import (
    AFTER_TOOL,
    HELLO,
    NEEDS_PROC,
    PROMPT_RETURN_S,
    SEEN_WITHIN_S,
    TURN_TIMEOUT,
    Background,
    Live,
    suite_fixtures,
    tool_then_text,
    wait_for,
)

pytestmark = NEEDS_PROC

rig, live = suite_fixtures("claude")


class TestStreamChecks(ClaudeChecks, SteerChecks, ReopenChecks):
    """The checks long-lived transports share, on Claude Code's stream-json process."""

    short_tool = "python3 -c 'import time; time.sleep(4)'"
    short_tool_seen = "time.sleep(4)"
    # The turn's text carries the words before the tool call too.
    text_spans_the_turn = True
    resume_flag = "--resume"

    def assert_forked(self, argv: tuple[str, ...], session_id: str) -> None:
        assert "--fork-session" in argv
        assert argv[argv.index("--resume") + 1] == session_id


def test_two_turns_run_on_one_process_and_the_second_starts_fast(live: Live) -> None:
    one_shot_s = live.one_shot_seconds()
    spawned_before = len(live.executor.spawned)
    first_event: list[tuple[float, str]] = []

    def on_event(event: AgentEvent) -> None:
        if not first_event:
            first_event.append((time.monotonic(), type(event).__name__))

    with live.session() as session:
        cold_started = time.monotonic()
        first = session.turn("Say hello.", on_event=on_event).result
        cold_s = time.monotonic() - cold_started
        cold_first_s, cold_name = first_event[0][0] - cold_started, first_event[0][1]
        first_event.clear()
        warm_started = time.monotonic()
        second = session.turn("Say hello again.", on_event=on_event).result
        warm_s = time.monotonic() - warm_started
        warm_first_s, warm_name = first_event[0][0] - warm_started, first_event[0][1]
    spawned = live.executor.argvs[spawned_before:]

    print(
        f"\nclaude stream start-up: one-shot turn {one_shot_s * 1000:.0f} ms wall; "
        f"stream turn 1 first event ({cold_name}) {cold_first_s * 1000:.0f} ms "
        f"(wall {cold_s * 1000:.0f} ms); stream turn 2 first event ({warm_name}) "
        f"{warm_first_s * 1000:.0f} ms (wall {warm_s * 1000:.0f} ms) "
        f"= {warm_first_s / one_shot_s:.1%} of the one-shot turn"
    )
    assert first.text == second.text == HELLO
    assert len(spawned) == 1, f"expected one process for two turns, spawned: {spawned}"
    assert "--input-format" in spawned[0]
    assert second.session_id == first.session_id
    assert not first.resumed
    assert second.resumed
    # The CLI's total_cost_usd runs over the process; each result carries its own turn's.
    assert first.cost_usd is not None
    assert first.cost_usd > 0
    assert second.cost_usd == pytest.approx(first.cost_usd)
    assert second.usage.tokens.input_tokens == first.usage.tokens.input_tokens > 0
    assert warm_first_s < 0.25 * one_shot_s, (
        f"the second turn's first event came {warm_first_s:.3f} s after it started, not under "
        f"25% of a one-shot turn ({one_shot_s:.3f} s)"
    )


# -- approvals through a handler (the one every Claude transport passes: claude_checks.py)


def test_interrupt_while_the_handler_decides_withdraws_the_request(live: Live) -> None:
    # The CLI withdraws the pending request (control_cancel_request) and ignores the late
    # allow, so the tool never runs; the process stays for the next turn.
    outside = live.outside()
    deciding = threading.Event()
    release = threading.Event()

    def decide(request: ApprovalRequest) -> ApprovalDecision:
        deciding.set()
        release.wait(TURN_TIMEOUT)
        return ApprovalDecision.allow()

    agent = live.agent(permissions=NativePermissions.workspace_write(), approvals=decide)
    live.script(*tool_then_text(f"touch {outside / 'late.txt'}"))
    with live.session(agent) as session:
        running = Background(lambda: session.turn("Create late.txt.").result)
        wait_for(deciding.is_set, SEEN_WITHIN_S, "the approval request")
        session.interrupt()
        time.sleep(0.5)  # the CLI's cancel and its interrupted result arrive meanwhile
        release.set()
        result = running.join(PROMPT_RETURN_S)
        assert result.interrupted
        live.script(Rule(respond=Text(HELLO)))
        after = session.turn("Say hello.").result
    assert after.text == HELLO
    assert list(outside.iterdir()) == [], "the withdrawn request's tool ran"
    assert live.lifecycle("control_cancel_request")
    assert len(live.executor.spawned) == 1


def test_a_handler_that_raises_denies(live: Live) -> None:
    outside = live.outside()

    def decide(request: ApprovalRequest) -> ApprovalDecision:
        raise RuntimeError("handler bug")

    agent = live.agent(permissions=NativePermissions.workspace_write(), approvals=decide)
    live.script(*tool_then_text(f"touch {outside / 'never.txt'}"))
    with live.session(agent) as session:
        result = session.turn("Create never.txt.").result
    assert result.text.endswith(AFTER_TOOL)
    assert list(outside.iterdir()) == []
    (answer,) = [e for e in live.events if isinstance(e, ApprovalAnswered)]
    assert not answer.allowed
    assert answer.decided_by == "handler_error"
    assert "handler bug" in answer.message


# -- model per turn, kill during a tool ----------------------------------------------


def test_a_turn_on_another_model_switches_in_band(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session() as session:
        session.turn("Say hello.")
        before = len(live.server.requests)
        switched = session.turn(TurnRequest("Say hello.", model="claude-sonnet-4-5")).result
    assert switched.text == HELLO
    models = {r.facts.model for r in live.server.requests[before:] if r.kind is RequestKind.MAIN}
    assert models == {"claude-sonnet-4-5"}, models
    assert live.lifecycle("model_switched")
    assert len(live.executor.spawned) == 1


def test_kill_9_during_a_tool_takes_the_tool_shell_with_it(live: Live) -> None:
    # Claude Code's tool shells run in a session of their own: killing the CLI does not
    # reach them, so agentshim ends them (found by the run marker) once the CLI is gone.
    live.script(*tool_then_text(LONG_TOOL))
    with live.session() as session:
        running = live.tool_turn(session, "Sleep for a while.", LONG_TOOL_SEEN)
        (pid,) = live.cli_pids()
        os.kill(pid, signal.SIGKILL)
        with pytest.raises(CliDiedError):
            running.join(PROMPT_RETURN_S)
        assert not live.running(LONG_TOOL_SEEN), "the tool's sleep outlived the CLI"
