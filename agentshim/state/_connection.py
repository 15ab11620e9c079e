"""One database connection per process, shared by the process's threads behind one lock.

The SQLite and PostgreSQL stores keep their connection the same way: opened on first use in
each process (a connection carried into a forked child is never used there), serialized by a
lock, closed once by ``close()`` or a ``with`` block, refused after that.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Generator
from contextlib import AbstractContextManager, contextmanager
from typing import Any, Generic, Protocol, TypeVar

__all__ = ["ProcessConnection"]


class _Closable(Protocol):
    def close(self) -> None: ...


_C = TypeVar("_C", bound=_Closable)
_Store = TypeVar("_Store", bound="ProcessConnection[Any]")


class ProcessConnection(Generic[_C]):
    """The connection of a store: ``_connect`` opens it, ``_failing`` names a failure.

    A subclass calls ``__init__`` before anything else, and implements ``_connect`` (this
    process's connection, opened when missing; called with ``_guard`` held) and ``_failing``
    (a context that turns the database's own errors into a ``StoreError`` about ``action``).
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._connection: _C | None = None
        self._pid = 0
        self._closed = False

    def _connect(self) -> _C:
        raise NotImplementedError

    def _failing(self, action: str) -> AbstractContextManager[None]:
        raise NotImplementedError

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
