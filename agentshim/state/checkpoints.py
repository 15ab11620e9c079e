"""Checkpoints: the conversation a session holds, saved so it survives a process restart.

A :class:`Checkpoint` names the provider conversation a session keeps and the usage its last
turn reported. A :class:`CheckpointStore` keeps one per key (typically one key per user
conversation in a service). :class:`InMemoryCheckpointStore` lives as long as the process;
:class:`FileCheckpointStore` writes one JSON file per key and is read back after a restart;
``SqliteStore`` (in :mod:`agentshim.state.sqlite_store`) keeps them in one database file that
many processes share.

Every checkpoint a session saves carries a ``sequence``, one more than the last one it saw
under its key, and a store never lets a save replace a newer checkpoint
(:meth:`Checkpoint.replaces`): a process that lost a race cannot overwrite what another
process saved since.

A save made under a lease carries the lease's fencing token (``Checkpoint.fence``). A store
refuses it with ``LeaseLostError`` when a newer grant holds the key (stores given
``FencedLeases``, and the stores that keep leases themselves) or when the checkpoint there was
written under a newer grant. A :class:`ConversationBlobs` store also keeps one opaque blob per
key beside the checkpoint, the conversation's CLI state, fenced the same way.
"""

from __future__ import annotations

import json
import re
import threading
import warnings
from collections.abc import Callable, Mapping, MutableMapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from agentshim.core._checks import instance, matching
from agentshim.core._files import atomic_write
from agentshim.core.errors import InvalidRequestError, LeaseLostError
from agentshim.core.ids import is_valid_session_id
from agentshim.core.usage import ProviderUsage
from agentshim.state.leases import FencedLeases, LeaseHolder

__all__ = [
    "Checkpoint",
    "CheckpointStore",
    "ConversationBlobs",
    "FileCheckpointStore",
    "InMemoryCheckpointStore",
    "as_blob",
    "check_fence",
    "keep_checkpoint",
    "stored_checkpoint",
    "validate_checkpoint_key",
]

_KEY = re.compile(r"[A-Za-z0-9_-][A-Za-z0-9._-]{0,199}")
_FORMAT_VERSION = 2
#: The key naming the conversation, per format version: version 1 files (``conversation_id``)
#: written before the rename to ``session_id`` still load.
_ID_KEYS = {1: "conversation_id", 2: "session_id"}


def validate_checkpoint_key(key: str) -> str:
    """Return ``key`` unchanged, or raise InvalidRequestError when it is not a safe checkpoint key.

    A key is 1-200 letters, digits, ``.``, ``_`` and ``-`` and does not start with ``.``, so
    it can name a file in a directory without ever leaving it (no ``/``, no ``..``, no hidden
    files).
    """
    hint = (
        f"invalid checkpoint key {key!r} (checkpoint_key): use 1-200 letters, digits, '.', "
        "'_' or '-', not starting with '.' (hash or encode ids that contain other characters)"
    )
    return matching("", "checkpoint_key", key, _KEY, "a safe file name", hint)


