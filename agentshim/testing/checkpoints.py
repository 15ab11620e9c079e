"""FakeCheckpointStore: an in-memory CheckpointStore that records every call and can fail on demand."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

from agentshim.core.checkpoints import Checkpoint, validate_checkpoint_key

__all__ = ["CheckpointOp", "FakeCheckpointStore"]


@dataclass(frozen=True, slots=True)
class CheckpointOp:
    """One call a FakeCheckpointStore received: ``load``, ``save`` or ``clear``."""

    op: str
    key: str
    checkpoint: Checkpoint | None = None


class FakeCheckpointStore:
    """A CheckpointStore for tests: starts from ``saved``, records every call in ``ops``.

    With ``fail_saves`` (or ``fail_clears``) those calls raise OSError, as a full disk or a
    read-only directory would, after being recorded.

    Attributes:
        saved: What is stored now, by key.
        ops: Every call, in order.
    """

    def __init__(
        self,
        saved: Mapping[str, Checkpoint] | None = None,
        *,
        fail_saves: bool = False,
        fail_clears: bool = False,
    ) -> None:
        self._lock = threading.Lock()
        self.saved: dict[str, Checkpoint] = dict(saved or {})
        self.ops: list[CheckpointOp] = []
        self.fail_saves = fail_saves
        self.fail_clears = fail_clears

    def load(self, key: str) -> Checkpoint | None:
        """Return what is stored under ``key``."""
        validate_checkpoint_key(key)
        with self._lock:
            found = self.saved.get(key)
            self.ops.append(CheckpointOp("load", key, found))
            return found

    def save(self, key: str, checkpoint: Checkpoint) -> None:
        """Store ``checkpoint`` under ``key`` unless a newer one is there (OSError with ``fail_saves``)."""
        validate_checkpoint_key(key)
        with self._lock:
            self.ops.append(CheckpointOp("save", key, checkpoint))
            if self.fail_saves:
                raise OSError(28, "No space left on device (fake)")
            if checkpoint.replaces(self.saved.get(key)):
                self.saved[key] = checkpoint

    def clear(self, key: str) -> None:
        """Remove what is stored under ``key`` (OSError with ``fail_clears``)."""
        validate_checkpoint_key(key)
        with self._lock:
            self.ops.append(CheckpointOp("clear", key))
            if self.fail_clears:
                raise OSError(30, "Read-only file system (fake)")
            self.saved.pop(key, None)

    def of(self, op: str) -> list[CheckpointOp]:
        """The recorded calls of one kind (``"load"``, ``"save"`` or ``"clear"``)."""
        with self._lock:
            return [entry for entry in self.ops if entry.op == op]
