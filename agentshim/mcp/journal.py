"""The recovery journal of an MCP config-file install: what a turn that never ended must undo.

Before agentshim writes its MCP servers into a config file, it writes a journal entry (the
file's original bytes and mode, the names it adds, the directories it creates) to a private
per-user directory, and holds an exclusive ``flock`` on that entry for the whole turn. The lock
is what tells a live turn from a dead one: the kernel drops it when the process ends, however it
ends (SIGKILL included). An entry nobody holds belongs to a turn that never restored its file.

The directory is ``$AGENTSHIM_STATE_DIR`` when set; else ``$XDG_STATE_HOME/agentshim`` (or
``~/.local/state/agentshim``), falling back to ``agentshim-<uid>`` in the system temporary
directory when that cannot be created; the entries live in its ``mcp-journal`` subdirectory
(mode 0700, entries 0600). That directory and its parent must be real directories owned by
this user that nobody else can write, or nothing in them is trusted. Entries hold no secret agentshim added: only the names of its
servers and a SHA-256 of what it wrote.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import hashlib
import json
import os
import stat
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

__all__ = [
    "STATE_DIR_ENV",
    "JournalEntry",
    "JournalLock",
    "check_private_directory",
    "journal_directories",
    "journal_file_for",
    "private_directory",
]

#: The environment variable that names agentshim's per-user state directory.
STATE_DIR_ENV = "AGENTSHIM_STATE_DIR"

_VERSION = 1
_PRIVATE_DIR = 0o700
_PRIVATE_FILE = 0o600


def _no_defaults() -> dict[str, Any]:
    return {}


@dataclass(frozen=True, slots=True)
class JournalEntry:
    """What one install changed in one config file, enough to undo it from another process.

    ``original`` is the file's bytes before the install (None: there was no file) and ``mode``
    and ``owner`` its permission bits and (uid, gid). ``link`` is the text of the symbolic link
    the path was at install (None: it was not a link) and ``link_target`` the file it led to
    (where the install wrote), ``parent_link`` the same as ``link`` for its directory.
    ``written_dir`` is the (st_dev, st_ino) of the directory the install wrote the file into,
    which a restore through a link checks before writing there. ``written_sha256`` identifies what agentshim wrote without keeping it (it holds
    the servers' secrets). ``names`` are the entries added under ``key_path``;
    ``added_defaults`` the top-level keys added; ``created_from`` the depth on ``key_path``
    from which objects were created; ``created_dirs`` the directories created, outermost first.
    """

    path: str
    original: bytes | None
    mode: int | None
    owner: tuple[int, int] | None
    written_sha256: str
    key_path: tuple[str, ...]
    names: tuple[str, ...]
    added_defaults: Mapping[str, Any] = field(default_factory=_no_defaults)
    created_from: int | None = None
    created_dirs: tuple[str, ...] = ()
    parent_mode: int | None = None
    link: str | None = None
    link_target: str | None = None
    parent_link: str | None = None
    jsonc: bool = True
    pid: int = 0
    written_dir: tuple[int, int] | None = None

    def to_bytes(self) -> bytes:
        """The entry as the JSON document stored on disk."""
        document = {
            "version": _VERSION,
            "path": self.path,
            "original": None
            if self.original is None
            else base64.b64encode(self.original).decode("ascii"),
            "mode": self.mode,
            "owner": None if self.owner is None else list(self.owner),
            "written_sha256": self.written_sha256,
            "key_path": list(self.key_path),
            "names": list(self.names),
            "added_defaults": dict(self.added_defaults),
            "created_from": self.created_from,
            "created_dirs": list(self.created_dirs),
            "parent_mode": self.parent_mode,
            "link": self.link,
            "link_target": self.link_target,
            "parent_link": self.parent_link,
            "jsonc": self.jsonc,
            "pid": self.pid,
            "written_dir": None if self.written_dir is None else list(self.written_dir),
        }
        return json.dumps(document, ensure_ascii=True).encode("ascii")

    @classmethod
    def from_bytes(cls, data: bytes) -> JournalEntry:
        """Read an entry written by :meth:`to_bytes`.

        Raises:
            ValueError: the data is not such an entry (truncated, edited, another version).
        """
        try:
            raw: object = json.loads(data)
            if not isinstance(raw, dict):
                raise ValueError("not an object")
            doc = cast("dict[str, Any]", raw)
            if doc.get("version") != _VERSION:
                raise ValueError(f"unknown version {doc.get('version')!r}")
            original = doc["original"]
            owner = doc["owner"]
            written_dir = doc.get("written_dir")
            entry = cls(
                path=_text(doc["path"]),
                original=None if original is None else base64.b64decode(_text(original)),
                mode=_optional_int(doc["mode"]),
                owner=None if owner is None else (int(owner[0]), int(owner[1])),
                written_sha256=_text(doc["written_sha256"]),
                key_path=tuple(_text(key) for key in doc["key_path"]),
                names=tuple(_text(name) for name in doc["names"]),
                added_defaults=dict(doc["added_defaults"]),
                created_from=_optional_int(doc["created_from"]),
                created_dirs=tuple(_text(d) for d in doc["created_dirs"]),
                parent_mode=_optional_int(doc["parent_mode"]),
                link=None if doc["link"] is None else _text(doc["link"]),
                link_target=None if doc["link_target"] is None else _text(doc["link_target"]),
                parent_link=None if doc["parent_link"] is None else _text(doc["parent_link"]),
                jsonc=bool(doc["jsonc"]),
                pid=int(doc["pid"]),
                written_dir=None
                if written_dir is None
                else (int(written_dir[0]), int(written_dir[1])),
            )
        except (KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
            raise ValueError(f"not a journal entry ({exc!r})") from None
        if not entry.key_path:
            raise ValueError("not a journal entry (no key path)")
        paths = [entry.path, *entry.created_dirs]
        if entry.link_target is not None:
            paths.append(entry.link_target)
        for path in paths:
            # Only what an install writes: an absolute path without "." or ".." in it, so
            # that where it points is what it says (`ws/../elsewhere` is not under `ws`).
            if not _normalised_absolute(path):
                raise ValueError(
                    f"not a journal entry ({path!r} is not a normalised absolute path)"
                )
        return entry


def _normalised_absolute(path: str) -> bool:
    return os.path.isabs(path) and os.path.normpath(path) == path and "\0" not in path


def _text(value: object) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{value!r} is not a string")
    return value


def _optional_int(value: object) -> int | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"{value!r} is not an integer")
    return value


def journal_directories(env: Mapping[str, str] | None = None) -> list[Path]:
    """Where journal entries may live, in the order an install tries them.

    ``$AGENTSHIM_STATE_DIR`` alone when set (a caller who names a directory gets that one or
    an error); else the XDG state directory, then the per-user temporary one.
    """
    env = os.environ if env is None else env
    given = env.get(STATE_DIR_ENV)
    if given:
        return [Path(given) / "mcp-journal"]
    xdg = env.get("XDG_STATE_HOME", "")
    home = env.get("HOME") or os.path.expanduser("~")
    state = Path(xdg) if os.path.isabs(xdg) else Path(home) / ".local" / "state"
    temporary = Path(tempfile.gettempdir()) / f"agentshim-{os.geteuid()}"
    return [state / "agentshim" / "mcp-journal", temporary / "mcp-journal"]


def journal_file_for(config_path: Path, directory: Path) -> Path:
    """The journal entry of ``config_path`` (an absolute path) inside ``directory``."""
    digest = hashlib.sha256(os.fsencode(str(config_path))).hexdigest()[:40]
    return directory / f"{digest}.json"


def private_directory(directory: Path) -> Path:
    """Create ``directory`` and its state root (its parent) if needed, mode 0700; check both.

    Raises:
        OSError: it cannot be created, or it fails :func:`check_private_directory`.
    """
    directory.parent.mkdir(mode=_PRIVATE_DIR, parents=True, exist_ok=True)
    directory.mkdir(mode=_PRIVATE_DIR, exist_ok=True)
    check_private_directory(directory)
    if not os.access(directory, os.W_OK | os.X_OK):
        raise PermissionError(13, "Permission denied", str(directory))
    return directory


def check_private_directory(directory: Path) -> None:
    """Check that only this user can change the journal ``directory`` or its state root.

    Both the directory and its parent (the state root, ``agentshim-<uid>`` say) must be real
    directories (not links) owned by this user and writable by nobody else: another local user
    who could create either could plant entries that a recovery would act on.

    Raises:
        OSError: one of them is missing, a link, not a directory, owned by another user, or
            writable by its group or others.
    """
    for checked in (directory.parent, directory):
        info = os.lstat(checked)
        if not stat.S_ISDIR(info.st_mode):
            raise NotADirectoryError(20, "not a directory (or a symbolic link)", str(checked))
        if info.st_uid != os.geteuid() or info.st_mode & 0o022:
            raise PermissionError(
                1, "not private: owned by another user or writable by others", str(checked)
            )


class JournalLock:
    """An open journal entry this process holds an exclusive lock on, for one install.

    The file may be empty (the install has not recorded anything yet). The lock is released by
    :meth:`release` (keeping the entry, for a later recovery) or :meth:`discard` (removing it,
    the install having been undone), or by the kernel when the process dies.
    """

    def __init__(self, path: Path, fd: int) -> None:
        """Built by :meth:`acquire`."""
        self.path = path
        self._fd: int | None = fd

    @classmethod
    def acquire(cls, path: Path, *, blocking: bool = True) -> JournalLock | None:
        """Open (creating it, mode 0600) and lock the entry at ``path``.

        Blocks while another turn holds it, unless ``blocking`` is false, in which case None
        is returned. The entry found locked is the one at ``path`` now: one removed by its
        holder while this call waited is not taken for it.

        Raises:
            OSError: the entry cannot be created or opened (or is a link).
        """
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        while True:
            fd = os.open(path, flags, _PRIVATE_FILE)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | (0 if blocking else fcntl.LOCK_NB))
            except BlockingIOError:
                os.close(fd)
                return None
            except BaseException:
                os.close(fd)
                raise
            try:
                same = os.fstat(fd).st_ino == os.lstat(path).st_ino
            except FileNotFoundError:
                same = False
            if same:
                return cls(path, fd)
            os.close(fd)  # removed or replaced by its holder while this one waited: again

    def read(self) -> JournalEntry | None:
        """The entry recorded in the file, or None if it is empty.

        Raises:
            ValueError: the file holds something that is not an entry.
        """
        fd = self._held()
        chunks: list[bytes] = []
        offset = 0
        while True:
            chunk = os.pread(fd, 1 << 16, offset)
            if not chunk:
                break
            chunks.append(chunk)
            offset += len(chunk)
        data = b"".join(chunks)
        return JournalEntry.from_bytes(data) if data.strip() else None

    def write(self, entry: JournalEntry) -> None:
        """Record ``entry`` durably (the file is replaced in place, then fsynced)."""
        fd = self._held()
        data = entry.to_bytes()
        os.ftruncate(fd, 0)
        view = memoryview(data)
        offset = 0
        while offset < len(data):
            offset += os.pwrite(fd, view[offset:], offset)
        os.fsync(fd)

    def discard(self) -> None:
        """Remove the entry and release the lock; idempotent."""
        if self._fd is None:
            return
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        self.release()

    def release(self) -> None:
        """Release the lock and keep the entry as it is; idempotent."""
        fd, self._fd = self._fd, None
        if fd is not None:
            os.close(fd)

    def __del__(self) -> None:
        # An install dropped without its restore (a caller that lost it) must not block every
        # later install of the same file for the life of the process: the entry stays, and
        # the next install takes it for a dead turn's and undoes it.
        self.release()

    def _held(self) -> int:
        if self._fd is None:
            raise ValueError(f"the journal lock on {self.path} was already released")
        return self._fd
