"""What every ACP agent's live stream suite checks alike (opencode, Copilot CLI).

A suite subclasses :class:`AcpStreamChecks` next to its own tests and gives it the ``live``
fixture (``tests/live/streams.py``); the checks assert only what the ACP client promises for
every agent: an interrupt that kills the running tool and keeps the process, an API failure
classified with the session kept, and no steer.
"""

from __future__ import annotations

import time

import pytest

from agentshim.core.errors import CliExitError, FailureKind, ProviderCapabilityError
from agentshim.core.events import TurnInterrupted
from agentshim.testing.model_server import Hang, HttpError, Rule, Text

from .streams import Background, Live, model_asked, run_processes, tool_then_text, wait_for

TURN_TIMEOUT = 120.0
#: How long an interrupted turn may take to come back.
PROMPT_RETURN_S = 5.0
#: How long to wait for something the CLI starts (a tool's ``sleep``) to show up.
SEEN_WITHIN_S = 60.0
#: The agents wait between their own retries of a failed call as the answer says.
FAST_RETRY = {"retry-after-ms": "50"}

HELLO = "Hello from the stream."
AFTER_TOOL = "The command ran."


class AcpStreamChecks:
    """The checks every ACP agent's live suite runs on its own pinned CLI."""

    def test_interrupt_during_sleep_returns_fast_kills_the_sleep_and_keeps_the_process(
        self, live: Live
    ) -> None:
        live.script(*tool_then_text("sleep 30", AFTER_TOOL))
        home = live.rig.cli.home
        with live.session() as session:
            running = Background(lambda: session.turn("Sleep for a while.").result)
            wait_for(lambda: bool(run_processes(home, "sleep 30")), SEEN_WITHIN_S, "sleep 30")
            interrupted_at = time.monotonic()
            session.interrupt()
            result = running.join(PROMPT_RETURN_S + TURN_TIMEOUT)
            assert running.ended_at is not None
            took = running.ended_at - interrupted_at
            assert result.interrupted
            assert any(isinstance(e, TurnInterrupted) for e in live.events)
            assert took < PROMPT_RETURN_S, f"the interrupted turn took {took:.2f} s to return"
            wait_for(lambda: not run_processes(home, "sleep 30"), 3.0, "the sleep ending")

            live.script(Rule(respond=Text(HELLO)))
            after = session.turn("Now just say hello.").result
        assert after.text == HELLO
        assert not after.interrupted
        assert after.session_id == result.session_id
        assert len(live.executor.spawned) == 1

    @pytest.mark.parametrize(
        ("status", "kind"), [(500, FailureKind.TRANSIENT), (401, FailureKind.AUTH)]
    )
    def test_an_api_failure_is_classified_and_the_session_survives(
        self, live: Live, status: int, kind: FailureKind
    ) -> None:
        live.script(Rule(respond=HttpError(status, headers=FAST_RETRY)))
        with live.session() as session:
            with pytest.raises(CliExitError) as caught:
                session.turn("Fail, please.")
            assert caught.value.kind is kind
            live.script(Rule(respond=Text(HELLO)))
            assert session.turn("Say hello.").result.text == HELLO
        assert len(live.executor.spawned) == 1

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
