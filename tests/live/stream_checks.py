"""What the live suites of long-lived transports check alike, each on its own pinned CLI.

A suite subclasses the classes whose checks its transport passes (``class TestStreamChecks(
InterruptChecks, StallChecks, ...)``) next to its own tests, gives them the ``live`` fixture
(``tests/live/streams.py``) and sets the class attributes that say how its CLI differs (the
command a long tool runs, the flag that resumes a conversation...). Every check asserts what
a user sees: results, errors and their kind, events, the processes that ran and what the
model was sent.
"""

from __future__ import annotations

import time
from typing import ClassVar

import pytest

from agentshim.core.errors import CliExitError, FailureKind, TurnStalledError
from agentshim.core.events import TurnInterrupted
from agentshim.doctor.model_server import Hang, HttpError, Match, Rule, Text

from .streams import (
    AFTER_TOOL,
    FAST_RETRY,
    HELLO,
    PROMPT_RETURN_S,
    TURN_TIMEOUT,
    Live,
    tool_then_text,
    wait_for,
)

__all__ = [
    "ApiFailureChecks",
    "InterruptChecks",
    "ReopenChecks",
    "StallChecks",
    "SteerChecks",
    "api_failure_takes_the_next_turn",
]

#: The first turn of a conversation whose history a later turn must carry.
REMEMBER = Rule(match=Match(assistant_turns=0), respond=Text("Noted: MANGOSTEEN."))


class InterruptChecks:
    """An interrupt during a running tool: the turn returns fast, the tool ends, the process stays."""

    #: The shell command that runs for a while, and what of its command line shows it running.
    long_tool: ClassVar[str] = "sleep 30"
    long_tool_seen: ClassVar[str] = "sleep 30"
    #: How long the interrupted tool may take to end after the turn returned.
    tool_ends_within_s: ClassVar[float] = 3.0

    def test_interrupt_during_sleep_returns_fast_kills_the_sleep_and_keeps_the_process(
        self, live: Live
    ) -> None:
        live.script(*tool_then_text(self.long_tool))
        seen = self.long_tool_seen
        with live.session() as session:
            running = live.tool_turn(session, "Sleep for a while.", seen)
            interrupted_at = time.monotonic()
            session.interrupt()
            result = running.join(PROMPT_RETURN_S + TURN_TIMEOUT)
            assert running.ended_at is not None
            took = running.ended_at - interrupted_at
            assert result.interrupted
            assert any(isinstance(e, TurnInterrupted) for e in live.events)
            assert took < PROMPT_RETURN_S, f"the interrupted turn took {took:.2f} s to return"
            wait_for(lambda: not live.running(seen), self.tool_ends_within_s, "the sleep ending")

            live.script(Rule(respond=Text(HELLO)))
            after = session.turn("Now just say hello.").result
        assert after.text == HELLO
        assert not after.interrupted
        assert after.session_id == result.session_id
        assert len(live.executor.spawned) == 1, live.executor.argvs


def api_failure_takes_the_next_turn(live: Live, answer: HttpError, kind: FailureKind) -> None:
    """A turn the model answers ``answer`` fails as ``kind``; the session takes the next turn."""
    live.script(Rule(respond=answer))
    with live.session() as session:
        with pytest.raises(CliExitError) as failed:
            session.turn("Fail, please.")
        assert failed.value.kind is kind, failed.value
        live.script(Rule(respond=Text(HELLO)))
        assert session.turn("Say hello.").result.text == HELLO


class ApiFailureChecks:
    """A failed model call is classified, and the same process takes the next turn."""

    @pytest.mark.parametrize(
        ("status", "kind"), [(500, FailureKind.TRANSIENT), (401, FailureKind.AUTH)]
    )
    def test_an_api_failure_is_classified_and_the_process_takes_the_next_turn(
        self, live: Live, status: int, kind: FailureKind
    ) -> None:
        api_failure_takes_the_next_turn(live, HttpError(status, headers=FAST_RETRY), kind)
        assert len(live.executor.spawned) == 1, live.executor.argvs


