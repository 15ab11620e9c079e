"""Conversation leases: the shared contract, SqliteStore's file, renewal, and sessions holding them."""

from __future__ import annotations

import os
import socket
import sqlite3
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.agent import Agent
from agentshim.core.clock import SystemClock
from agentshim.core.errors import (
    InvalidRequestError,
    LeaseLostError,
    LeaseTimeoutError,
    StoreError,
    TurnCancelledError,
)
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.session import Session
from agentshim.state.checkpoints import Checkpoint, CheckpointStore, InMemoryCheckpointStore
from agentshim.state.leases import ConversationLeases, InMemoryLeases, LeaseHolder, LeaseKeeper
from agentshim.state.sqlite_store import SCHEMA_VERSION, SqliteStore
from agentshim.testing.contracts import CheckpointStoreContract, LeasesContract
from agentshim.testing.conversation import FakeOutcome, FakeTransport

from .helpers import HANG_GUARD_S, ContendedLeases, TurnOnThread, second_turn_waits_for_first, spec

KEY = "user-1"


class TestInMemoryLeases(LeasesContract):
    def make_leases(self) -> ConversationLeases:
        return InMemoryLeases()


class TestSqliteLeases(LeasesContract):
    @pytest.fixture(autouse=True)
    def _file(self, tmp_path: Path) -> Iterator[None]:
        self.stores: list[SqliteStore] = []
        self.path = tmp_path / "state.db"
        yield
        for store in self.stores:
            store.close()

    def make_leases(self) -> ConversationLeases:
        store = SqliteStore(self.path)
        self.stores.append(store)
        return store

    def test_a_lease_held_in_one_store_is_seen_by_another_on_the_same_file(self) -> None:
        first, second = self.make_leases(), self.make_leases()
        holder = LeaseHolder.here()
        first.acquire("conv-1", holder, 30)
        assert second.acquire("conv-1", LeaseHolder.here(), 30) == holder
        first.release("conv-1", holder)
        other = LeaseHolder.here()
        assert second.acquire("conv-1", other, 30) == other


class TestSqliteCheckpointStore(CheckpointStoreContract):
    @pytest.fixture(autouse=True)
    def _file(self, tmp_path: Path) -> Iterator[None]:
        self.stores: list[SqliteStore] = []
        self.path = tmp_path / "nested" / "state.db"
        yield
        for store in self.stores:
            store.close()

    def make_store(self) -> CheckpointStore:
        store = SqliteStore(self.path, log=self.log_line)
        self.stores.append(store)
        return store

    def make_fenced_store(self) -> tuple[CheckpointStore, ConversationLeases]:
        store = SqliteStore(self.path, log=self.log_line)
        self.stores.append(store)
        return store, store

    def log_line(self, line: str) -> None:
        raise AssertionError(f"unexpected log line: {line}")


