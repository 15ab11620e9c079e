"""Many worker processes sharing four conversations through one SqliteStore, one of them killed.

Each worker is its own interpreter with its own Agent on a FakeExecutor whose fake CLI turns
write ``start`` and ``end`` lines (conversation, pid, time) to one shared file. The file and
the store are then checked: no two turns of a conversation overlapped, the checkpoint counts
every turn that finished, and every turn either ran or failed with LeaseTimeoutError.
"""

from __future__ import annotations

import itertools
import signal
import subprocess
import textwrap
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from agentshim.state.sqlite_store import SqliteStore

from .worker_pool import reaped, reports, saved_turns, spawn

WORKERS = 8
TURNS = 50
KEYS = ("conv-a", "conv-b", "conv-c", "conv-d")
TTL_S = 3.0  # renewals every second: a loaded machine must not lose a lease
LIMIT_S = 60.0

WORKER = textwrap.dedent(
    """
    import json, os, sys, time, uuid

    from agentshim import LeaseTimeoutError, SqliteStore
    from agentshim.testing import scripted_turn
    from tests.unit.session.worker_pool import store_agent, take_turns

    db, record, workdir, index, turns, stall_at, ttl = sys.argv[1:8]
    index, turns, stall_at, ttl = int(index), int(turns), int(stall_at), float(ttl)
    keys = sys.argv[8:]
    out = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    current = {"key": "", "turn": 0}

    def note(kind):
        line = f"{kind} {current['key']} {os.getpid()} {time.time():.6f}\\n"
        os.write(out, line.encode())

    def fake_cli(request):
        argv = list(request.argv)
        resumed = argv[argv.index("--resume") + 1] if "--resume" in argv else None
        if current["turn"] == stall_at:
            note("stall")
            time.sleep(60)  # killed here, mid-turn, holding the conversation's lease
        note("start")
        time.sleep(0.002)
        note("end")
        session_id = resumed or f"{current['key']}-{uuid.uuid4().hex[:12]}"
        return scripted_turn("claude", text="ok", session_id=session_id)

    with SqliteStore(db) as store:
        agent = store_agent(fake_cli, store, store, lease_ttl=ttl, lease_timeout=15.0)
        counted = {LeaseTimeoutError: "lease"}
        outcomes = take_turns(
            agent, keys, workdir, current, index=index, turns=turns, counted=counted
        )
    print(json.dumps(outcomes))
    """
)


@dataclass(frozen=True)
class Run:
    starts: dict[str, list[tuple[float, int]]]
    intervals: dict[str, list[tuple[float, float, int]]]
    stalls: list[tuple[str, float, int]]
    outcomes: dict[int, dict[str, int]]
    checkpoints: dict[str, int]


def run_workers(tmp_path: Path, *, victim: int | None = None) -> tuple[Run, float]:
    db = tmp_path / "state.db"
    record = tmp_path / "turns.log"
    SqliteStore(db).close()  # created once, so the workers do not race to migrate it
    workers: list[subprocess.Popen[str]] = []
    for index in range(WORKERS):
        stall_at = TURNS // 3 if index == victim else -1
        argv = [str(db), str(record), str(tmp_path), str(index), str(TURNS), str(stall_at)]
        workers.append(spawn(WORKER, [*argv, str(TTL_S), *KEYS]))
    killed_at = 0.0
    with reaped(workers):
        if victim is not None:
            killed_at = kill_when_stalled(workers[victim], record)
        outcomes = reports(workers, killed=victim, limit_s=LIMIT_S, silent=True)
    with SqliteStore(db) as store:
        checkpoints = saved_turns(store, KEYS)
    return parse(record, outcomes, checkpoints), killed_at


def kill_when_stalled(victim: subprocess.Popen[str], record: Path) -> float:
    deadline = time.monotonic() + LIMIT_S
    while time.monotonic() < deadline:
        if record.exists() and f" {victim.pid} " in stall_lines(record):
            victim.send_signal(signal.SIGKILL)
            victim.wait()
            return time.time()
        time.sleep(0.01)
    raise AssertionError("the victim never reached its stalled turn")


def stall_lines(record: Path) -> str:
    return "".join(line for line in record.read_text().splitlines(True) if line.startswith("stall"))


def parse(record: Path, outcomes: dict[int, dict[str, int]], checkpoints: dict[str, int]) -> Run:
    starts: dict[str, list[tuple[float, int]]] = defaultdict(list)
    open_turns: dict[tuple[str, int], float] = {}
    intervals: dict[str, list[tuple[float, float, int]]] = defaultdict(list)
    stalls: list[tuple[str, float, int]] = []
    for line in record.read_text().splitlines():
        kind, key, pid_text, at_text = line.split()
        pid, at = int(pid_text), float(at_text)
        if kind == "start":
            starts[key].append((at, pid))
            open_turns[(key, pid)] = at
        elif kind == "end":
            intervals[key].append((open_turns.pop((key, pid)), at, pid))
        else:
            stalls.append((key, at, pid))
    assert not open_turns, f"turns that started and never ended: {open_turns}"
    return Run(dict(starts), dict(intervals), stalls, outcomes, checkpoints)


def assert_no_overlap(run: Run) -> None:
    for key, spans in run.intervals.items():
        spans = sorted(spans)
        for (_, end, pid), (start, _, next_pid) in itertools.pairwise(spans):
            assert start >= end, f"{key}: a turn of {next_pid} started before {pid}'s ended"


def assert_nothing_lost(run: Run, survivors: int) -> None:
    """Every survivor's turn ran or failed for its lease, and every finished turn was counted."""
    assert len(run.outcomes) == survivors
    for pid, outcome in run.outcomes.items():
        assert outcome["ran"] + outcome["lease"] == TURNS, (pid, outcome)
        assert outcome["ran"] == sum(
            1 for spans in run.intervals.values() for _, _, by in spans if by == pid
        ), f"{pid} reported turns that its fake CLI did not run"
    finished = {key: len(spans) for key, spans in run.intervals.items()}
    assert run.checkpoints == {key: finished.get(key, 0) for key in KEYS}


def test_eight_workers_share_four_conversations_without_overlap_or_lost_updates(
    tmp_path: Path,
) -> None:
    run, _ = run_workers(tmp_path)
    assert_no_overlap(run)
    assert_nothing_lost(run, WORKERS)
    assert sum(run.checkpoints.values()) == WORKERS * TURNS, "a turn failed for its lease"


def test_a_worker_killed_mid_turn_holds_its_conversation_until_its_lease_expires(
    tmp_path: Path,
) -> None:
    run, killed_at = run_workers(tmp_path, victim=3)
    assert_no_overlap(run)
    assert_nothing_lost(run, WORKERS - 1)
    [(key, stalled_at, _)] = run.stalls
    later = [at for at, _ in run.starts[key] if at > stalled_at]
    assert later, "nobody continued the conversation the killed worker held"
    # Its lease was renewed until the kill, so it held the conversation until then.
    assert min(later) > killed_at
    # Everyone else's turns ran: the lease expired well within their lease_timeout.
    assert all(outcome["lease"] == 0 for outcome in run.outcomes.values())
