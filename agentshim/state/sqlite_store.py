"""SqliteStore: checkpoints and conversation leases in one SQLite file, for the processes of one machine.

The file is in WAL mode, so readers never wait for the writer; every connection waits up to
``busy_timeout`` for another process's write instead of failing; every write is one
``BEGIN IMMEDIATE`` transaction. The schema carries its version (``PRAGMA user_version``) and
is migrated forward when the store opens; a file from a newer version is refused, not
rewritten. WAL needs a local file system: a file on a network share is not safe for it.

Lease expiry is kept on the machine's monotonic clock (``time.monotonic``: on Linux the
system-wide CLOCK_MONOTONIC, which every process on the machine shares and which a change
of the wall clock does not move), tagged with the boot it was read in (``boot_id``), so a
lease written before a reboot counts as expired after it. Every grant takes the next
fencing token from a counter kept in the file, and fenced checkpoint and blob writes are
checked against the key's lease in the same transaction.
"""

from __future__ import annotations

import os
import sqlite3
import time
import warnings
from collections.abc import Callable, Generator
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any

from agentshim.core._checks import seconds
from agentshim.core.errors import StoreError
from agentshim.state._sql import SqlStore, migrations_from
from agentshim.state.checkpoints import (
    Checkpoint,
    check_fence,
)
from agentshim.state.leases import LeaseHolder, validate_lease_key

__all__ = ["SCHEMA_VERSION", "SqliteStore"]

#: The statements that bring the schema from version ``n`` to ``n + 1``, for each ``n``.
_MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE checkpoints (
            key TEXT PRIMARY KEY,
            sequence INTEGER NOT NULL,
            data TEXT NOT NULL,
            saved_at REAL NOT NULL
        )""",
        """CREATE TABLE leases (
            key TEXT PRIMARY KEY,
            token TEXT NOT NULL,
            pid INTEGER NOT NULL,
            host TEXT NOT NULL,
            since REAL NOT NULL,
            expires REAL NOT NULL
        )""",
    ),
    (
        # Version 2: fencing tokens, blobs, and expiry on the monotonic clock of one boot.
        "ALTER TABLE leases ADD COLUMN fence INTEGER NOT NULL DEFAULT 0",
        "ALTER TABLE leases ADD COLUMN boot TEXT NOT NULL DEFAULT ''",
        "ALTER TABLE checkpoints ADD COLUMN fence INTEGER NOT NULL DEFAULT 0",
        """CREATE TABLE blobs (
            key TEXT PRIMARY KEY,
            fence INTEGER NOT NULL,
            data BLOB NOT NULL,
            saved_at REAL NOT NULL
        )""",
        "CREATE TABLE fences (last INTEGER NOT NULL)",
        "INSERT INTO fences (last) VALUES (0)",
    ),
)
SCHEMA_VERSION = len(_MIGRATIONS)
"""The schema version this agentshim writes."""

_SAVE_CHECKPOINT_ROW = """
    INSERT INTO checkpoints (key, sequence, data, saved_at, fence) VALUES (?, ?, ?, ?, ?)
    ON CONFLICT (key) DO UPDATE SET
        sequence = excluded.sequence, data = excluded.data, saved_at = excluded.saved_at,
        fence = max(checkpoints.fence, excluded.fence)
    WHERE NOT (0 < excluded.sequence AND excluded.sequence <= checkpoints.sequence)
"""
_TAKE = """
    INSERT INTO leases (key, token, pid, host, since, expires, fence, boot)
    VALUES (?, ?, ?, ?, ?, ?, ?, ?)
    ON CONFLICT (key) DO UPDATE SET
        token = excluded.token, pid = excluded.pid, host = excluded.host,
        since = excluded.since, expires = excluded.expires, fence = excluded.fence,
        boot = excluded.boot
"""
_HOLDER = "SELECT token, pid, host, since, expires, fence, boot FROM leases WHERE key = ?"
_SAVE_BLOB_ROW = """
    INSERT INTO blobs (key, fence, data, saved_at) VALUES (?, ?, ?, ?)
    ON CONFLICT (key) DO UPDATE SET
        fence = excluded.fence, data = excluded.data, saved_at = excluded.saved_at
