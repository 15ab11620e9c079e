"""PostgresStore: checkpoints, conversation blobs and leases in PostgreSQL, for workers on many hosts.

Needs the optional extra ``agentshim[postgres]`` (psycopg 3), imported when a store is made,
never by ``import agentshim``. Everything lives in one database schema (``agentshim`` by
default), created and migrated forward by the store; its version is kept in a table of its
own, and a schema from a newer agentshim is refused, not rewritten.

Leases expire by the database's clock (``clock_timestamp()``), the one clock every worker
shares, whatever the hosts' own clocks say. Each grant takes the next value of one sequence as
its fencing token. A turn waiting for a held lease queues in a table and sleeps on
``LISTEN``: a release hands the lease to the oldest live waiter and wakes the waiters with
``NOTIFY``, so waiters are served first come, first served, and none polls. Grants, hand-offs
and fenced writes of one key are serialized by a transaction-level advisory lock on the key,
so a write fenced by a lost grant is refused even when the new grant commits a moment before.
"""

from __future__ import annotations

import importlib
import os
import re
import time
from collections.abc import Callable, Generator, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, contextmanager
from dataclasses import replace
from typing import Any, Protocol

from agentshim.core._checks import matching, seconds
from agentshim.core.clock import StopSignal
from agentshim.core.errors import LeaseTimeoutError, StoreError
from agentshim.state._sql import SqlStore, migrations_from
from agentshim.state.checkpoints import (
    Checkpoint,
    check_fence,
)
from agentshim.state.leases import LeaseHolder, validate_lease_key


class _Cursor(Protocol):
    """The part of a psycopg cursor this store uses."""

    @property
    def rowcount(self) -> int: ...

    def fetchone(self) -> tuple[Any, ...] | None: ...


class _Connection(Protocol):
    """The part of a psycopg connection this store uses (typed here: psycopg is optional)."""

    @property
    def closed(self) -> bool: ...

    def execute(
        self, query: Any, params: Sequence[Any] | Mapping[str, Any] | None = None
    ) -> _Cursor: ...

    def transaction(self) -> AbstractContextManager[Any]: ...

    def notifies(
        self, *, timeout: float | None = None, stop_after: int | None = None
    ) -> Iterator[Any]: ...

    def close(self) -> None: ...


__all__ = ["POSTGRES_SCHEMA_VERSION", "PostgresStore"]

_SCHEMA_NAME = re.compile(r"[a-z_][a-z0-9_]{0,47}")

#: The statements that bring the schema from version ``n`` to ``n + 1``, for each ``n``;
#: ``{s}`` is the store's schema.
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE {s}.checkpoints (
            key TEXT PRIMARY KEY,
            sequence BIGINT NOT NULL,
            fence BIGINT NOT NULL DEFAULT 0,
            data TEXT NOT NULL,
            saved_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
        )""",
        """CREATE TABLE {s}.blobs (
            key TEXT PRIMARY KEY,
            fence BIGINT NOT NULL DEFAULT 0,
            data BYTEA NOT NULL,
            saved_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp()
        )""",
        """CREATE TABLE {s}.leases (
            key TEXT PRIMARY KEY,
            token TEXT NOT NULL,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            since DOUBLE PRECISION NOT NULL,
            fence BIGINT NOT NULL,
            expires TIMESTAMPTZ NOT NULL
        )""",
        """CREATE TABLE {s}.waiters (
            id BIGSERIAL PRIMARY KEY,
            key TEXT NOT NULL,
            token TEXT NOT NULL,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            since DOUBLE PRECISION NOT NULL,
            ttl DOUBLE PRECISION NOT NULL,
            backend INTEGER NOT NULL
        )""",
        "CREATE INDEX waiters_by_key ON {s}.waiters (key, id)",
        "CREATE SEQUENCE {s}.fences",
    ),
)
POSTGRES_SCHEMA_VERSION = len(_MIGRATIONS)
"""The schema version this agentshim writes."""

_LOCK_KEY: str = "SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))"
_HOLDER: str = """
    SELECT token, pid, host, since, fence, expires > clock_timestamp()
    FROM {s}.leases WHERE key = %s
