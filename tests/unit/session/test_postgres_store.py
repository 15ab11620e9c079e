"""PostgresStore against a real PostgreSQL: the shared contracts, its schema, and waiting in line."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator

import pytest

from agentshim.core.errors import InvalidRequestError, LeaseTimeoutError, StoreError
from agentshim.state.checkpoints import Checkpoint, CheckpointStore
from agentshim.state.leases import ConversationLeases, LeaseHolder
from agentshim.state.postgres_store import POSTGRES_SCHEMA_VERSION, PostgresStore
from agentshim.testing._liveness import HANG_GUARD_S
from agentshim.testing.contracts import CheckpointStoreContract, LeasesContract


class _Stores:
    """Stores on a schema of their own per test, closed after it."""

    @pytest.fixture(autouse=True)
    def _schema(self, postgres_uri: str) -> Iterator[None]:
        self.uri = postgres_uri
        self.schema = f"t_{uuid.uuid4().hex[:16]}"
        self.stores: list[PostgresStore] = []
        yield
        for store in self.stores:
            store.close()

    def open(self) -> PostgresStore:
        store = PostgresStore(self.uri, schema=self.schema, log=self.log_line)
        self.stores.append(store)
        return store

    def log_line(self, line: str) -> None:
        raise AssertionError(f"unexpected log line: {line}")


class TestPostgresLeases(_Stores, LeasesContract):
    def make_leases(self) -> ConversationLeases:
        return self.open()

    def test_a_lease_held_through_one_store_is_seen_through_another(self) -> None:
        first, second = self.open(), self.open()
        holder = LeaseHolder.here()
        granted = first.acquire("conv-1", holder, 30)
        assert second.acquire("conv-1", LeaseHolder.here(), 30) == holder
        assert second.holder("conv-1") == granted
        first.release("conv-1", holder)
        other = LeaseHolder.here()
        assert second.acquire("conv-1", other, 30) == other


class TestPostgresCheckpointStore(_Stores, CheckpointStoreContract):
    def make_store(self) -> CheckpointStore:
        return self.open()

    def make_fenced_store(self) -> tuple[CheckpointStore, ConversationLeases]:
        store = self.open()
        return store, store


class TestPostgresSchema(_Stores):
    def test_a_second_store_on_the_schema_keeps_what_the_first_saved(self) -> None:
        self.open().save("k", Checkpoint("conv-1", turns=2, sequence=2))
        assert self.open().load("k") == Checkpoint("conv-1", turns=2, sequence=2)

    def test_a_schema_from_a_newer_version_is_refused(self) -> None:
        store = self.open()
        import psycopg

        with psycopg.connect(self.uri, autocommit=True) as raw:
            raw.execute(
                f"UPDATE {self.schema}.schema_version SET version = {POSTGRES_SCHEMA_VERSION + 1}"
            )
        store.close()
        with pytest.raises(StoreError, match="newer than this agentshim") as caught:
            PostgresStore(self.uri, schema=self.schema)
        assert caught.value.detail == f"schema version {POSTGRES_SCHEMA_VERSION + 1}"

    def test_a_bad_schema_name_and_an_unreachable_server_are_typed_errors(self) -> None:
        with pytest.raises(InvalidRequestError, match="schema"):
            PostgresStore(self.uri, schema="Robert'); DROP TABLE x;--")
        with pytest.raises(StoreError, match="could not connect"):
            PostgresStore("postgresql://nobody@/none?host=/nonexistent-socket-dir")

    def test_a_corrupt_checkpoint_row_counts_as_none_and_is_reported(self) -> None:
        lines: list[str] = []
        store = PostgresStore(self.uri, schema=self.schema, log=lines.append)
        self.stores.append(store)
        import psycopg

        with psycopg.connect(self.uri, autocommit=True) as raw:
            raw.execute(
                f"INSERT INTO {self.schema}.checkpoints (key, sequence, data) "
                "VALUES ('k', 1, 'not json')"
            )
        assert store.load("k") is None
        assert len(lines) == 1
        assert "corrupt" in lines[0]


class TestWaitingInLine(_Stores):
    def test_waiters_are_served_in_the_order_they_came(self) -> None:
        holder_store = self.open()
        first = holder_store.acquire("k", LeaseHolder.here(), 30)
        order: list[int] = []
        queued: list[threading.Event] = []
        threads: list[threading.Thread] = []
        for index in range(4):
            store = self.open()
            in_line = threading.Event()
            queued.append(in_line)

            def wait(index: int = index, store: PostgresStore = store) -> None:
                me = LeaseHolder.here()
                got = store.acquire_waiting("k", me, 30, threading.Event(), HANG_GUARD_S)
                assert got is not None
                order.append(index)
                store.release("k", got)

            thread = threading.Thread(target=wait)
            threads.append(thread)
            thread.start()
            # The next waiter comes only once this one is in line.
            deadline = time.monotonic() + HANG_GUARD_S
            while self._waiting(holder_store) < index + 1:
                assert time.monotonic() < deadline, "the waiter never queued"
                time.sleep(0.01)
        holder_store.release("k", first)
        for thread in threads:
            thread.join(HANG_GUARD_S)
        assert order == [0, 1, 2, 3]

    def _waiting(self, store: PostgresStore) -> int:
        import psycopg

        with psycopg.connect(self.uri, autocommit=True) as raw:
            row = raw.execute(f"SELECT count(*) FROM {store.schema}.waiters").fetchone()
        assert row is not None
        return int(row[0])

    def test_a_waiter_gets_an_expired_lease_and_times_out_naming_a_live_holder(self) -> None:
        store = self.open()
        crashed = store.acquire("k", LeaseHolder.here(), 0.3)
        got = self.open().acquire_waiting(
            "k", LeaseHolder.here(), 30, threading.Event(), HANG_GUARD_S
        )
        assert got is not None
        assert got.fence > crashed.fence
        with pytest.raises(LeaseTimeoutError) as caught:
            self.open().acquire_waiting("k", LeaseHolder.here(), 30, threading.Event(), 0.3)
        assert caught.value.pid == got.pid
        assert self._waiting(store) == 0, "a waiter that gave up stayed in line"

    def test_a_stopped_wait_returns_none_and_leaves_the_line(self) -> None:
        store = self.open()
        store.acquire("k", LeaseHolder.here(), 30)
        stop = threading.Event()
        result: list[LeaseHolder | None] = []
        waiter = threading.Thread(
            target=lambda: result.append(
                self.open().acquire_waiting("k", LeaseHolder.here(), 30, stop, None)
            )
        )
        waiter.start()
        stop.set()
        waiter.join(HANG_GUARD_S)
        assert result == [None]
        assert self._waiting(store) == 0


def test_importing_agentshim_imports_no_psycopg() -> None:
    code = (
        "import sys, agentshim; from agentshim import PostgresStore, SqliteStore; "
        "assert 'psycopg' not in sys.modules, sorted(m for m in sys.modules if 'psycopg' in m)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


class TestDeadWaiters(_Stores):
    def test_a_waiter_whose_process_died_is_passed_over_and_leaves_the_line(self) -> None:
        import psycopg

        store = self.open()
        held = store.acquire("k", LeaseHolder.here(), 30)
        with psycopg.connect(self.uri, autocommit=True) as raw:
            # A waiter whose connection is gone (no backend has pid 0): it died in line.
            raw.execute(
                f"INSERT INTO {self.schema}.waiters (key, token, pid, host, since, ttl, backend) "
                "VALUES ('k', 'dead', 1, 'gone', 0, 30, 0)"
            )
        store.release("k", held)
        me = LeaseHolder.here()
        assert store.acquire("k", me, 30) == me
        with psycopg.connect(self.uri, autocommit=True) as raw:
            row = raw.execute(f"SELECT count(*) FROM {self.schema}.waiters").fetchone()
        assert row == (0,)
