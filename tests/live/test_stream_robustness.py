"""Live: every long-lived transport survives what happens between and inside turns.

On each of the seven long-lived transports (Claude stream-json and TUI, Codex app-server,
Gemini, opencode and Copilot over ACP, Pi rpc), on the real pinned CLI against the model
server:

- a CLI killed with SIGKILL while its conversation is idle costs no turn: the next turn
  starts a new process, resumes the conversation by id and says so (``RESUMED``);
- an interrupt while a tool runs leaves nothing that tool started running, whatever its
  shape: exec'd by the shell, put in the background after ``setsid``, ``nohup``'d next to a
  grandchild of a subshell;
- a turn silent for seconds (a ``sleep`` running, Python tools offered where the transport
  takes them) wakes its reader a handful of times, not every 50 ms.

Run one transport at a time with ``pytest tests/live/test_stream_robustness.py -k codex``.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest

from agentshim.core.session_policy import Continuity
from agentshim.core.tools import tool
from agentshim.doctor.model_server import Rule, Text
from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.process import SpawnRequest
from agentshim.execution.pty_process import PtySize

from .streams import (
    HELLO,
    LONG_LIVED_TRANSPORTS,
    NEEDS_PROC,
    PROMPT_RETURN_S,
    SEEN_WITHIN_S,
    TURN_TIMEOUT,
    CountingExecutor,
    Live,
    StreamRig,
    exited,
    live_test,
    run_processes,
    stream_rig,
    tool_then_text,
    wait_for,
)

pytestmark = NEEDS_PROC

#: Tool commands that each leave something behind a plain process-group kill, by the part of
#: a command line that shows them running.
SHAPES = {
    "execd": ("python3 -c 'import time; time.sleep(71)'", "time.sleep(71)", ("time.sleep(71)",)),
    "setsid": (
        "setsid sleep 72 >/dev/null 2>&1 & sleep 73",
        "sleep 73",
        ("sleep 72", "sleep 73"),
    ),
    "nohup": (
        "nohup sleep 74 >/dev/null 2>&1 & (sleep 75; true)",
        "sleep 75",
        ("sleep 74", "sleep 75"),
    ),
}


@pytest.fixture(
    scope="module",
    name="rig",
    params=LONG_LIVED_TRANSPORTS,
    ids=[f"{p}-{t.value}" for p, t in LONG_LIVED_TRANSPORTS],
)
def _rig(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[StreamRig]:
    provider, transport = request.param
    yield from stream_rig(provider, tmp_path_factory, transport)


@pytest.fixture(name="live")
def _live(rig: StreamRig, request: pytest.FixtureRequest) -> Iterator[Live]:
    yield from live_test(rig, request)


def _next_minute_for_gemini(live: Live) -> None:
    # Gemini CLI loses a session loaded in the wall-clock minute it was created in.
    if live.rig.provider == "gemini":
        time.sleep(61.0 - time.time() % 60.0)


def test_a_cli_killed_while_idle_costs_no_turn_and_the_turn_says_resumed(live: Live) -> None:
    live.script(Rule(respond=Text(HELLO)))
    with live.session() as session:
        first = session.turn("Say hello.")
        (pid,) = live.cli_pids()
        # An operator's kill -9 of the CLI (and of the native binary a launcher script runs).
        os.killpg(pid, signal.SIGKILL)
        # Dead as its parent sees it (a /proc entry can vanish a moment before).
        wait_for(lambda: exited(pid), 10.0, "the CLI dying")
        _next_minute_for_gemini(live)
        second = session.turn("Say hello again.")
    assert second.result.text == HELLO, live.events
    assert second.session_id == first.session_id
    assert second.continuity is Continuity.RESUMED, [
        (type(e).__name__, getattr(e, "kind", ""), str(getattr(e, "detail", ""))[:80])
        for e in live.events
        if type(e).__name__ in ("RunStarted", "Lifecycle", "SessionStarted")
    ]
    assert second.result.respawned
    assert len(live.executor.spawned) == 2
    assert live.lifecycle("process_respawned")


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_an_interrupt_during_a_tool_leaves_nothing_it_started(live: Live, shape: str) -> None:
    command, seen, needles = SHAPES[shape]
    live.script(*tool_then_text(command))
    with live.session() as session:
        running = live.tool_turn(session, "Run the command.", seen)
        for needle in needles:
            wait_for(lambda needle=needle: live.running(needle), SEEN_WITHIN_S, needle)
        session.interrupt()
        result = running.join(PROMPT_RETURN_S + TURN_TIMEOUT)
        left = {n: run_processes(live.rig.cli.home, n) for n in needles}
        assert result.interrupted
        assert not any(left.values()), f"still running after the turn returned: {left}"
        assert live.cli_pids(), "the interrupt keeps the CLI"


def test_codex_app_server_forks_a_conversation(live: Live) -> None:
    if live.rig.provider != "codex":
        pytest.skip("the fork over thread/fork is Codex's app-server")
    live.script(Rule(respond=Text(HELLO)))
    agent = live.agent()
    with live.session(agent) as source:
        first = source.turn("Say hello.")
    fork = agent.start_session(str(live.work), session_id=first.session_id, fork=True)
    with fork:
        forked = fork.turn("Say hello again.")
    assert forked.result.text == HELLO
    assert forked.session_id not in (None, first.session_id)


class _CountingProcess:
    """A CLI process that counts the reads that woke its reader with nothing to read."""

    def __init__(self, process: Any) -> None:
        self.process = process
        self.empty_wakes = 0

    def next_output(self, timeout: float | None) -> Any:
        return self._counted(self.process.next_output(timeout))

    def read(self, timeout: float | None) -> Any:
        return self._counted(self.process.read(timeout))

    def _counted(self, output: Any) -> Any:
        """``output`` as read; a read that brought nothing (None, or no bytes) is counted."""
        self.empty_wakes += not output
        return output

    def __getattr__(self, name: str) -> Any:
        return getattr(self.process, name)


class WakeCountingExecutor(CountingExecutor):
    def spawn(self, request: SpawnRequest) -> Any:
        process = _CountingProcess(HostCommandExecutor.spawn(self, request))
        self.spawned.append((request, process))  # type: ignore[arg-type]
        return process

    def spawn_pty(self, request: SpawnRequest, size: PtySize | None = None) -> Any:
        process = _CountingProcess(HostCommandExecutor.spawn_pty(self, request, size))
        self.spawned.append((request, process))  # type: ignore[arg-type]
        return process


@tool
def echo(text: str) -> str:
    """Say ``text`` back."""
    return text


def test_a_silent_turn_wakes_its_reader_only_a_handful_of_times(live: Live) -> None:
    live.executor = WakeCountingExecutor()
    live.script(*tool_then_text("sleep 3"))
    session = live.agent().start_session(str(live.work), tools=(echo,))
    with session:
        running = live.tool_turn(session, "Run the command.", "sleep 3")
        (process,) = [p for _, p in live.executor.spawned]
        before = process.empty_wakes  # type: ignore[attr-defined]
        wait_for(lambda: not live.running("sleep 3"), SEEN_WITHIN_S, "the sleep ending")
        silent = process.empty_wakes - before  # type: ignore[attr-defined]
        result = running.join(TURN_TIMEOUT)
    assert result.text
    # Polling every 50 ms would be about 60 wakes in those 3 s.
    assert silent <= 6, f"the reader woke {silent} times with nothing to read in 3 s"
