"""FakeCheckpointStore: an in-memory CheckpointStore that records every call and can fail on demand."""

from __future__ import annotations

import threading
from collections.abc import Mapping
from dataclasses import dataclass

from agentshim.state import checkpoints
from agentshim.state.checkpoints import Checkpoint, validate_checkpoint_key
from agentshim.state.leases import FencedLeases

__all__ = ["CheckpointOp", "FakeCheckpointStore"]


@dataclass(frozen=True, slots=True)
class CheckpointOp:
    """One call a FakeCheckpointStore received: ``load``, ``save``, ``clear`` or a blob call.

    Blob calls are ``load_blob``, ``save_blob`` (with ``blob``) and ``clear_blob``.
    """

    op: str
    key: str
    checkpoint: Checkpoint | None = None
    blob: bytes | None = None


class FakeCheckpointStore:
    """A CheckpointStore for tests: starts from ``saved``, records every call in ``ops``.

    With ``fail_saves`` (or ``fail_clears``) those calls raise OSError, as a full disk or a
    read-only directory would, after being recorded. It keeps conversation blobs too, and
    given ``leases`` refuses writes fenced by a lost grant, as a real store does.

    Attributes:
        saved: What is stored now, by key.
        blobs: The blobs stored now, by key.
        ops: Every call, in order.
    """

    def __init__(
        self,
        saved: Mapping[str, Checkpoint] | None = None,
        *,
        fail_saves: bool = False,
        fail_clears: bool = False,
        leases: FencedLeases | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._leases = leases
        self.saved: dict[str, Checkpoint] = dict(saved or {})
        self.blobs: dict[str, bytes] = {}
        self._blob_fences: dict[str, int] = {}
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
            holder = self._leases.holder(key) if self._leases is not None else None
            checkpoints.keep_checkpoint(self.saved, key, checkpoint, holder)

    def clear(self, key: str) -> None:
        """Remove what is stored under ``key`` (OSError with ``fail_clears``)."""
        validate_checkpoint_key(key)
        with self._lock:
            self.ops.append(CheckpointOp("clear", key))
            if self.fail_clears:
                raise OSError(30, "Read-only file system (fake)")
            self.saved.pop(key, None)

    def load_blob(self, key: str) -> bytes | None:
        """Return the blob stored under ``key``."""
        validate_checkpoint_key(key)
        with self._lock:
            found = self.blobs.get(key)
            self.ops.append(CheckpointOp("load_blob", key, blob=found))
            return found

    def save_blob(self, key: str, blob: bytes, *, fence: int = 0) -> None:
        """Store ``blob`` under ``key`` (OSError with ``fail_saves``; LeaseLostError when fenced out)."""
        validate_checkpoint_key(key)
        data = checkpoints.as_blob(blob)
        with self._lock:
            self.ops.append(CheckpointOp("save_blob", key, blob=data))
            if self.fail_saves:
                raise OSError(28, "No space left on device (fake)")
            holder = self._leases.holder(key) if self._leases is not None else None
            checkpoints.check_fence(key, fence, holder, self._blob_fences.get(key, 0))
            self.blobs[key] = data
            self._blob_fences[key] = fence

    def clear_blob(self, key: str) -> None:
        """Remove the blob under ``key``."""
        validate_checkpoint_key(key)
        with self._lock:
            self.ops.append(CheckpointOp("clear_blob", key))
            self.blobs.pop(key, None)
            self._blob_fences.pop(key, None)

    def of(self, op: str) -> list[CheckpointOp]:
        """The recorded calls of one kind (``"load"``, ``"save"`` or ``"clear"``)."""
        with self._lock:
            return [entry for entry in self.ops if entry.op == op]
