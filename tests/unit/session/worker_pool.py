"""Worker interpreters for the tests that share one store between processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agentshim import Agent, ApprovalPolicy, NativePermissions
from agentshim.core.portability import ConversationPorter
from agentshim.core.session_policy import Continuity
from agentshim.execution.executor import CommandRequest
from agentshim.session import Session
from agentshim.state.checkpoints import CheckpointStore
from agentshim.state.leases import ConversationLeases
from agentshim.testing import FakeExecutor, FakeRun

REPO = Path(__file__).resolve().parents[3]


def store_agent(
    fake_cli: Callable[[CommandRequest], FakeRun],
    store: CheckpointStore,
    leases: ConversationLeases,
    **options: Any,
) -> Agent:
    """A worker's Claude Agent: its CLI is ``fake_cli``; checkpoints and leases go to the store."""
    return Agent(
        "claude",
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        executor=FakeExecutor(fake_cli),
        env={"PATH": os.environ.get("PATH", os.defpath)},
        checkpoints=store,
        leases=leases,
        **options,
    )


def take_turns(
    agent: Agent,
    keys: Sequence[str],
    cwd: str,
    current: dict[str, Any],
    *,
    index: int,
    turns: int,
    counted: Mapping[type[Exception], str],
    porter: ConversationPorter | None = None,
) -> dict[str, int]:
    """Runs a worker's turns, each on the conversation after the last, starting at ``index``.

    One session a key, closed at the end. ``current`` names the running turn's key and number
    (the fake CLI reads them). Returns how many turns ran, how many of those imported their
    conversation, and how many failed with each error in ``counted``, under its name; any
    other error fails the worker.
    """
    sessions = {key: agent.start_session(cwd, checkpoint_key=key, porter=porter) for key in keys}
    try:
        return _round_robin(sessions, keys, current, index, turns, counted)
    finally:
        for session in sessions.values():
            session.close()


def _round_robin(
    sessions: Mapping[str, Session],
    keys: Sequence[str],
    current: dict[str, Any],
    index: int,
    turns: int,
    counted: Mapping[type[Exception], str],
) -> dict[str, int]:
    outcomes = {"ran": 0, "imported": 0, **dict.fromkeys(counted.values(), 0)}
    for turn in range(turns):
        current["key"] = keys[(index + turn) % len(keys)]
        current["turn"] = turn
        try:
            done = sessions[current["key"]].turn("next step")
        except tuple(counted) as error:
            outcomes[counted[type(error)]] += 1
            continue
        outcomes["ran"] += 1
        outcomes["imported"] += done.continuity is Continuity.IMPORTED
    return outcomes


def spawn(script: str, argv: Sequence[str]) -> subprocess.Popen[str]:
    """Starts ``python -c script *argv`` with this checkout importable and its output captured."""
    return subprocess.Popen(
        [sys.executable, "-c", script, *argv],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


@contextmanager
def reaped(workers: Sequence[subprocess.Popen[str]]) -> Iterator[None]:
    """On leaving, kills and waits for every worker still running (a failed test leaves none)."""
    try:
        yield
    finally:
        for worker in workers:
            if worker.poll() is None:
                worker.kill()
                worker.wait()


def reports(
    workers: Sequence[subprocess.Popen[str]],
    *,
    killed: int | None,
    limit_s: float,
    silent: bool = False,
) -> dict[int, dict[str, int]]:
    """Waits for the workers and returns, by pid, the JSON each surviving one printed.

    The worker at index ``killed`` must have died of SIGKILL; every other one must exit 0
    (and, when ``silent``, write nothing on stderr).
    """
    outputs = {worker.pid: worker.communicate(timeout=limit_s) for worker in workers}
    outcomes: dict[int, dict[str, int]] = {}
    for index, worker in enumerate(workers):
        stdout, stderr = outputs[worker.pid]
        if index == killed:
            assert worker.returncode == -signal.SIGKILL
            continue
        assert worker.returncode == 0, stderr
        if silent:
            assert stderr == ""
        outcomes[worker.pid] = json.loads(stdout)
    return outcomes


def saved_turns(store: CheckpointStore, keys: Sequence[str]) -> dict[str, int]:
    """How many turns the checkpoint of each key in ``store`` counts (0 where none is saved)."""
    counts: dict[str, int] = {}
    for key in keys:
        saved = store.load(key)
        counts[key] = saved.turns if saved is not None else 0
    return counts
