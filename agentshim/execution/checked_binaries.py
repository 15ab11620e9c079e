"""Binaries whose ``--version`` health check passed, remembered for the life of the process.

The health check of a node CLI (Gemini CLI, opencode, Pi) costs 1.5-2.5 s, and every new
agent ran it again on the same unchanged file. :class:`CheckedBinaries` remembers a check that
passed under the file's identity: its path, and what ``stat`` says of the file it resolves to
(device, inode, size, modification time in nanoseconds), with the environment the check ran
with (a script's interpreter is found on its ``PATH``, and a CLI may read its variables). Replacing, upgrading or touching the binary changes
that identity, so the next check runs again; a check that failed is never remembered.

Only an executor that runs commands on this machine can ``stat`` what it runs, so only the
host executor consults it.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass

__all__ = ["CHECKED_BINARIES", "BinaryIdentity", "CheckedBinaries"]


@dataclass(frozen=True, slots=True)
class BinaryIdentity:
    """What makes a health check still true: the file as it is, and the env it ran with."""

    path: str
    device: int
    inode: int
    size: int
    mtime_ns: int
    env_digest: str

    @classmethod
    def of(cls, path: str, env: Mapping[str, str]) -> BinaryIdentity | None:
        """The identity of ``path`` now (``stat`` follows links), or None when it cannot be read."""
        try:
            found = os.stat(path)
        except (OSError, ValueError):
            return None
        return cls(path, found.st_dev, found.st_ino, found.st_size, found.st_mtime_ns, _digest(env))


def _digest(env: Mapping[str, str]) -> str:
    # A digest, not the env itself: the record never holds a credential the env carries.
    hashed = hashlib.sha256()
    for name in sorted(env):
        hashed.update(f"{name}\0{env[name]}\0".encode("utf-8", "surrogatepass"))
    return hashed.hexdigest()


class CheckedBinaries:
    """A thread-safe set of binary identities whose health check passed.

    Bounded: past ``limit`` identities the oldest is forgotten (it is checked again when next
    seen), so a long-lived service that keeps installing new CLI versions does not grow it.
    """

    def __init__(self, limit: int = 256) -> None:
        self._limit = limit
        self._lock = threading.Lock()
        self._passed: dict[BinaryIdentity, None] = {}

    def passed(self, identity: BinaryIdentity) -> bool:
        """Whether a check of ``identity`` passed before."""
        with self._lock:
            return identity in self._passed

    def remember(self, identity: BinaryIdentity) -> None:
        """Record that a check of ``identity`` passed."""
        with self._lock:
            self._passed[identity] = None
            while len(self._passed) > self._limit:
                del self._passed[next(iter(self._passed))]

    def forget(self) -> None:
        """Forget every check (the next check of each binary runs again)."""
        with self._lock:
            self._passed.clear()


CHECKED_BINARIES = CheckedBinaries()
"""The process-wide record the host executor consults before running a health check."""