"""
_GRANT: str = """
    INSERT INTO {s}.leases (key, token, pid, host, since, fence, expires)
    VALUES (%s, %s, %s, %s, %s, nextval('{s}.fences'),
            clock_timestamp() + make_interval(secs => %s))
    ON CONFLICT (key) DO UPDATE SET
        token = excluded.token, pid = excluded.pid, host = excluded.host,
        since = excluded.since, fence = excluded.fence, expires = excluded.expires
    RETURNING fence
"""
# The oldest waiter whose connection is still open; waiters whose connection closed (a
# process that died while it waited) leave the line in the same statement.
_HEAD: str = """
    WITH gone AS (
        DELETE FROM {s}.waiters AS d WHERE d.key = %(key)s
        AND NOT EXISTS (SELECT 1 FROM pg_stat_activity AS a WHERE a.pid = d.backend)
    )
    SELECT id, token, pid, host, since, ttl FROM {s}.waiters AS w
    WHERE key = %(key)s AND EXISTS (SELECT 1 FROM pg_stat_activity AS a WHERE a.pid = w.backend)
    ORDER BY id LIMIT 1
"""
_SAVE_CHECKPOINT_ROW: str = """
    INSERT INTO {s}.checkpoints (key, sequence, fence, data) VALUES (%s, %s, %s, %s)
    ON CONFLICT (key) DO UPDATE SET
        sequence = excluded.sequence, data = excluded.data, saved_at = clock_timestamp(),
        fence = greatest(checkpoints.fence, excluded.fence)
    WHERE NOT (0 < excluded.sequence AND excluded.sequence <= checkpoints.sequence)
"""
_SAVE_BLOB_ROW: str = """
    INSERT INTO {s}.blobs (key, fence, data) VALUES (%s, %s, %s)
    ON CONFLICT (key) DO UPDATE SET
        fence = excluded.fence, data = excluded.data, saved_at = clock_timestamp()
