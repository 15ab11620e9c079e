"""Live: two conversations on one shared CLI process, for every CLI that can serve several.

``Agent(..., transport=TransportKind.LONG_LIVED, share_processes=ProcessSharing())`` on the real
pinned Codex (app-server threads), Gemini CLI, opencode and Copilot CLI (ACP sessions),
offline against the model server. One test per CLI: two conversations run interleaved turns
on one process; one is interrupted while the other finishes its turn; then the shared
process (its whole process group) is killed with SIGKILL, and both conversations resume on a
new process, each with its own history. For Codex, an interrupt ends the commands of the
interrupted conversation's thread only.

Run with ``pytest tests/live/test_shared_processes.py``; a CLI that is not installed is
skipped.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator

import pytest

from agentshim.core.errors import CliDiedError
from agentshim.core.sharing import ProcessSharing
from agentshim.doctor.model_server import Hang, Match, Message, Rule, Text, ToolCall
from agentshim.session import Session

from .streams import (
    NEEDS_PROC,
    SEEN_WITHIN_S,
    TURN_TIMEOUT,
    Background,
    Live,
    StreamRig,
    live_test,
    model_asked,
    stream_rig,
    wait_for,
)

pytestmark = NEEDS_PROC

ALPHA = "alpha-one alpha-two alpha-three."
BETA = "beta-one beta-two beta-three."


@pytest.fixture(scope="module", params=["codex", "gemini", "opencode", "copilot"])
def rig(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StreamRig]:
    yield from stream_rig(request.param, tmp_path_factory)


@pytest.fixture
def live(rig: StreamRig, request: pytest.FixtureRequest) -> Iterator[Live]:
    yield from live_test(rig, request)


def answer(session: Session, prompt: str) -> Background:
    return Background(lambda: session.turn(prompt).result)


def test_two_conversations_share_one_process_through_interrupt_and_crash(live: Live) -> None:
    streamed = {"chunk_size": 4, "delay_per_chunk": 0.05}
    live.script(
        # A request's user text holds the conversation's history: the later prompts come first.
        Rule(match=Match(user_text_contains="AGAIN-A"), respond=Text(ALPHA)),
        Rule(match=Match(user_text_contains="AGAIN-B"), respond=Text(BETA)),
        Rule(match=Match(user_text_contains="HANG"), respond=Hang(60.0, after_text="thinking")),
        Rule(match=Match(user_text_contains="ALPHA"), respond=Text(ALPHA, **streamed)),
        Rule(match=Match(user_text_contains="BETA"), respond=Text(BETA, **streamed)),
    )
    agent = live.agent(share_processes=ProcessSharing())
    with live.session(agent) as first, live.session(agent) as second:
        # Interleaved turns: both run at once on one process.
        alpha, beta = (
            answer(first, "ALPHA: say the alpha words."),
            answer(second, "BETA: say the beta words."),
        )
        assert alpha.join(TURN_TIMEOUT).text == ALPHA
        assert beta.join(TURN_TIMEOUT).text == BETA
        assert len(live.executor.spawned) == 1
        assert first.session_id != second.session_id

        # An interrupt of one while the other finishes its turn.
        live.server.clear_requests()
        hanging = answer(first, "HANG: wait for it.")
        wait_for(lambda: model_asked(live.server), 60.0, "the hanging turn's model request")
        other = answer(second, "BETA: again.")
        first.interrupt()
        assert hanging.join(TURN_TIMEOUT).interrupted
        finished = other.join(TURN_TIMEOUT)
        assert finished.text == BETA
        assert not finished.interrupted

        # SIGKILL of the shared process's group: both conversations go on in a new process.
        (_, process) = live.executor.spawned[0]
        os.killpg(process.pid, signal.SIGKILL)
        for session, prompt, text in (
            (first, "AGAIN-A: once more.", ALPHA),
            (second, "AGAIN-B: once more.", BETA),
        ):
            try:
                result = session.turn(prompt).result
            except CliDiedError:
                result = session.turn(prompt).result  # the turn that met the dead process
            assert result.text == text
        assert len(live.executor.spawned) == 2
        assert first.session_id != second.session_id
        # Each resumed conversation carries its own history, and not the other's.
        bodies = live.main_bodies()
        again_a = [body for body in bodies if "AGAIN-A" in body]
        again_b = [body for body in bodies if "AGAIN-B" in body]
        assert again_a
        assert again_b
        assert all("ALPHA: say" in b and "BETA: say" not in b for b in again_a)
        assert all("BETA: say" in b and "ALPHA: say" not in b for b in again_b)


def test_codex_reaps_only_the_interrupted_threads_commands(live: Live) -> None:
    if live.rig.provider != "codex":
        pytest.skip("the per-thread tool marker is Codex's")
    live.script(
        Rule(
            match=Match(user_text_contains="ALPHA", last_input_is_tool_result=False),
            respond=Message((Text("Running it."), ToolCall(command="sleep 301"))),
        ),
        Rule(
            match=Match(user_text_contains="BETA", last_input_is_tool_result=False),
            respond=Message((Text("Running it."), ToolCall(command="sleep 302"))),
        ),
        Rule(match=Match(last_input_is_tool_result=True), respond=Text("slept")),
    )
    agent = live.agent(share_processes=ProcessSharing())
    with live.session(agent) as first, live.session(agent) as second:
        alpha = answer(first, "ALPHA: sleep.")
        beta = answer(second, "BETA: sleep.")
        wait_for(lambda: live.running("sleep 301"), SEEN_WITHIN_S, "sleep 301")
        wait_for(lambda: live.running("sleep 302"), SEEN_WITHIN_S, "sleep 302")
        first.interrupt()
        assert alpha.join(TURN_TIMEOUT).interrupted
        wait_for(
            lambda: not live.running("sleep 301"), 5.0, "the interrupted thread's sleep ending"
        )
        # The other conversation's command on the same process is left running.
        assert live.running("sleep 302")
        assert len(live.executor.spawned) == 1
        second.interrupt()
        assert beta.join(TURN_TIMEOUT).interrupted
        wait_for(lambda: not live.running("sleep 302"), 5.0, "the second sleep ending")
