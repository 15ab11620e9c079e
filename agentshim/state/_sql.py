"""What the SQLite and PostgreSQL stores share: the per-process connection and the rows.

Both keep their connection the same way: opened on first use in each process (a connection
carried into a forked child is never used there), serialized by a lock, closed once by
``close()`` or a ``with`` block, refused after that. Both keep checkpoints and conversation
blobs as rows under a key, fenced by the key's lease, so loading, saving and clearing them is
written once here; a store supplies its SQL dialect and how it reaches its connection.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Callable, Generator, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from agentshim.core.errors import StoreError
from agentshim.state.checkpoints import (
    Checkpoint,
    as_blob,
    stored_checkpoint,
    validate_checkpoint_key,
)

__all__ = ["SqlStore", "migrations_from"]


class _Connection(Protocol):
    def close(self) -> None: ...

    def execute(self, query: Any, params: Any = ..., /) -> Any: ...


_C = TypeVar("_C", bound=_Connection)


def migrations_from(
    found: int,
    migrations: Sequence[Sequence[str]],
    *,
    store: str,
    newer: Callable[[int], str],
) -> Iterator[str]:
    """The statements that take a schema at version ``found`` to ``len(migrations)``, in order.

    ``migrations[v]`` takes version ``v`` to ``v + 1``. When ``found`` is newer than this
    agentshim writes, a StoreError of ``store`` is raised before any statement, with
    ``newer(found)`` as its message.
    """
    if found > len(migrations):
        raise StoreError(store, f"schema version {found}", newer(found))
    for version in range(found, len(migrations)):
        yield from migrations[version]


_Store = TypeVar("_Store", bound="SqlStore[Any]")


class SqlStore(Generic[_C]):
    """A store's connection, and its checkpoint and blob rows.

    A subclass calls ``__init__`` before anything else and supplies: ``_connect`` (this
    process's connection, opened when missing and handed to ``_adopt``; called with ``_guard``
    held), ``_prepare`` (what a new connection needs first), ``_failing`` (a
    context that turns the database's own errors into a ``StoreError`` about ``action``),
    ``_write`` (the connection inside one transaction), ``_check_fence``, ``_q`` (a statement
    in its dialect), the statements below and the rows its save statements take.
    """

    _LOAD: ClassVar[str]
    _CLEAR: ClassVar[str]
    _LOAD_BLOB: ClassVar[str]
    _CLEAR_BLOB: ClassVar[str]
    _SAVE: ClassVar[str]
    _SAVE_BLOB: ClassVar[str]

    def __init__(self, where: str, log: Callable[[str], None]) -> None:
        self._guard = threading.Lock()
        self._connection: _C | None = None
        self._pid = 0
        self._closed = False
        self._where = where
        self._log = log

    # -- what a store supplies ----------------------------------------------------------------

    def _connect(self) -> _C:
        raise NotImplementedError

    def _prepare(self, connection: _C) -> None:
        """Make a connection just opened ready for use (settings, the schema migrated)."""
        raise NotImplementedError

    def _failing(self, action: str) -> AbstractContextManager[None]:
        raise NotImplementedError

    def _write(self, action: str) -> AbstractContextManager[_C]:
        raise NotImplementedError

    def _check_fence(self, connection: _C, table: str, key: str, fence: int) -> None:
        raise NotImplementedError

    def _q(self, template: str) -> Any:
        raise NotImplementedError

    def _checkpoint_row(self, key: str, checkpoint: Checkpoint, payload: str) -> tuple[Any, ...]:
        raise NotImplementedError

    def _blob_row(self, key: str, fence: int, data: bytes) -> tuple[Any, ...]:
        raise NotImplementedError

    # -- the connection -----------------------------------------------------------------------

    def _adopt(self, connection: _C) -> _C:
        """Prepare ``connection`` and keep it as this process's; it is closed if that fails."""
        try:
            self._prepare(connection)
        except BaseException:
            connection.close()
            raise
        self._connection = connection
        self._pid = os.getpid()
        return connection

    @contextmanager
    def _read(self, action: str) -> Generator[_C, None, None]:
        """The connection for statements that only read (outside any transaction)."""
        with self._guard, self._failing(action):
            yield self._connect()

    def close(self) -> None:
        """Close this process's connection; idempotent. Later calls raise StoreError."""
        with self._guard:
            connection, self._connection = self._connection, None
            self._closed = True
            if connection is not None and self._pid == os.getpid():
                connection.close()

    def __enter__(self: _Store) -> _Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- checkpoints ----------------------------------------------------------------------------

    def load(self, key: str) -> Checkpoint | None:
        """Return the checkpoint under ``key``; None when there is none or it cannot be decoded."""
        validate_checkpoint_key(key)
        with self._read("read checkpoint " + repr(key)) as connection:
            row = connection.execute(self._q(self._LOAD), (key,)).fetchone()
        if row is None:
            return None
        return stored_checkpoint(row[0], f"checkpoint {key!r} in {self._where}", self._log)

    def save(self, key: str, checkpoint: Checkpoint) -> None:
        """Save ``checkpoint`` under ``key`` unless the one there is newer (``Checkpoint.replaces``).

        Raises:
            LeaseLostError: the save is fenced by an older grant than the key's lease.
        """
        validate_checkpoint_key(key)
        payload = json.dumps(checkpoint.to_dict(), sort_keys=True)
        with self._write("save checkpoint " + repr(key)) as connection:
            self._check_fence(connection, "checkpoints", key, checkpoint.fence)
            connection.execute(self._q(self._SAVE), self._checkpoint_row(key, checkpoint, payload))

    def clear(self, key: str) -> None:
        """Remove the checkpoint under ``key``; nothing to remove is fine."""
        validate_checkpoint_key(key)
        with self._write("clear checkpoint " + repr(key)) as connection:
            connection.execute(self._q(self._CLEAR), (key,))

    # -- conversation blobs ---------------------------------------------------------------------

    def load_blob(self, key: str) -> bytes | None:
        """The conversation blob under ``key``, or None."""
        validate_checkpoint_key(key)
        with self._read("read blob " + repr(key)) as connection:
            row = connection.execute(self._q(self._LOAD_BLOB), (key,)).fetchone()
        return bytes(row[0]) if row is not None else None

    def save_blob(self, key: str, blob: bytes, *, fence: int = 0) -> None:
        """Keep ``blob`` under ``key`` (LeaseLostError when fenced out)."""
        validate_checkpoint_key(key)
        data = as_blob(blob)
        with self._write("save blob " + repr(key)) as connection:
            self._check_fence(connection, "blobs", key, fence)
            connection.execute(self._q(self._SAVE_BLOB), self._blob_row(key, fence, data))

    def clear_blob(self, key: str) -> None:
        """Remove the blob under ``key``; nothing to remove is fine."""
        validate_checkpoint_key(key)
        with self._write("clear blob " + repr(key)) as connection:
            connection.execute(self._q(self._CLEAR_BLOB), (key,))