"""

#: How often a waiting turn looks at its stop signal while it sleeps on LISTEN (s). Lease
#: changes wake it through NOTIFY; this bounds only how late an interrupt is noticed.
_STOP_CHECK_S = 0.1


def _psycopg() -> Any:
    try:
        return importlib.import_module("psycopg")
    except ImportError as error:
        raise StoreError(
            "postgresql",
            "psycopg is not installed",
            "PostgresStore needs psycopg 3: pip install 'agentshim[postgres]'",
        ) from error


def _warn(line: str) -> None:
    import warnings

    warnings.warn(line, RuntimeWarning, stacklevel=3)


class PostgresStore(SqlStore[_Connection]):
    """A CheckpointStore, ConversationBlobs and QueuedLeases in PostgreSQL, shared by every host.

    ``conninfo`` is a libpq connection string or URI (``postgresql://user@host/db``); keep
    passwords out of it and in ``PGPASSWORD`` or ``~/.pgpass``. ``schema`` names the database
    schema the store's tables live in (lowercase letters, digits, ``_``), so several services
    can share one database. Open one store per process; its connection is shared by the
    process's threads, and a store carried into a forked child connects again there. A
    waiting turn opens a connection of its own for as long as it waits. A checkpoint that
    cannot be decoded counts as none and is reported through ``log``. ``close()`` (or a
    ``with`` block) closes the connection.

    Raises:
        StoreError: psycopg is missing, the database cannot be reached, or its schema is
            from a newer agentshim (here, and from any method when the database fails).
        InvalidRequestError: ``schema`` is not a plain lowercase name.
    """

    expires = True
    """Leases end on their own when their time-to-live passes unrenewed."""
    spans_hosts = True
    """Workers on other hosts share it: an Agent moves conversations through it by default."""

    def __init__(
        self,
        conninfo: str,
        *,
        schema: str = "agentshim",
        connect_timeout: float = 10.0,
        log: Callable[[str], None] | None = None,
    ) -> None:
        super().__init__("PostgreSQL", log or _warn)
        matching(
            "",
            "schema",
            schema,
            _SCHEMA_NAME,
            "a schema name",
            f"PostgresStore schema must be 1-48 lowercase letters, digits or '_', not "
            f"{schema!r:.60}",
        )
        self._psycopg = _psycopg()
        self._sql: Any = importlib.import_module("psycopg.sql")
        self._conninfo = conninfo
        self.schema = schema
        self._timeout = seconds("PostgresStore", "connect_timeout", connect_timeout, positive=True)
        self._channel = f"agentshim_{schema}_leases"
        self._statements: dict[str, Any] = {}
        with self._guard:
            self._connect()

    # -- the connection -----------------------------------------------------------------

    def _q(self, template: str) -> Any:
        """``template`` with ``{s}`` naming this store's schema, composed once."""
        found = self._statements.get(template)
        if found is None:
            found = self._sql.SQL(template).format(s=self._sql.Identifier(self.schema))
            self._statements[template] = found
        return found

    def _open(self) -> _Connection:
        with self._failing("connect"):
            connection: _Connection = self._psycopg.connect(
                self._conninfo, autocommit=True, connect_timeout=max(1, round(self._timeout))
            )
            return connection

    def _connect(self) -> _Connection:
        """This process's connection, opened (and the schema migrated) on first use; guard held."""
        if self._closed:
            raise StoreError("postgresql", "closed", "this PostgresStore is closed")
        connection = self._connection
        if connection is not None and self._pid == os.getpid() and not connection.closed:
            return connection
        # A connection inherited through fork belongs to the parent: never used here.
        return self._adopt(self._open())

    def _prepare(self, connection: _Connection) -> None:
        """Migrate the schema to this agentshim's version."""
        with self._failing("migrate the schema"), connection.transaction():
            connection.execute(_LOCK_KEY, (f"agentshim-schema:{self.schema}",))
            connection.execute(self._q("CREATE SCHEMA IF NOT EXISTS {s}"))
            connection.execute(
                self._q("CREATE TABLE IF NOT EXISTS {s}.schema_version (version INTEGER NOT NULL)")
            )
            row = connection.execute(self._q("SELECT version FROM {s}.schema_version")).fetchone()
            found = int(row[0]) if row is not None else 0
            pending = migrations_from(
                found,
                _MIGRATIONS,
                store="postgresql",
                newer=lambda version: (
                    f"schema {self.schema!r} has version {version}, newer than "
                    f"this agentshim writes ({POSTGRES_SCHEMA_VERSION}); upgrade agentshim in every "
                    "worker that shares it"
                ),
            )
            for statement in pending:
                connection.execute(self._q(statement))
            if row is None:
                connection.execute(
                    self._q("INSERT INTO {s}.schema_version (version) VALUES (%s)"),
                    (POSTGRES_SCHEMA_VERSION,),
                )
            elif found != POSTGRES_SCHEMA_VERSION:
                connection.execute(
                    self._q("UPDATE {s}.schema_version SET version = %s"),
                    (POSTGRES_SCHEMA_VERSION,),
                )

    @contextmanager
    def _failing(self, action: str) -> Generator[None, None, None]:
        """Turn a database failure into a StoreError saying what could not be done."""
        try:
            yield
        except self._psycopg.Error as error:
            raise StoreError(
                "postgresql",
                str(error).strip(),
                f"could not {action} in PostgreSQL (schema {self.schema!r}): "
                f"{str(error).strip()}; check the server is reachable and the role may "
                "create and write the schema",
            ) from error

    @contextmanager
    def _write(self, action: str) -> Generator[_Connection, None, None]:
        with self._guard, self._failing(action):
            connection = self._connect()
            with connection.transaction():
                yield connection

    # -- checkpoints and blobs (rows kept by SqlStore) ----------------------------------

    _LOAD = "SELECT data FROM {s}.checkpoints WHERE key = %s"
    _CLEAR = "DELETE FROM {s}.checkpoints WHERE key = %s"
    _LOAD_BLOB = "SELECT data FROM {s}.blobs WHERE key = %s"
    _CLEAR_BLOB = "DELETE FROM {s}.blobs WHERE key = %s"
    _SAVE = _SAVE_CHECKPOINT_ROW
    _SAVE_BLOB = _SAVE_BLOB_ROW

    def _checkpoint_row(self, key: str, checkpoint: Checkpoint, payload: str) -> tuple[Any, ...]:
        return (key, checkpoint.sequence, checkpoint.fence, payload)

    def _blob_row(self, key: str, fence: int, data: bytes) -> tuple[Any, ...]:
        return (key, fence, data)

    def _check_fence(self, connection: _Connection, table: str, key: str, fence: int) -> None:
        if fence <= 0:
            return
        self._lock_key(connection, key)
        holder = self._live(connection, key)
        stored = connection.execute(
            self._q("SELECT fence FROM {s}." + table + " WHERE key = %s"), (key,)
        ).fetchone()
        check_fence(key, fence, holder, int(stored[0]) if stored is not None else 0)

    # -- leases -------------------------------------------------------------------------

    def _lock_key(self, connection: _Connection, key: str) -> None:
        connection.execute(_LOCK_KEY, (f"agentshim-lease:{self.schema}:{key}",))

    def _live(self, connection: _Connection, key: str) -> LeaseHolder | None:
        row = connection.execute(self._q(_HOLDER), (key,)).fetchone()
        if row is None or not row[5]:
            return None
        token, pid, host, since, fence, _ = row
        return LeaseHolder(int(pid), str(host), float(since), str(token), int(fence))

    def _grant(
        self, connection: _Connection, key: str, holder: LeaseHolder, ttl: float
    ) -> LeaseHolder:
        row = connection.execute(
            self._q(_GRANT), (key, holder.token, holder.pid, holder.host, holder.since, ttl)
        ).fetchone()
        assert row is not None
        return replace(holder, fence=int(row[0]))

    def _hand_off(self, connection: _Connection, key: str) -> LeaseHolder | None:
        """Grant the free ``key`` to its oldest live waiter, if any, and wake the waiters."""
        row = connection.execute(self._q(_HEAD), {"key": key}).fetchone()
        if row is None:
            return None
        waiter_id, token, pid, host, since, ttl = row
        connection.execute(self._q("DELETE FROM {s}.waiters WHERE id = %s"), (waiter_id,))
        granted = self._grant(
            connection, key, LeaseHolder(int(pid), str(host), float(since), str(token)), ttl
        )
        connection.execute("SELECT pg_notify(%s, %s)", (self._channel, key))
        return granted

    def _take(
        self, connection: _Connection, key: str, holder: LeaseHolder, ttl: float
    ) -> LeaseHolder:
        """One try at ``key`` in a transaction: the holder after it (``holder`` if granted)."""
        self._lock_key(connection, key)
        current = self._live(connection, key)
        if current is not None and current.token == holder.token:
            connection.execute(
                self._q(
                    "UPDATE {s}.leases SET expires = clock_timestamp() "
                    "+ make_interval(secs => %s) WHERE key = %s"
                ),
                (ttl, key),
            )
            return current
        if current is not None:
            return current
        # Free or expired: the line goes first, and this holder only when nobody waits.
        handed = self._hand_off(connection, key)
        if handed is not None:
            return handed
        return self._grant(connection, key, holder, ttl)

    def acquire(self, key: str, holder: LeaseHolder, ttl: float) -> LeaseHolder:
        """Take ``key``'s lease for ``holder`` unless another live holder has it or waits first."""
        validate_lease_key("PostgresStore.acquire", key)
        ttl = seconds("PostgresStore.acquire", "ttl", ttl, positive=True)
        with self._write("take lease " + repr(key)) as connection:
            return self._take(connection, key, holder, ttl)

    def holder(self, key: str) -> LeaseHolder | None:
        """The live holder of ``key``'s lease (with its fencing token), or None."""
        validate_lease_key("PostgresStore.holder", key)
        with self._read("read lease " + repr(key)) as connection:
            return self._live(connection, key)

    def renew(self, key: str, holder: LeaseHolder, ttl: float) -> bool:
        """Extend ``holder``'s lease to ``ttl`` seconds from now (database clock); False if lost."""
        validate_lease_key("PostgresStore.renew", key)
        ttl = seconds("PostgresStore.renew", "ttl", ttl, positive=True)
        with self._write("renew lease " + repr(key)) as connection:
            cursor = connection.execute(
                self._q(
                    "UPDATE {s}.leases SET expires = clock_timestamp() "
                    "+ make_interval(secs => %s) WHERE key = %s AND token = %s"
                ),
                (ttl, key, holder.token),
            )
            return cursor.rowcount == 1

    def release(self, key: str, holder: LeaseHolder) -> None:
        """Drop ``holder``'s lease on ``key``, if it still has it, handing it to the next waiter."""
        validate_lease_key("PostgresStore.release", key)
        with self._write("release lease " + repr(key)) as connection:
            self._lock_key(connection, key)
            cursor = connection.execute(
                self._q("DELETE FROM {s}.leases WHERE key = %s AND token = %s"),
                (key, holder.token),
            )
            if cursor.rowcount == 1:
                self._hand_off(connection, key)

    def acquire_waiting(
        self, key: str, holder: LeaseHolder, ttl: float, stop: StopSignal, timeout: float | None
    ) -> LeaseHolder | None:
        """Take ``key``'s lease, queueing behind earlier waiters and sleeping on ``LISTEN``.

        Returns the granted holder, or None when ``stop`` fired first.

        Raises:
            LeaseTimeoutError: the lease did not come within ``timeout`` seconds.
        """
        validate_lease_key("PostgresStore.acquire_waiting", key)
        ttl = seconds("PostgresStore.acquire_waiting", "ttl", ttl, positive=True)
        got = self.acquire(key, holder, ttl)
        if got.token == holder.token:
            return got
        deadline = time.monotonic() + timeout if timeout is not None else float("inf")
        listener = self._open()
        try:
            with self._failing("wait for lease " + repr(key)):
                return self._wait_in_line(listener, key, holder, ttl, stop, deadline, timeout)
        finally:
            listener.close()  # also takes a waiter that gave up out of the line

    def _wait_in_line(
        self,
        listener: _Connection,
        key: str,
        holder: LeaseHolder,
        ttl: float,
        stop: StopSignal,
        deadline: float,
        timeout: float | None,
    ) -> LeaseHolder | None:
        listener.execute(self._sql.SQL("LISTEN {}").format(self._sql.Identifier(self._channel)))
        with listener.transaction():
            listener.execute(
                self._q(
                    "INSERT INTO {s}.waiters (key, token, pid, host, since, ttl, backend) "
                    "VALUES (%s, %s, %s, %s, %s, %s, pg_backend_pid())"
                ),
                (key, holder.token, holder.pid, holder.host, holder.since, ttl),
            )
        while True:
            with listener.transaction():
                self._lock_key(listener, key)
                current = self._live(listener, key)
                if current is None:  # released without a hand-off, or expired
                    current = self._hand_off(listener, key)
                until_expiry = listener.execute(
                    self._q(
                        "SELECT extract(epoch FROM expires - clock_timestamp()) "
                        "FROM {s}.leases WHERE key = %s"
                    ),
                    (key,),
                ).fetchone()
            if current is not None and current.token == holder.token:
                return current
            remaining = deadline - time.monotonic()
            if remaining <= 0 and timeout is not None:
                self._leave_line(listener, holder)
                assert current is not None
                raise LeaseTimeoutError(key, current.pid, current.host, current.since, timeout)
            if stop.is_set():
                self._leave_line(listener, holder)
                return None
            expiry = float(until_expiry[0]) if until_expiry is not None else 0.0
            wake_at = time.monotonic() + max(0.0, min(remaining, expiry))
            # Sleep until a NOTIFY (a release or hand-off), the holder's expiry or the
            # deadline; the database is asked again only then. The stop signal is looked at
            # between short sleeps, since nothing can wake a LISTEN from this process.
            while not stop.is_set():
                left = wake_at - time.monotonic()
                if left <= 0 or any(
                    True for _ in listener.notifies(timeout=min(left, _STOP_CHECK_S), stop_after=1)
                ):
                    break

    def _leave_line(self, listener: _Connection, holder: LeaseHolder) -> None:
        listener.execute(self._q("DELETE FROM {s}.waiters WHERE token = %s"), (holder.token,))