class StallChecks:
    """A turn the model never answers stalls; the same process takes the next turn."""

    stall_s: ClassVar[float] = 3.0

    def test_a_silent_turn_stalls_and_the_process_takes_the_next_turn(self, live: Live) -> None:
        stall_s = self.stall_s
        live.script(Rule(respond=Hang(60.0), times=1), Rule(respond=Text(HELLO)))
        with live.session(live.agent(stall_timeout=stall_s)) as session:
            started = time.monotonic()
            with pytest.raises(TurnStalledError) as stalled:
                session.turn("Say nothing for a while.")
            took = time.monotonic() - started
            assert stalled.value.silent_s is not None
            assert stalled.value.silent_s >= stall_s
            assert took < stall_s + PROMPT_RETURN_S + 10.0, f"the stalled turn took {took:.1f} s"
            after = session.turn("Say hello.").result
        assert after.text == HELLO
        assert len(live.executor.spawned) == 1, live.executor.argvs


class SteerChecks:
    """A steer sent while a tool runs reaches the model inside the same turn."""

    #: A shell command that runs for a few seconds, and what of its command line shows it.
    short_tool: ClassVar[str] = "sleep 4"
    short_tool_seen: ClassVar[str] = "sleep 4"
    #: Whether a turn's text holds what the model said before its tool call too.
    text_spans_the_turn: ClassVar[bool] = False

    def test_steer_during_a_tool_reaches_the_model_inside_the_same_turn(self, live: Live) -> None:
        steer_text = "STEER-MARKER also mention a banana"
        live.script(*tool_then_text(self.short_tool))
        with live.session() as session:
            running = live.tool_turn(session, "Sleep a little.", self.short_tool_seen)
            session.steer(steer_text)
            result = running.join(TURN_TIMEOUT)
            if self.text_spans_the_turn:
                assert result.text.endswith(AFTER_TOOL)
            else:
                assert result.text == AFTER_TOOL
            assert not result.interrupted
            assert steer_text in live.lifecycle("steered")
            assert steer_text in live.main_bodies()[-1], "the model never saw the steer"
            # One result only: the next turn meets nothing left over from the steered one.
            live.events.clear()
            live.script(Rule(respond=Text(HELLO)))
            after = session.turn("Say hello.").result
        assert after.text == HELLO
        leftovers = live.lifecycle("between_turns")
        assert leftovers == [], f"output after the steered turn ended: {leftovers}"
        assert len(live.executor.spawned) == 1


class ReopenChecks:
    """A conversation continues by its id in a new process: after a release, and as a fork.

    (A kill mid-turn is the long-lived contract's, in ``test_long_lived_contract.py``.)
    """

    #: The flag whose value is the id of the conversation a new process resumes.
    resume_flag: ClassVar[str]

    def assert_forked(self, argv: tuple[str, ...], session_id: str) -> None:
        """That ``argv`` starts a fork of conversation ``session_id``."""
        raise NotImplementedError

    def resumed_id(self, argv: tuple[str, ...]) -> str:
        return argv[argv.index(self.resume_flag) + 1]

    def test_a_released_conversation_reopens_by_id(self, live: Live) -> None:
        live.script(Rule(respond=Text(HELLO)))
        with live.session() as session:
            first = session.turn("Say hello.").result
            session.release()
            wait_for(lambda: not live.cli_pids(), PROMPT_RETURN_S, "the released process ending")
            after = session.turn("Say hello again.").result
        assert after.session_id == first.session_id
        assert after.resumed
        argvs = live.executor.argvs
        assert len(argvs) == 2, argvs
        assert self.resumed_id(argvs[1]) == first.session_id

    def test_a_fork_starts_a_new_conversation_from_the_history(self, live: Live) -> None:
        live.script(
            REMEMBER, Rule(match=Match(assistant_turns=1), respond=Text("You said MANGOSTEEN."))
        )
        with live.session() as session:
            first = session.turn("Remember the word MANGOSTEEN.").result
            with session.fork() as forked:
                recalled = forked.turn("Which word?").result
        assert recalled.text == "You said MANGOSTEEN.", "the fork did not carry the history"
        assert recalled.session_id
        assert first.session_id
        assert recalled.session_id != first.session_id
        self.assert_forked(live.executor.argvs[-1], first.session_id)