@dataclass(frozen=True, slots=True)
class Checkpoint:
    """The conversation a session holds: its id, the usage of its last turn, its turn count.

    ``turns`` counts the completed turns in this conversation, so a renewal budget keeps
    counting across a restart. ``sequence`` orders the saves under one key (each save of a
    session is one more than the last it saw); 0 means unordered, as in a checkpoint built by
    hand or saved by an older version. ``fence`` is the fencing token of the lease the save
    was made under (0: none); a store refuses a save fenced by a grant older than the one it
    knows for the key.
    """

    session_id: str
    usage: ProviderUsage | None = None
    turns: int = 0
    sequence: int = 0
    fence: int = 0

    def __post_init__(self) -> None:
        if not is_valid_session_id(self.session_id):
            raise InvalidRequestError(
                "Checkpoint.session_id",
                f"{self.session_id!r} is not a valid session id",
                f"invalid session id {self.session_id!r} for a checkpoint "
                "(Checkpoint.session_id): ids are 1-128 letters, digits, '.', '_' and '-'",
            )
        if self.usage is not None:
            instance("Checkpoint", "usage", self.usage, ProviderUsage, "a ProviderUsage or None")
        _count("turns", self.turns)
        _count("sequence", self.sequence)
        _count("fence", self.fence)

    def replaces(self, stored: Checkpoint | None) -> bool:
        """Whether saving this checkpoint over ``stored`` keeps this one.

        It does unless both are ordered (``sequence`` > 0) and ``stored`` is as new or newer:
        a save that lost a race never overwrites the winner. Every store applies this rule.
        """
        return stored is None or not (0 < self.sequence <= stored.sequence)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-ready dict; ``from_dict`` reverses it."""
        return {
            "version": _FORMAT_VERSION,
            "session_id": self.session_id,
            "usage": self.usage.to_dict() if self.usage is not None else None,
            "turns": self.turns,
            "sequence": self.sequence,
            "fence": self.fence,
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Checkpoint:
        """Rebuild from ``to_dict`` output, of this format version or of version 1.

        Raises:
            InvalidRequestError: ``data`` is not ``to_dict`` output of a known format version.
        """
        if not isinstance(data, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise _not_a_checkpoint(f"{type(data).__name__} is not an object")
        version = data.get("version")
        id_key = _ID_KEYS.get(version) if isinstance(version, int) else None
        if id_key is None or isinstance(version, bool):
            raise _not_a_checkpoint(f"unknown checkpoint format version {version!r}")
        session_id = data.get(id_key)
        if not isinstance(session_id, str):
            raise _not_a_checkpoint(f"checkpoint has no {id_key} string")
        usage_data = data.get("usage")
        if usage_data is not None and not isinstance(usage_data, Mapping):
            raise _not_a_checkpoint("checkpoint usage is not an object")
        try:
            usage = ProviderUsage.from_dict(usage_data) if usage_data is not None else None  # pyright: ignore[reportUnknownArgumentType]
        except (TypeError, ValueError, KeyError, AttributeError, OverflowError) as error:
            raise _not_a_checkpoint(f"checkpoint usage is malformed ({error})") from error
        return cls(
            session_id=session_id,
            usage=usage,
            turns=data.get("turns", 0),
            sequence=data.get("sequence", 0),
            fence=data.get("fence", 0),
        )


def stored_checkpoint(text: str, where: str, log: Callable[[str], None]) -> Checkpoint | None:
    """The checkpoint a store kept as ``text`` (its JSON), or None when it cannot be decoded.

    A store that finds its copy corrupt goes on without it: ``log`` gets a line naming it
    (``where``, e.g. ``"checkpoint 'user-42' in /srv/state.db"``) and what was wrong.
    """
    try:
        data = json.loads(text)
        if not isinstance(data, dict):
            raise ValueError("not a JSON object")
        return Checkpoint.from_dict(data)  # pyright: ignore[reportUnknownArgumentType]
    except (
        ValueError,
        TypeError,
        KeyError,
        AttributeError,
        RecursionError,  # nesting too deep to decode
        OverflowError,  # a count such as 1e999
    ) as error:
        log(f"{where} is corrupt ({error!r}); starting without it")
        return None


def check_fence(key: str, fence: int, holder: LeaseHolder | None, stored_fence: int = 0) -> None:
    """Refuse a write fenced by ``fence`` when a newer grant owns ``key``; every store applies it.

    ``holder`` is the live holder of the key's lease (None: free or unknown) and
    ``stored_fence`` the token the stored checkpoint or blob was written under. An unfenced
    write (``fence`` 0) is never refused.

    Raises:
        LeaseLostError: ``holder`` holds another grant, or ``stored_fence`` is newer.
    """
    if fence <= 0:
        return
    if holder is not None and holder.fence > 0 and holder.fence != fence:
        raise LeaseLostError(key, fence, holder.pid, holder.host, holder.since, holder.fence)
    if stored_fence > fence:
        raise LeaseLostError(key, fence, holder_fence=stored_fence)


def keep_checkpoint(
    saved: MutableMapping[str, Checkpoint],
    key: str,
    checkpoint: Checkpoint,
    holder: LeaseHolder | None,
) -> None:
    """Put ``checkpoint`` in ``saved`` under ``key`` the way an in-memory store saves one.

    The write is refused when fenced out (see :func:`check_fence`) and skipped when the
    checkpoint kept there is newer (see :meth:`Checkpoint.replaces`).

    Raises:
        LeaseLostError: ``checkpoint`` is fenced by an older grant than the key's.
    """
    stored = saved.get(key)
    check_fence(key, checkpoint.fence, holder, stored.fence if stored else 0)
    if checkpoint.replaces(stored):
        saved[key] = checkpoint


def _count(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidRequestError(
            f"Checkpoint.{name}",
            f"{value!r} is not a non-negative int",
            f"Checkpoint.{name} must be a non-negative int, got {value!r}",
        )


def _not_a_checkpoint(problem: str) -> InvalidRequestError:
    return InvalidRequestError(
        "data", problem, f"{problem}; Checkpoint.from_dict data must be Checkpoint.to_dict output"
    )


@runtime_checkable
class CheckpointStore(Protocol):
    """Keeps one checkpoint per key. Every method validates the key (InvalidRequestError if unsafe)."""

    def load(self, key: str) -> Checkpoint | None:
        """Return the checkpoint saved under ``key``, or None when there is none (or it is unreadable)."""
        ...

    def save(self, key: str, checkpoint: Checkpoint) -> None:
        """Save ``checkpoint`` under ``key``, replacing the earlier one if ``checkpoint.replaces`` it.

        A checkpoint that does not replace the stored one (an older ``sequence``) is dropped
        without an error: the newer one stays.
        """
        ...

    def clear(self, key: str) -> None:
        """Remove the checkpoint under ``key``; nothing to remove is fine."""
        ...


@runtime_checkable
class ConversationBlobs(Protocol):
    """Keeps one opaque blob per key beside its checkpoint: a conversation's packed CLI state.

    What makes a store *portable*: a session saves the conversation's CLI files here after
    each turn, so a worker on another host can import them and resume. Writes carry the
    fencing token of the writer's lease, refused as checkpoint saves are. Prove an
    implementation with ``agentshim.testing.contracts.CheckpointStoreContract``.
    """

    def load_blob(self, key: str) -> bytes | None:
        """The blob saved under ``key``, or None."""
        ...

    def save_blob(self, key: str, blob: bytes, *, fence: int = 0) -> None:
        """Keep ``blob`` under ``key``, replacing the earlier one.

        Raises:
            LeaseLostError: ``fence`` is older than the grant the store knows for ``key``.
        """
        ...

    def clear_blob(self, key: str) -> None:
        """Remove the blob under ``key``; nothing to remove is fine."""
        ...


def _live_holder(leases: FencedLeases | None, key: str) -> LeaseHolder | None:
    return leases.holder(key) if leases is not None else None


def _fenced_leases(owner: str, leases: FencedLeases | None) -> FencedLeases | None:
    if leases is None:
        return None
    return instance(owner, "leases", leases, FencedLeases, "a FencedLeases such as InMemoryLeases")


class InMemoryCheckpointStore:
    """A thread-safe store of checkpoints and conversation blobs that lives as long as the process.

    Given ``leases`` (the ones the sessions lease keys on), a fenced save is refused when
    another grant holds the key; without, when the stored checkpoint has a newer fence.
    """

    def __init__(self, *, leases: FencedLeases | None = None) -> None:
        self._lock = threading.Lock()
        self._saved: dict[str, Checkpoint] = {}
        self._blobs: dict[str, tuple[int, bytes]] = {}
        self._leases = _fenced_leases("InMemoryCheckpointStore", leases)

    def load(self, key: str) -> Checkpoint | None:
        """Return the checkpoint under ``key``, or None."""
        validate_checkpoint_key(key)
        with self._lock:
            return self._saved.get(key)

    def save(self, key: str, checkpoint: Checkpoint) -> None:
        """Keep ``checkpoint`` under ``key``, unless a newer one is kept there.

        Raises:
            LeaseLostError: the save is fenced by an older grant than the key's.
        """
        validate_checkpoint_key(key)
        holder = _live_holder(self._leases, key)
        with self._lock:
            keep_checkpoint(self._saved, key, checkpoint, holder)

    def clear(self, key: str) -> None:
        """Forget the checkpoint under ``key``."""
        validate_checkpoint_key(key)
        with self._lock:
            self._saved.pop(key, None)

    def load_blob(self, key: str) -> bytes | None:
        """The blob under ``key``, or None."""
        validate_checkpoint_key(key)
        with self._lock:
            kept = self._blobs.get(key)
            return kept[1] if kept is not None else None

    def save_blob(self, key: str, blob: bytes, *, fence: int = 0) -> None:
        """Keep ``blob`` under ``key`` (LeaseLostError when fenced out)."""
        validate_checkpoint_key(key)
        data = as_blob(blob)
        holder = _live_holder(self._leases, key)
        with self._lock:
            kept = self._blobs.get(key)
            check_fence(key, fence, holder, kept[0] if kept is not None else 0)
            self._blobs[key] = (fence, data)

    def clear_blob(self, key: str) -> None:
        """Forget the blob under ``key``."""
        validate_checkpoint_key(key)
        with self._lock:
            self._blobs.pop(key, None)


def as_blob(blob: object) -> bytes:
    """``blob`` as bytes, or InvalidRequestError when it is not bytes-like."""
    if isinstance(blob, bytes):
        return blob
    if isinstance(blob, bytearray):
        return bytes(blob)
    raise InvalidRequestError(
        "blob", f"{type(blob).__name__} is not bytes", "a conversation blob is bytes"
    )


def _warn(line: str) -> None:
    warnings.warn(line, RuntimeWarning, stacklevel=3)


class FileCheckpointStore:
    """One JSON file per key in ``directory``, replaced atomically; survives a restart.

    The directory is created on the first save. A file that cannot be read or is not a valid
    checkpoint counts as no checkpoint: ``load`` returns None and says why through ``log``
    (by default a ``RuntimeWarning``), so a damaged file costs the conversation, never the
    service. ``save`` and ``clear`` raise OSError when the directory is not writable.
    Conversation blobs are kept as ``<key>.blob`` beside the checkpoint. A fenced write is
    refused (``LeaseLostError``) while another grant holds the key (given ``leases``) or when
    this store object saw a newer grant's write to it.
    """

    def __init__(
        self,
        directory: str | Path,
        *,
        log: Callable[[str], None] | None = None,
        leases: FencedLeases | None = None,
    ) -> None:
        self.directory = Path(directory)
        self._log: Callable[[str], None] = log or _warn
        self._lock = threading.Lock()
        self._leases = _fenced_leases("FileCheckpointStore", leases)
        self._fences: dict[str, int] = {}

    def path_for(self, key: str) -> Path:
        """Return the file that holds the checkpoint for ``key``."""
        return self.directory / f"{validate_checkpoint_key(key)}.json"

    def load(self, key: str) -> Checkpoint | None:
        """Read the checkpoint for ``key``; None when absent, unreadable or corrupt."""
        path = self.path_for(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError) as error:
            self._log(f"checkpoint {path} is unreadable ({error}); starting without it")
            return None
        return stored_checkpoint(text, f"checkpoint {path}", self._log)

    def save(self, key: str, checkpoint: Checkpoint) -> None:
        """Write the checkpoint for ``key`` so a reader sees the old file or the new one.

        A file holding a newer checkpoint (see :meth:`Checkpoint.replaces`) is left as it is.
        The comparison holds between the threads of one process; processes that share a
        directory can race between reading and replacing the file (``SqliteStore`` cannot).
        """
        path = self.path_for(key)
        payload = json.dumps(checkpoint.to_dict(), sort_keys=True, indent=2) + "\n"
        holder = _live_holder(self._leases, key)
        with self._lock:
            self._fence_check(key, checkpoint.fence, holder)
            if checkpoint.sequence > 0 and not checkpoint.replaces(self._quiet_load(path)):
                return
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write(path, payload)

    def _fence_check(self, key: str, fence: int, holder: LeaseHolder | None) -> None:
        """Refuse a write fenced out; the lock is held.

        The newest fence is remembered by this store object, not read from the files: the
        leases' tokens start again when their process does, and a token from an earlier
        process must not shut out every later one.
        """
        check_fence(key, fence, holder, self._fences.get(key, 0))
        if fence > 0:
            self._fences[key] = fence

    @staticmethod
    def _quiet_load(path: Path) -> Checkpoint | None:
        """The checkpoint in ``path`` for comparison only; unreadable counts as none."""
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            return Checkpoint.from_dict(data) if isinstance(data, dict) else None  # pyright: ignore[reportUnknownArgumentType]
        except (OSError, UnicodeDecodeError, ValueError, TypeError, RecursionError):
            return None

    def clear(self, key: str) -> None:
        """Delete the checkpoint file for ``key``, if there is one."""
        path = self.path_for(key)
        with self._lock:
            path.unlink(missing_ok=True)

    def load_blob(self, key: str) -> bytes | None:
        """The blob saved for ``key``, or None (an unreadable file is reported and counts as none)."""
        path = self.path_for(key).with_suffix(".blob")
        try:
            return path.read_bytes()
        except FileNotFoundError:
            return None
        except OSError as error:
            self._log(f"conversation blob {path} is unreadable ({error}); going on without it")
            return None

    def save_blob(self, key: str, blob: bytes, *, fence: int = 0) -> None:
        """Write ``blob`` for ``key`` atomically (LeaseLostError when fenced out)."""
        base = self.path_for(key)
        data = as_blob(blob)
        holder = _live_holder(self._leases, key)
        with self._lock:
            self._fence_check(key, fence, holder)
            self.directory.mkdir(parents=True, exist_ok=True)
            atomic_write(base.with_suffix(".blob"), data)

    def clear_blob(self, key: str) -> None:
        """Delete the blob for ``key``, if there is one."""
        base = self.path_for(key)
        with self._lock:
            base.with_suffix(".blob").unlink(missing_ok=True)
