"""No process the agent started survives a cancelled or timed-out turn, on every real CLI.

The model server answers every request with a shell call that sleeps 90 s, so the turn never
ends by itself. Once the sleep of the run is seen running (the CLIs' tool shells call
``setsid``, so it is in a session of its own, out of reach of the CLI's process group), the
turn is cancelled or left to time out; when ``turn`` has returned, not one process of the run
may be alive. Processes of the run are found by the run's HOME, which the CLI passes on to
every tool shell.

Run with ``pytest tests/live/test_reaping.py`` (a provider's tests are skipped when its binary
is not installed).
"""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentshim.core.errors import AgentShimError, CliTimeoutError
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.doctor.model_server import Match, Message, Rule, ToolCall

from .suite import Rig, live_processes, make_rig

pytestmark = pytest.mark.skipif(
    not Path("/proc/self/environ").exists(), reason="reaping is observed through /proc"
)

# Claude Code 2.1.332 refuses a leading `sleep N` of 25 s or more in its Bash tool before
# running anything ("Blocked: standalone sleep 90"), so the shell call sleeps in Python.
SLEEP = "time.sleep(90)"
FOREVER = (
    Rule(match=Match(), respond=Message((ToolCall(command=f"python3 -c 'import time; {SLEEP}'"),))),
)
# Long enough for the slowest CLI to start and call its shell tool; shorter than the sleep.
TURN_TIMEOUT = 45.0
# How long the test waits for the sleep to appear before it gives up.
SLEEP_SEEN_WITHIN = 60.0


def run_processes(home: Path) -> dict[int, str]:
    """Live processes whose environment has this run's HOME, with their command lines."""
    return {p.pid: p.cmdline for p in live_processes() if p.of_run(home)}


class Watcher:
    """Notes every process of the run while the turn is in flight, and when a sleep runs."""

    def __init__(self, home: Path) -> None:
        self.home = home
        self.seen: dict[int, str] = {}
        self.sleeping = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def __enter__(self) -> Watcher:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    def _watch(self) -> None:
        while not self._stop.is_set():
            now = run_processes(self.home)
            self.seen.update(now)
            if any(SLEEP in command for command in now.values()):
                self.sleeping.set()
            self._stop.wait(0.05)

    def survivors(self) -> dict[int, str]:
        """Processes of the run still alive (killed, once counted)."""
        alive = run_processes(self.home)
        for pid in alive:
            os.kill(pid, signal.SIGKILL)  # so one failure does not leak into the next test
        return alive


@pytest.fixture(scope="class", params=["claude", "codex", "gemini", "opencode", "copilot", "pi"])
def rig(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Rig]:
    """One provider's binary, HOME, model server and agent, shared by its tests."""
    provider: str = request.param
    yield from make_rig(provider, tmp_path_factory.mktemp(f"live-{provider}"))


class TestReaping:
    """Cancel and timeout mid-``sleep``, on each provider."""

    @pytest.fixture
    def live(self, rig: Rig, request: pytest.FixtureRequest) -> tuple[Rig, Path]:
        rig.server.set_script(FOREVER)
        rig.server.clear_requests()
        work = rig.root / "work" / request.node.originalname
        work.mkdir(parents=True)
        return rig, work

    def test_an_interrupted_turn_leaves_nothing_running(self, live: tuple[Rig, Path]) -> None:
        rig, work = live
        session = rig.agent.start_session(cwd=str(work), timeout=150.0)
        request = TurnRequest(prompt="Wait for the sleep.", extra_args=rig.cli.extra_args)
        errors: list[AgentShimError] = []
        results: list[TurnResult] = []

        def turn() -> None:
            try:
                results.append(session.turn(request))
            except AgentShimError as error:
                errors.append(error)

        with Watcher(rig.cli.home) as watcher:
            runner = threading.Thread(target=turn)
            runner.start()
            sleeping = watcher.sleeping.wait(SLEEP_SEEN_WITHIN)
            session.interrupt()
            runner.join(120)
            assert not runner.is_alive(), "the interrupted turn did not end"
            survivors = watcher.survivors()
        assert sleeping, f"no {SLEEP!r} ran within {SLEEP_SEEN_WITHIN} s: {watcher.seen}"
        assert errors == []
        assert len(results) == 1, results
        assert results[0].interrupted
        assert survivors == {}, f"{len(survivors)} process(es) survived the interrupt: {survivors}"

    def test_a_timed_out_turn_leaves_nothing_running(self, live: tuple[Rig, Path]) -> None:
        rig, work = live
        session = rig.agent.start_session(cwd=str(work), timeout=TURN_TIMEOUT)
        request = TurnRequest(prompt="Wait for the sleep.", extra_args=rig.cli.extra_args)
        started = time.monotonic()
        with Watcher(rig.cli.home) as watcher:
            with pytest.raises(CliTimeoutError):
                session.turn(request)
            survivors = watcher.survivors()
        assert watcher.sleeping.is_set(), (
            f"no {SLEEP!r} ran before the {TURN_TIMEOUT} s timeout: {watcher.seen}"
        )
        assert time.monotonic() - started < TURN_TIMEOUT + 30
        assert survivors == {}, f"{len(survivors)} process(es) survived the timeout: {survivors}"
