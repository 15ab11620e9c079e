"""Eight worker processes on two simulated hosts sharing four conversations through one PostgreSQL.

Each worker is its own interpreter with its own Agent on a FakeExecutor. A "host" is a
directory of CLI files that its four workers share: the fake CLI reads the conversation's
transcript there when it resumes (noting how many turns it holds) and appends its turn to it,
and a porter moves that file through the store, so a conversation continues whichever host
runs its next turn. Every turn writes ``start`` and ``end`` lines (conversation, pid, host,
time, turns seen) to one shared file, which is then checked against the store: no two turns
of a conversation overlapped, every turn saw all the turns before it (every host switch
resumed), and the checkpoints count every turn that finished.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import textwrap
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentshim.state.postgres_store import PostgresStore

from .worker_pool import reaped, reports, saved_turns, spawn

WORKERS = 8
HOSTS = ("host-a", "host-b")
TURNS = 20
KEYS = ("conv-a", "conv-b", "conv-c", "conv-d")
TTL_S = 3.0  # renewals every second: a loaded machine must not lose a lease
LIMIT_S = 90.0

WORKER = textwrap.dedent(
    """
    import json, os, sys, time, uuid

    from agentshim import LeaseLostError, LeaseTimeoutError, PostgresStore
    from agentshim.core.portability import ConversationState, StateFile, pack_state, unpack_state
    from agentshim.testing import scripted_turn
    from tests.unit.session.worker_pool import store_agent, take_turns

    uri, schema, record, hostdir, host, index, turns, stall_at, ttl = sys.argv[1:10]
    index, turns, stall_at, ttl = int(index), int(turns), int(stall_at), float(ttl)
    keys = sys.argv[10:]
    out = os.open(record, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    current = {"key": "", "turn": 0}

    def note(kind, seen=0):
        line = f"{kind} {current['key']} {os.getpid()} {host} {time.time():.6f} {seen}\\n"
        os.write(out, line.encode())

    def transcript(session_id):
        return os.path.join(hostdir, session_id + ".txt")

    class HostFiles:
        # The CLI's files on this host: one transcript per conversation.
        def export_blob(self, session_id, cwd):
            try:
                with open(transcript(session_id), "rb") as file:
                    data = file.read()
            except FileNotFoundError:
                return None
            files = (StateFile(f"t/{session_id}.txt", data),)
            return pack_state(ConversationState("claude", "1.0.0", session_id, cwd, files))

        def import_blob(self, blob, cwd):
            state = unpack_state(blob, "claude")
            staged = transcript(state.session_id) + f".{os.getpid()}"
            with open(staged, "wb") as file:
                file.write(state.files[0].data)
            os.replace(staged, transcript(state.session_id))
            return state.session_id

    def fake_cli(request):
        argv = list(request.argv)
        resumed = argv[argv.index("--resume") + 1] if "--resume" in argv else None
        session_id = resumed or f"{current['key']}-{uuid.uuid4().hex[:12]}"
        seen = 0
        if resumed:
            try:
                with open(transcript(resumed)) as file:
                    seen = len(file.read().splitlines())
            except FileNotFoundError:
                seen = -1  # the conversation's files are not on this host
        note("start", seen)
        if current["turn"] == stall_at:
            note("stall")
            # Held here, holding the lease, until the test lets it go (it has stopped it with
            # SIGSTOP and continued it by then) or kills it: opening a FIFO waits for a writer.
            os.close(os.open(record + ".release", os.O_RDONLY))
        with open(transcript(session_id), "a") as file:
            file.write(f"{os.getpid()} turn\\n")
        note("end")
        return scripted_turn("claude", text="ok", session_id=session_id)

    with PostgresStore(uri, schema=schema) as store:
        log = lambda line: print(line, file=sys.stderr)
        agent = store_agent(fake_cli, store, store, lease_ttl=ttl, lease_timeout=30.0, log=log)
        outcomes = take_turns(
            agent,
            keys,
            hostdir,
            current,
            index=index,
            turns=turns,
            counted={LeaseTimeoutError: "lease", LeaseLostError: "lost"},
            porter=HostFiles(),
        )
    print(json.dumps(outcomes))
    """
)


@dataclass(frozen=True)
class Turn:
    key: str
    pid: int
    host: str
    start: float
    end: float | None
    seen: int


@dataclass(frozen=True)
class Run:
    turns: list[Turn]
    stalls: list[tuple[str, float, int]]
    outcomes: dict[int, dict[str, int]]
    checkpoints: dict[str, int]


class Cluster:
    def __init__(self, root: Path, uri: str) -> None:
        self.root, self.uri = root, uri
        self.schema = f"hosts_{uuid.uuid4().hex[:12]}"
        self.record = root / "turns.log"
        self.release = root / "turns.log.release"
        os.mkfifo(self.release, 0o600)
        PostgresStore(uri, schema=self.schema).close()  # migrated once, before the workers
        for host in HOSTS:
            (root / host).mkdir()

    def start(self, stall: int | None) -> list[subprocess.Popen[str]]:
        workers = []
        for index in range(WORKERS):
            host = HOSTS[index % len(HOSTS)]
            argv = [self.uri, self.schema, str(self.record), str(self.root / host), host]
            stall_at = TURNS // 3 if index == stall else -1
            argv += [str(index), str(TURNS), str(stall_at), str(TTL_S), *KEYS]
            workers.append(spawn(WORKER, argv))
        return workers

    def finish(self, workers: list[subprocess.Popen[str]], killed: int | None = None) -> Run:
        with reaped(workers):
            outcomes = reports(workers, killed=killed, limit_s=LIMIT_S)
        with PostgresStore(self.uri, schema=self.schema) as store:
            checkpoints = saved_turns(store, KEYS)
        return parse(self.record, outcomes, checkpoints)

    def let_the_stalled_turn_go(self) -> None:
        """End the stalled turn's wait (its worker is waiting for a writer on the FIFO)."""
        os.close(os.open(self.release, os.O_WRONLY))

    def wait_for_stall(self, pid: int) -> float:
        deadline = time.monotonic() + LIMIT_S
        while time.monotonic() < deadline:
            if self.record.exists():
                for line in self.record.read_text().splitlines():
                    if line.startswith("stall") and line.split()[2] == str(pid):
                        return float(line.split()[4])
            time.sleep(0.01)
        raise AssertionError("the victim never reached its stalled turn")

    def wait_for_takeover(self, key: str, after: float) -> None:
        deadline = time.monotonic() + LIMIT_S
        while time.monotonic() < deadline:
            for line in self.record.read_text().splitlines():
                kind, k, _, _, at, _ = line.split()
                if kind == "start" and k == key and float(at) > after:
                    return
            time.sleep(0.01)
        raise AssertionError("nobody took over the stopped worker's conversation")


def parse(record: Path, outcomes: dict[int, dict[str, int]], checkpoints: dict[str, int]) -> Run:
    started: dict[tuple[str, int], tuple[float, str, int]] = {}
    turns: list[Turn] = []
    stalls: list[tuple[str, float, int]] = []
    for line in record.read_text().splitlines():
        kind, key, pid_text, host, at_text, seen_text = line.split()
        pid, at = int(pid_text), float(at_text)
        if kind == "start":
            started[(key, pid)] = (at, host, int(seen_text))
        elif kind == "end":
            start, host_of, seen = started.pop((key, pid))
            turns.append(Turn(key, pid, host_of, start, at, seen))
        else:
            stalls.append((key, at, pid))
    for (key, pid), (start, host, seen) in started.items():
        turns.append(Turn(key, pid, host, start, None, seen))  # killed mid-turn
    return Run(sorted(turns, key=lambda t: t.start), stalls, outcomes, checkpoints)


def by_key(turns: list[Turn]) -> dict[str, list[Turn]]:
    grouped: dict[str, list[Turn]] = defaultdict(list)
    for turn in turns:
        grouped[turn.key].append(turn)
    return grouped


def assert_no_overlap(turns: list[Turn]) -> None:
    for key, spans in by_key(turns).items():
        for first, second in itertools.pairwise(spans):
            assert first.end is not None, f"{key}: a turn of {first.pid} never ended"
            assert second.start >= first.end, (
                f"{key}: a turn of {second.pid} started before {first.pid}'s ended"
            )


def assert_every_turn_saw_the_ones_before(turns: list[Turn]) -> None:
    """Every resumed turn found every earlier turn in its transcript, on whichever host."""
    for key, spans in by_key(turns).items():
        for position, turn in enumerate(spans):
            assert turn.seen == position, (
                f"{key}: turn {position} on {turn.host} saw {turn.seen} earlier turns"
            )


@pytest.fixture
def cluster(tmp_path: Path, postgres_uri: str) -> Cluster:
    return Cluster(tmp_path, postgres_uri)


def test_eight_workers_on_two_hosts_share_four_conversations(cluster: Cluster) -> None:
    run = cluster.finish(cluster.start(stall=None))
    assert_no_overlap(run.turns)
    assert_every_turn_saw_the_ones_before(run.turns)
    ends = {key: len(spans) for key, spans in by_key(run.turns).items()}
    assert run.checkpoints == ends
    assert sum(ends.values()) == WORKERS * TURNS
    assert all(o["ran"] == TURNS and o["lost"] == 0 for o in run.outcomes.values())
    switches = sum(
        first.host != second.host
        for spans in by_key(run.turns).values()
        for first, second in itertools.pairwise(spans)
    )
    assert switches > 0, "no conversation ever moved to the other host"
    assert sum(o["imported"] for o in run.outcomes.values()) >= switches


def test_a_stopped_worker_past_its_lease_has_its_turn_stopped_and_writes_refused(
    cluster: Cluster,
) -> None:
    workers = cluster.start(stall=2)
    victim = workers[2]
    stalled_at = cluster.wait_for_stall(victim.pid)
    victim.send_signal(signal.SIGSTOP)
    (key,) = {
        line.split()[1]
        for line in cluster.record.read_text().splitlines()
        if line.startswith("stall")
    }
    try:
        cluster.wait_for_takeover(key, stalled_at)
    finally:
        victim.send_signal(signal.SIGCONT)
    cluster.let_the_stalled_turn_go()
    run = cluster.finish(workers)
    assert run.outcomes[victim.pid]["lost"] == 1, "the stopped worker's turn was not refused"
    (stale,) = [
        t
        for t in run.turns
        if t.pid == victim.pid and t.key == key and t.start <= stalled_at <= (t.end or 0)
    ]
    assert stale.end is not None
    assert any(t.key == key and stale.start < t.start < stale.end for t in run.turns), (
        "nobody ran in the conversation while its holder was stopped"
    )
    fresh = [t for t in run.turns if t is not stale]
    assert_no_overlap(fresh)
    ends = {k: len(spans) for k, spans in by_key(fresh).items()}
    assert run.checkpoints == ends, "the stopped worker's refused turn was counted"


def test_a_killed_worker_leaves_the_others_to_carry_on(cluster: Cluster) -> None:
    workers = cluster.start(stall=5)
    cluster.wait_for_stall(workers[5].pid)
    workers[5].send_signal(signal.SIGKILL)
    workers[5].wait()
    run = cluster.finish(workers, killed=5)
    finished = [t for t in run.turns if t.end is not None]
    assert_no_overlap(finished)
    assert_every_turn_saw_the_ones_before(finished)
    assert run.checkpoints == {k: len(spans) for k, spans in by_key(finished).items()}
    assert all(o["ran"] == TURNS for o in run.outcomes.values())
