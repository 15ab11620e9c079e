"""Live: Pi's rpc transport (``pi --mode rpc``) on the real pinned binary.

See ``streams.py`` for how a stream suite runs and ``stream_checks.py`` for the checks every
long-lived transport passes. ``pytest tests/live/test_pi_stream.py``; skipped without pi.
"""

from __future__ import annotations

import time

import pytest

from agentshim.core.conversation import TransportKind
from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.turn import TurnRequest
from agentshim.doctor.model_server import Match, RequestKind, Rule, Text

from .stream_checks import (
    ApiFailureChecks,
    InterruptChecks,
    ReopenChecks,
    SteerChecks,
)
from .streams import HELLO, NEEDS_PROC, Live, suite_fixtures

pytestmark = NEEDS_PROC

rig, live = suite_fixtures("pi")


class TestStreamChecks(InterruptChecks, SteerChecks, ApiFailureChecks, ReopenChecks):
    """The checks long-lived transports share, on Pi."""

    resume_flag = "--session"

    def assert_forked(self, argv: tuple[str, ...], session_id: str) -> None:
        assert argv[argv.index("--fork") + 1] == session_id


def test_two_turns_run_on_one_process_and_the_second_starts_fast(live: Live) -> None:
    one_shot_s = live.one_shot_seconds()
    spawned_before = len(live.executor.spawned)
    with live.session() as session:
        first = session.turn("Say hello.").result
        warm_started = time.monotonic()
        second = session.turn("Say hello again.").result
        warm_s = time.monotonic() - warm_started
    spawned = live.executor.argvs[spawned_before:]
    print(
        f"\npi rpc: one-shot turn {one_shot_s * 1000:.0f} ms; warm rpc turn {warm_s * 1000:.0f} ms"
    )
    assert first.text == second.text == HELLO
    assert len(spawned) == 1, f"expected one process for two turns, spawned: {spawned}"
    assert list(spawned[0][1:3]) == ["--mode", "rpc"]
    assert first.session_id
    assert second.session_id == first.session_id
    assert not first.resumed
    assert second.resumed
    assert second.usage.tokens.input_tokens > 0
    assert warm_s < 0.5 * one_shot_s, (warm_s, one_shot_s)


def test_a_model_pi_does_not_know_is_refused_before_the_turn_and_the_process_stays(
    live: Live,
) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session() as session:
        session.turn("Say hello.")
        before = len(live.server.requests)
        with pytest.raises(ProviderCapabilityError, match="Model not found"):
            session.turn(TurnRequest("Say hello.", model="no-such-model"))
        assert len(live.server.requests) == before, "the refused turn reached the model"
        again = session.turn(TurnRequest("Say hello.", model=live.rig.cli.model)).result
    assert again.text == HELLO
    assert len(live.executor.spawned) == 1


def test_a_one_shot_fork_carries_the_history_too(live: Live) -> None:
    # The profile's supports_fork covers both transports: one-shot turns fork with --fork too.
    live.script(
        Rule(match=Match(assistant_turns=0), respond=Text("Noted: MANGOSTEEN.")),
        Rule(match=Match(assistant_turns=1), respond=Text("You said MANGOSTEEN.")),
    )
    with live.session(live.agent(transport=TransportKind.ONE_SHOT)) as session:
        first = session.turn("Remember the word MANGOSTEEN.").result
        with session.fork() as forked:
            recalled = forked.turn("Which word?").result
    assert recalled.text == "You said MANGOSTEEN."
    assert recalled.session_id not in (None, first.session_id)


def test_warm_processes_take_a_new_conversation_then_a_resumed_one(live: Live) -> None:
    """``Agent.prewarm``: no spawn for either first turn; the resumed one has its history."""
    live.script(
        Rule(match=Match(assistant_turns=0), respond=Text("Noted: MANGOSTEEN.")),
        Rule(match=Match(assistant_turns=1), respond=Text("You said MANGOSTEEN.")),
    )
    agent = live.agent()
    try:
        agent.prewarm(1, cwd=str(live.work))
        warmed = len(live.executor.spawned)
        with live.session(agent) as session:
            first = session.turn("Remember the word MANGOSTEEN.").result
        taken_new = len(live.executor.spawned)
        live.server.clear_requests()
        agent.prewarm(1, cwd=str(live.work))
        rewarmed = len(live.executor.spawned)
        assert first.session_id
        with live.session(agent, session_id=first.session_id) as resumed:
            second = resumed.turn("Which word did I ask you to remember?").result
        taken_resumed = len(live.executor.spawned)
        bodies = [r.raw_body for r in live.server.requests if r.kind is RequestKind.MAIN]
    finally:
        agent.release_warm()
    assert warmed == 1, "prewarm started one process"
    assert taken_new == warmed, "the new conversation's first turn spawned a process"
    assert first.text == "Noted: MANGOSTEEN."
    assert rewarmed == taken_new + 1
    assert taken_resumed == rewarmed, "the resumed conversation's first turn spawned a process"
    assert second.text == "You said MANGOSTEEN."
    assert second.session_id == first.session_id
    assert bodies, "the resumed turn never reached the model"
    assert b"Remember the word MANGOSTEEN." in bodies[0], "the earlier turn was not carried"