"""


def _boot_id() -> str:
    """This boot of the machine: monotonic readings compare only within one boot."""
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as file:
            return file.read().strip()
    except OSError:
        # No boot id (not Linux): the boot time, from the wall clock minus the monotonic one,
        # rounded so readings taken moments apart agree.
        return f"t{round(time.time() - time.monotonic(), -1):.0f}"


_BOOT = _boot_id()

Row = tuple[str, int, str, float, float, int, str]


def _warn(line: str) -> None:
    warnings.warn(line, RuntimeWarning, stacklevel=3)


class SqliteStore(SqlStore[sqlite3.Connection]):
    """A CheckpointStore, ConversationBlobs and FencedLeases in the SQLite file ``path``, for many processes.

    Open one store per process (one connection, shared by its threads); a store carried into
    a forked child opens a connection of its own there. The file and its directory are
    created when missing. A checkpoint row that cannot be decoded counts as no checkpoint and
    is reported through ``log`` (by default a ``RuntimeWarning``). ``close()`` (or a ``with``
    block) closes the connection; a closed store refuses every call.

    Raises:
        StoreError: the file cannot be opened or is not an agentshim store of a version this
            agentshim knows (here, and from any method when the database fails or stays
            locked longer than ``busy_timeout`` seconds).
        InvalidRequestError: ``busy_timeout`` is not a positive number of seconds.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        busy_timeout: float = 5.0,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.path = Path(path)
        super().__init__(str(self.path), log or _warn)
        self._busy_timeout = seconds("SqliteStore", "busy_timeout", busy_timeout, positive=True)
        with self._guard:
            self._connect()

    # -- the connection -----------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        """This process's connection, opened (and the schema migrated) on first use; guard held."""
        if self._closed:
            raise StoreError(str(self.path), "closed", f"SqliteStore({str(self.path)!r}) is closed")
        connection = self._connection
        if connection is not None and self._pid == os.getpid():
            return connection
        if connection is not None:
            # Inherited through fork: SQLite forbids using it here, so open our own.
            self._connection = None
            try:
                connection.close()
            except sqlite3.Error:
                pass
        with self._failing("open"):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            connection = sqlite3.connect(
                self.path,
                timeout=self._busy_timeout,
                isolation_level=None,  # transactions are explicit: BEGIN IMMEDIATE ... COMMIT
                check_same_thread=False,  # the guard serializes this process's threads
            )
            return self._adopt(connection)

    def _prepare(self, connection: sqlite3.Connection) -> None:
        """Set the connection's pragmas and migrate the file's schema."""
        connection.execute(f"PRAGMA busy_timeout = {int(self._busy_timeout * 1000)}")
        connection.execute("PRAGMA journal_mode = WAL")
        # Durable across a crash of any process; only a power loss may cost the last
        # commits, which WAL keeps consistent.
        connection.execute("PRAGMA synchronous = NORMAL")
        self._migrate(connection)

    def _migrate(self, connection: sqlite3.Connection) -> None:
        with self._transaction_on(connection):
            found: int = connection.execute("PRAGMA user_version").fetchone()[0]
            pending = migrations_from(
                found,
                _MIGRATIONS,
                store=str(self.path),
                newer=lambda version: (
                    f"{self.path} has schema version {version}, newer than this "
                    f"agentshim writes ({SCHEMA_VERSION}); upgrade agentshim in every process that "
                    "shares it"
                ),
            )
            for statement in pending:
                connection.execute(statement)
            if found != SCHEMA_VERSION:
                connection.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")

    @staticmethod
    @contextmanager
    def _transaction_on(connection: sqlite3.Connection) -> Generator[None, None, None]:
        connection.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            if connection.in_transaction:
                connection.execute("ROLLBACK")
            raise
        connection.execute("COMMIT")

    @contextmanager
    def _failing(self, action: str) -> Generator[None, None, None]:
        """Turn a database failure into a StoreError saying what could not be done."""
        try:
            yield
        except StoreError:
            raise
        except sqlite3.Error as error:
            raise StoreError(
                str(self.path),
                str(error),
                f"could not {action} in {self.path}: {error}; check the file and its "
                "directory are writable and on a local disk (if it is locked, another "
                "process held it longer than busy_timeout)",
            ) from error
        except OSError as error:
            raise StoreError(
                str(self.path), str(error), f"could not {action} in {self.path}: {error}"
            ) from error

    @contextmanager
    def _write(self, action: str) -> Generator[sqlite3.Connection, None, None]:
        with self._guard, self._failing(action):
            connection = self._connect()
            with self._transaction_on(connection):
                yield connection

    # -- checkpoints and blobs (rows kept by SqlStore) ----------------------------------

    _LOAD = "SELECT data FROM checkpoints WHERE key = ?"
    _CLEAR = "DELETE FROM checkpoints WHERE key = ?"
    _LOAD_BLOB = "SELECT data FROM blobs WHERE key = ?"
    _CLEAR_BLOB = "DELETE FROM blobs WHERE key = ?"
    _SAVE = _SAVE_CHECKPOINT_ROW
    _SAVE_BLOB = _SAVE_BLOB_ROW

    def _q(self, template: str) -> str:
        return template

    def _checkpoint_row(self, key: str, checkpoint: Checkpoint, payload: str) -> tuple[Any, ...]:
        return (key, checkpoint.sequence, payload, time.time(), checkpoint.fence)

    def _blob_row(self, key: str, fence: int, data: bytes) -> tuple[Any, ...]:
        return (key, fence, data, time.time())

    def _check_fence(
        self, connection: sqlite3.Connection, table: str, key: str, fence: int
    ) -> None:
        if fence <= 0:
            return
        row = connection.execute(_HOLDER, (key,)).fetchone()
        holder = _live(row)
        stored = connection.execute(f"SELECT fence FROM {table} WHERE key = ?", (key,)).fetchone()
        check_fence(key, fence, holder, stored[0] if stored is not None else 0)

    # -- leases -------------------------------------------------------------------------

    def acquire(self, key: str, holder: LeaseHolder, ttl: float) -> LeaseHolder:
        """Take ``key``'s lease for ``holder`` for ``ttl`` seconds unless another live holder has it."""
        validate_lease_key("SqliteStore.acquire", key)
        ttl = seconds("SqliteStore.acquire", "ttl", ttl, positive=True)
        # A read first: a turn waiting for a held lease looks without taking the write lock.
        with self._read("read lease " + repr(key)) as connection:
            keeper = _live(connection.execute(_HOLDER, (key,)).fetchone())
        if keeper is not None and keeper.token != holder.token:
            return keeper
        with self._write("take lease " + repr(key)) as connection:
            row: Row | None = connection.execute(_HOLDER, (key,)).fetchone()
            keeper = _live(row)
            if keeper is not None and keeper.token != holder.token:
                return keeper
            if keeper is not None:  # the holder's own live grant: renewed, same fence
                connection.execute(
                    "UPDATE leases SET expires = ? WHERE key = ?", (time.monotonic() + ttl, key)
                )
                return keeper
            connection.execute("UPDATE fences SET last = last + 1")
            fence: int = connection.execute("SELECT last FROM fences").fetchone()[0]
            connection.execute(
                _TAKE,
                (
                    key,
                    holder.token,
                    holder.pid,
                    holder.host,
                    holder.since,
                    time.monotonic() + ttl,
                    fence,
                    _BOOT,
                ),
            )
        return replace(holder, fence=fence)

    def holder(self, key: str) -> LeaseHolder | None:
        """The live holder of ``key``'s lease (with its fencing token), or None."""
        validate_lease_key("SqliteStore.holder", key)
        with self._read("read lease " + repr(key)) as connection:
            return _live(connection.execute(_HOLDER, (key,)).fetchone())

    def renew(self, key: str, holder: LeaseHolder, ttl: float) -> bool:
        """Extend ``holder``'s lease to ``ttl`` seconds from now; False when it is not its any more."""
        validate_lease_key("SqliteStore.renew", key)
        ttl = seconds("SqliteStore.renew", "ttl", ttl, positive=True)
        with self._write("renew lease " + repr(key)) as connection:
            cursor = connection.execute(
                "UPDATE leases SET expires = ?, boot = ? WHERE key = ? AND token = ?",
                (time.monotonic() + ttl, _BOOT, key, holder.token),
            )
            return cursor.rowcount == 1

    def release(self, key: str, holder: LeaseHolder) -> None:
        """Drop ``holder``'s lease on ``key``, if it still has it."""
        validate_lease_key("SqliteStore.release", key)
        with self._write("release lease " + repr(key)) as connection:
            connection.execute(
                "DELETE FROM leases WHERE key = ? AND token = ?", (key, holder.token)
            )


def _live(row: Row | None) -> LeaseHolder | None:
    """The holder in ``row`` when its lease has not expired (a lease of another boot has)."""
    if row is None:
        return None
    token, pid, host, since, expires, fence, boot = row
    if boot != _BOOT or expires <= time.monotonic():
        return None
    return LeaseHolder(pid, host, since, token, fence)