class TestSqliteFile:
    def test_the_file_is_in_wal_mode_at_the_current_schema_version(self, tmp_path: Path) -> None:
        path = tmp_path / "state.db"
        with SqliteStore(path):
            pass
        raw = sqlite3.connect(path)
        try:
            assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
            assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        finally:
            raw.close()

    def test_a_file_of_no_version_is_migrated_and_reopening_keeps_what_it_holds(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "state.db"
        sqlite3.connect(path).close()  # an empty database: version 0
        with SqliteStore(path) as store:
            store.save(KEY, Checkpoint("conv-1", turns=3, sequence=3))
        with SqliteStore(path) as again:
            assert again.load(KEY) == Checkpoint("conv-1", turns=3, sequence=3)

    def test_a_wall_clock_step_lets_no_second_holder_in(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        with SqliteStore(tmp_path / "state.db") as store:
            first = store.acquire(KEY, LeaseHolder.here(), 30)
            stepped = time.time() + 3600
            monkeypatch.setattr(time, "time", lambda: stepped)
            assert store.acquire(KEY, LeaseHolder.here(), 30) == first

    def test_a_version_1_file_is_migrated_and_its_leases_count_as_expired(
        self, tmp_path: Path
    ) -> None:
        path = tmp_path / "state.db"
        raw = sqlite3.connect(path)
        raw.executescript(
            """
            CREATE TABLE checkpoints (key TEXT PRIMARY KEY, sequence INTEGER NOT NULL,
                data TEXT NOT NULL, saved_at REAL NOT NULL);
            CREATE TABLE leases (key TEXT PRIMARY KEY, token TEXT NOT NULL, pid INTEGER NOT NULL,
                host TEXT NOT NULL, since REAL NOT NULL, expires REAL NOT NULL);
            PRAGMA user_version = 1;
            """
        )
        raw.execute("INSERT INTO leases VALUES ('user-1', 'old', 1, 'h', 0, 1e18)")
        raw.commit()
        raw.close()
        with SqliteStore(path) as store:
            me = LeaseHolder.here()
            granted = store.acquire(KEY, me, 30)
            assert granted == me
            assert granted.fence == 1
            store.save(KEY, Checkpoint("conv-1", sequence=1, fence=granted.fence))
            store.save_blob(KEY, b"state", fence=granted.fence)
            assert store.load_blob(KEY) == b"state"

    def test_a_file_from_a_newer_version_is_refused_untouched(self, tmp_path: Path) -> None:
        path = tmp_path / "state.db"
        raw = sqlite3.connect(path)
        raw.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
        raw.close()
        with pytest.raises(StoreError, match=r"state\.db has schema version") as caught:
            SqliteStore(path)
        assert caught.value.detail == f"schema version {SCHEMA_VERSION + 1}"
        assert "upgrade agentshim" in str(caught.value)
        raw = sqlite3.connect(path)
        try:
            assert raw.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION + 1
            assert raw.execute("SELECT count(*) FROM sqlite_master").fetchone()[0] == 0
        finally:
            raw.close()

    def test_a_file_that_is_not_a_database_is_a_store_error(self, tmp_path: Path) -> None:
        path = tmp_path / "state.db"
        path.write_bytes(b"this is not a database, it is a text file long enough to tell" * 20)
        with pytest.raises(StoreError, match="could not open") as caught:
            SqliteStore(path)
        assert isinstance(caught.value, OSError)

    def test_a_closed_store_refuses_every_call(self, tmp_path: Path) -> None:
        store = SqliteStore(tmp_path / "state.db")
        store.close()
        store.close()
        with pytest.raises(StoreError, match="closed"):
            store.load(KEY)
        with pytest.raises(StoreError, match="closed"):
            store.acquire("conv-1", LeaseHolder.here(), 30)

    def test_a_corrupt_row_loads_as_none_and_is_reported(self, tmp_path: Path) -> None:
        path = tmp_path / "state.db"
        lines: list[str] = []
        with SqliteStore(path, log=lines.append) as store:
            store.save(KEY, Checkpoint("conv-1"))
            raw = sqlite3.connect(path)
            raw.execute("UPDATE checkpoints SET data = '{not json'")
            raw.commit()
            raw.close()
            assert store.load(KEY) is None
        assert len(lines) == 1
        assert "corrupt" in lines[0]

    def test_a_database_locked_past_busy_timeout_is_a_store_error(self, tmp_path: Path) -> None:
        path = tmp_path / "state.db"
        with SqliteStore(path, busy_timeout=0.05) as store:
            raw = sqlite3.connect(path, isolation_level=None)
            raw.execute("BEGIN IMMEDIATE")
            try:
                with pytest.raises(StoreError, match="busy_timeout"):
                    store.save(KEY, Checkpoint("conv-1"))
            finally:
                raw.execute("ROLLBACK")
                raw.close()
            store.save(KEY, Checkpoint("conv-1"))
            assert store.load(KEY) == Checkpoint("conv-1")

    @pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
    def test_a_store_carried_into_a_forked_child_opens_its_own_connection(
        self, tmp_path: Path
    ) -> None:
        with SqliteStore(tmp_path / "state.db") as store:
            store.save(KEY, Checkpoint("conv-1", sequence=1))
            pid = os.fork()
            if pid == 0:  # the child: exit at once, whatever happens
                code = 1
                try:
                    seen = store.load(KEY)
                    store.save(KEY, Checkpoint("conv-2", sequence=2))
                    code = 0 if seen == Checkpoint("conv-1", sequence=1) else 2
                finally:
                    os._exit(code)
            _, status = os.waitpid(pid, 0)
            assert os.waitstatus_to_exitcode(status) == 0
            assert store.load(KEY) == Checkpoint("conv-2", sequence=2)

    def test_bad_settings_are_refused(self, tmp_path: Path) -> None:
        with pytest.raises(InvalidRequestError, match="busy_timeout"):
            SqliteStore(tmp_path / "state.db", busy_timeout=0)
        with SqliteStore(tmp_path / "state.db") as store:
            with pytest.raises(InvalidRequestError, match="ttl"):
                store.acquire("conv-1", LeaseHolder.here(), 0)
            with pytest.raises(InvalidRequestError, match="lease key"):
                store.acquire("", LeaseHolder.here(), 30)


def renewal_threads() -> int:
    return sum(1 for thread in threading.enumerate() if thread.name == "agentshim-lease-renewal")


class CountedRenewals(InMemoryLeases):
    """InMemoryLeases that lets a test wait until each key was renewed ``count`` times."""

    def __init__(self) -> None:
        super().__init__()
        self._renewed: dict[str, int] = {}
        self._changed = threading.Condition()

    def renew(self, key: str, holder: LeaseHolder, ttl: float) -> bool:
        kept = super().renew(key, holder, ttl)
        with self._changed:
            self._renewed[key] = self._renewed.get(key, 0) + kept
            self._changed.notify_all()
        return kept

    def wait_renewed(self, keys: tuple[str, ...], count: int) -> bool:
        with self._changed:
            return self._changed.wait_for(
                lambda: all(self._renewed.get(key, 0) >= count for key in keys), HANG_GUARD_S
            )


class TestLeaseKeeper:
    def test_a_held_lease_outlives_its_ttl_and_the_thread_ends_with_the_last_one(self) -> None:
        leases = CountedRenewals()
        keeper = LeaseKeeper(leases)
        first, second = LeaseHolder.here(), LeaseHolder.here()
        started = time.monotonic()
        keeper.acquire("conv-a", first, 0.6)
        keeper.acquire("conv-b", second, 0.6)
        assert renewal_threads() == 1, "two held leases share one renewal thread"
        # Renewed every third of its time-to-live, the fourth renewal comes after the first
        # grant would have expired: from then on only renewals keep the leases.
        assert leases.wait_renewed(("conv-a", "conv-b"), 4), "the leases were not renewed"
        assert time.monotonic() - started > 0.6
        assert keeper.acquire("conv-a", LeaseHolder.here(), 30) == first
        assert keeper.acquire("conv-b", LeaseHolder.here(), 30) == second
        keeper.release("conv-a", first)
        assert renewal_threads() == 1
        keeper.release("conv-b", second)
        assert renewal_threads() == 0

    def test_a_lease_lost_while_held_is_reported(self) -> None:
        leases = InMemoryLeases()
        lines: list[str] = []
        reported = threading.Event()

        def log(line: str) -> None:
            lines.append(line)
            reported.set()

        keeper = LeaseKeeper(leases, log=log)
        me = LeaseHolder.here()
        keeper.acquire("conv-1", me, 0.3)
        leases.release("conv-1", me)  # as if it had expired
        thief = LeaseHolder.here()
        leases.acquire("conv-1", thief, 30)
        assert reported.wait(HANG_GUARD_S), "the lost lease was never reported"
        assert "another holder may have taken it" in lines[0]
        keeper.release("conv-1", me)
        assert renewal_threads() == 0
        assert leases.acquire("conv-1", LeaseHolder.here(), 30) == thief

    def test_a_release_that_fails_is_reported_and_the_lease_left_to_expire(self) -> None:
        class Unreleasable(InMemoryLeases):
            def release(self, key: str, holder: LeaseHolder) -> None:
                raise StoreError("/srv/state.db", "database is locked")

        lines: list[str] = []
        keeper = LeaseKeeper(Unreleasable(), log=lines.append)
        me = LeaseHolder.here()
        keeper.acquire("conv-1", me, 30)
        keeper.release("conv-1", me)
        assert len(lines) == 1
        assert "expires instead" in lines[0]
        assert renewal_threads() == 0


# -- sessions holding leases ------------------------------------------------------------


def session_on(transport: FakeTransport, **kwargs: object) -> Session:
    return Session(transport, spec(), clock=SystemClock(), **kwargs)  # type: ignore[arg-type]


class TestSessionsOnOneKey:
    def test_a_turn_that_cannot_get_its_lease_fails_naming_the_holder_and_nothing_runs(
        self,
    ) -> None:
        leases = InMemoryLeases()
        holder = LeaseHolder(4242, "worker-7", time.time() - 3, "elsewhere")
        leases.acquire(KEY, holder, 30)
        transport = FakeTransport([FakeOutcome.success("later")])
        store = InMemoryCheckpointStore()
        session = session_on(
            transport, checkpoints=store, checkpoint_key=KEY, leases=leases, lease_timeout=0.1
        )
        with pytest.raises(LeaseTimeoutError) as caught:
            session.turn("now")
        error = caught.value
        assert (error.key, error.pid, error.host, error.since) == (
            KEY,
            4242,
            "worker-7",
            holder.since,
        )
        assert "process 4242 on 'worker-7'" in str(error)
        assert "nothing ran" in str(error)
        assert transport.calls == []
        assert transport.opened == []
        assert store.load(KEY) is None
        leases.release(KEY, holder)
        assert session.turn("now").result.text == "later"

    def test_a_session_continues_where_another_session_on_the_key_left_off(self) -> None:
        leases = InMemoryLeases()
        store = InMemoryCheckpointStore()
        transport = FakeTransport([FakeOutcome.success("one"), FakeOutcome.success("two")])
        # Both built before either ran: neither knows the conversation yet.
        first = session_on(transport, checkpoints=store, checkpoint_key=KEY, leases=leases)
        second = session_on(transport, checkpoints=store, checkpoint_key=KEY, leases=leases)
        made = first.turn("one")
        assert made.session_id is not None
        continued = second.turn("two")
        assert continued.session_id == made.session_id
        assert transport.calls[1].session_id == made.session_id, "the second turn resumed it"
        saved = store.load(KEY)
        assert saved is not None
        assert (saved.session_id, saved.turns) == (made.session_id, 2)
        # The first session sees the second one's turn at its next turn, not before, and
        # its save comes after the second one's.
        transport.extend([FakeOutcome.success("three")])
        first.turn("three")
        latest = store.load(KEY)
        assert latest is not None
        assert latest.turns == 3
        assert latest.sequence > saved.sequence
        assert len(leases) == 0

    def test_a_conversation_forgotten_elsewhere_starts_cold_here(self) -> None:
        leases = InMemoryLeases()
        store = InMemoryCheckpointStore()
        transport = FakeTransport([FakeOutcome.success("one"), FakeOutcome.success("fresh")])
        first = session_on(transport, checkpoints=store, checkpoint_key=KEY, leases=leases)
        first.turn("one")
        store.clear(KEY)  # another worker dropped the conversation
        turn = first.turn("fresh")
        assert transport.calls[1].session_id is None, "the dropped conversation was resumed"
        assert turn.continuity.value == "reset"

    def test_two_threads_on_one_key_take_turns(self) -> None:
        leases = ContendedLeases()
        store = InMemoryCheckpointStore()
        transport = FakeTransport([FakeOutcome.hang(), FakeOutcome.success("second")])
        first = session_on(transport, checkpoints=store, checkpoint_key=KEY, leases=leases)
        second = session_on(transport, checkpoints=store, checkpoint_key=KEY, leases=leases)
        assert second_turn_waits_for_first(transport, first, second, leases).result.text == "second"
        assert len(leases) == 0
        assert renewal_threads() == 0

    def test_a_turn_waiting_for_the_lease_can_be_interrupted(self) -> None:
        leases = ContendedLeases()
        holder = LeaseHolder.here()
        leases.acquire(KEY, holder, 30)
        transport = FakeTransport([FakeOutcome.success()])
        session = session_on(
            transport, checkpoints=InMemoryCheckpointStore(), checkpoint_key=KEY, leases=leases
        )
        runner = TurnOnThread(session, "go")
        assert leases.refused.wait(HANG_GUARD_S), "the turn never asked for the lease"
        session.interrupt()
        runner.join()
        assert isinstance(runner.error, TurnCancelledError)
        assert transport.calls == []

    def test_lease_settings_are_checked(self) -> None:
        transport = FakeTransport()
        with pytest.raises(InvalidRequestError, match="lease_ttl"):
            session_on(transport, leases=InMemoryLeases(), lease_ttl=0)
        with pytest.raises(InvalidRequestError, match="lease_timeout"):
            session_on(transport, leases=InMemoryLeases(), lease_timeout=-1)
        with pytest.raises(InvalidRequestError, match="leases"):
            session_on(transport, leases="sqlite:///state.db")


class FrozenRenewals(InMemoryLeases):
    """InMemoryLeases whose renewals stall until ``thaw`` is set, as in a stopped process."""

    def __init__(self) -> None:
        super().__init__()
        self.thaw = threading.Event()

    def renew(self, key: str, holder: LeaseHolder, ttl: float) -> bool:
        self.thaw.wait(HANG_GUARD_S)
        return super().renew(key, holder, ttl)


class TestFencing:
    def test_a_turn_that_lost_its_lease_is_stopped_and_its_checkpoint_refused(self) -> None:
        leases = FrozenRenewals()
        store = InMemoryCheckpointStore(leases=leases)
        transport = FakeTransport([FakeOutcome.hang()])
        session = session_on(
            transport, checkpoints=store, checkpoint_key=KEY, leases=leases, lease_ttl=0.3
        )
        runner = TurnOnThread(session, "one")
        assert runner.started.wait(HANG_GUARD_S)
        time.sleep(0.45)  # past the unrenewed lease's time-to-live
        newer = leases.acquire(KEY, LeaseHolder(4343, "worker-b", time.time(), "b"), 30)
        assert newer.token == "b", "the expired lease was not free"
        leases.thaw.set()
        runner.join()
        assert isinstance(runner.error, LeaseLostError)
        assert (runner.error.holder_pid, runner.error.holder_host) == (4343, "worker-b")
        assert runner.error.holder_fence == newer.fence
        assert "worker-b" in str(runner.error)
        assert store.load(KEY) is None, "the lost holder's checkpoint was saved"
        assert leases.holder(KEY) == newer, "the lost holder released the new holder's lease"
        assert renewal_threads() == 0

    def test_a_turn_holding_its_lease_saves_under_its_fence(self) -> None:
        leases = InMemoryLeases()
        store = InMemoryCheckpointStore(leases=leases)
        transport = FakeTransport([FakeOutcome.success("one"), FakeOutcome.success("two")])
        session = session_on(transport, checkpoints=store, checkpoint_key=KEY, leases=leases)
        session.turn("one")
        first = store.load(KEY)
        session.turn("two")
        second = store.load(KEY)
        assert first is not None
        assert second is not None
        assert 0 < first.fence < second.fence


class TestSessionsWithoutAKey:
    def test_an_attempt_that_cannot_get_the_conversation_fails_naming_the_holder(self) -> None:
        leases = InMemoryLeases()
        transport = FakeTransport([FakeOutcome.success("later")])
        holder = LeaseHolder(77, "worker-2", time.time(), "elsewhere")
        leases.acquire(f"{transport.profile.name}/conv-shared", holder, 30)
        session = session_on(transport, leases=leases, lease_timeout=0.1)
        assert session.adopt("conv-shared")
        with pytest.raises(LeaseTimeoutError) as caught:
            session.turn("now")
        assert caught.value.key == f"{transport.profile.name}/conv-shared"
        assert (caught.value.pid, caught.value.host) == (77, "worker-2")
        assert transport.calls == []
        assert session.session_id == "conv-shared", "a busy conversation is not forgotten"


class TestAgentWiring:
    def test_sessions_use_the_agents_store_and_hold_leases_in_it(self, tmp_path: Path) -> None:
        with SqliteStore(tmp_path / "state.db") as store:
            transport = FakeTransport([FakeOutcome.hang(), FakeOutcome.success("two")])
            agent = Agent(
                transport,
                permissions=NativePermissions.bypass(),
                approvals=ApprovalPolicy.DENY,
                checkpoints=store,
                leases=store,
                lease_timeout=0.2,
            )
            session = agent.start_session("/tmp", checkpoint_key=KEY)
            runner = TurnOnThread(session, "one")
            assert runner.started.wait(HANG_GUARD_S)
            # Seen as a worker process would see it: the key is held by this process.
            seen = store.acquire(KEY, LeaseHolder.here(), 30)
            assert (seen.pid, seen.host) == (os.getpid(), socket.gethostname())
            with pytest.raises(LeaseTimeoutError):
                agent.start_session("/tmp", checkpoint_key=KEY).turn("blocked")
            session.interrupt()
            runner.join()
            assert agent.start_session("/tmp", checkpoint_key=KEY).turn("two").result.text == "two"
            saved = store.load(KEY)
            assert saved is not None
            assert saved.turns == 1

    def test_wrong_stores_are_refused(self) -> None:
        for field, value in (("checkpoints", "state.db"), ("leases", 3)):
            with pytest.raises(InvalidRequestError, match=field):
                Agent(
                    FakeTransport(),
                    permissions=NativePermissions.bypass(),
                    approvals=ApprovalPolicy.DENY,
                    **{field: value},  # type: ignore[arg-type]
                )


SAVES = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["conv-a", "conv-b"]), st.integers(0, 6)),
        st.just(None),  # a clear
    ),
    max_size=12,
)


@settings(max_examples=40)
@given(saves=SAVES)
def test_sqlite_keeps_what_checkpoint_replaces_says_for_any_order_of_saves(
    saves: list[tuple[str, int] | None],
) -> None:
    expected: Checkpoint | None = None
    with tempfile.TemporaryDirectory() as tmp, SqliteStore(Path(tmp) / "state.db") as store:
        for step in saves:
            if step is None:
                store.clear(KEY)
                expected = None
                continue
            checkpoint = Checkpoint(step[0], turns=step[1], sequence=step[1])
            store.save(KEY, checkpoint)
            if checkpoint.replaces(expected):
                expected = checkpoint
            assert store.load(KEY) == expected
