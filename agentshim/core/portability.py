"""Conversation portability: a conversation's CLI state as one versioned, checksummed blob.

A CLI keeps a conversation in files of its own under its HOME (a transcript, an index entry).
:class:`ConversationState` is those files, relative to HOME, plus what they belong to: the
provider, the CLI version that wrote them, the session id and the workspace path. It packs
into one blob (:func:`pack_state`): a magic, the format version, a JSON header (with the
SHA-256 of the files) and the files, compressed. :func:`unpack_state` checks all of it before
anything is written anywhere, so a damaged or foreign blob is refused whole.

A :class:`ConversationPorter` (one per provider, next to its argv and parser) exports a
conversation from the CLI's files and imports it under another HOME and another workspace
path, rewriting what the CLI keys by absolute path. Credentials are never part of a state:
:func:`pack_state` refuses a file the provider names as a credential.
"""

from __future__ import annotations

import hashlib
import json
import re
import struct
import zlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from agentshim.core.errors import ConversationImportError, InvalidRequestError

__all__ = [
    "BLOB_FORMAT",
    "MAX_STATE_BYTES",
    "ConversationPorter",
    "ConversationState",
    "StateFile",
    "blob_header",
    "pack_state",
    "unpack_state",
    "versions_compatible",
]

BLOB_FORMAT = 1
"""The blob format this agentshim writes and reads."""

MAX_STATE_BYTES = 64 * 1024 * 1024
"""The most a conversation's files may hold, uncompressed (a larger one is not exported)."""

_MAGIC = b"AGSHCONV"
_PREFIX = struct.Struct(">BI")  # format version, header length
_LONGEST_HEADER = 1024 * 1024
_VERSION = re.compile(r"(\d+)\.(\d+)(?:\.(\d+))?")


def _relative(path: str) -> str:
    """``path`` when it is a plain relative POSIX path that stays inside its root."""
    parts = path.split("/")
    if not path or path.startswith("/") or any(part in ("", ".", "..") for part in parts):
        raise ValueError(f"{path!r} is not a relative path inside HOME")
    if "\0" in path or "\\" in path:
        raise ValueError(f"{path!r} has a character a state file path may not hold")
    return path


@dataclass(frozen=True, slots=True)
class StateFile:
    """One file of a conversation's CLI state: its path relative to HOME, and its bytes."""

    path: str
    data: bytes

    def __post_init__(self) -> None:
        try:
            _relative(self.path)
        except ValueError as error:
            raise InvalidRequestError("StateFile.path", str(error), str(error)) from error


@dataclass(frozen=True, slots=True)
class ConversationState:
    """A conversation's CLI files and what they belong to.

    ``cli_version`` is the version of the CLI that wrote them (None: unknown), ``cwd`` the
    workspace path the conversation ran in, as the CLI saw it. ``files`` are relative to the
    CLI's HOME; a porter that imports through the CLI's own command keeps that command's
    export as one file.
    """

    provider: str
    cli_version: str | None
    session_id: str
    cwd: str | None
    files: tuple[StateFile, ...]

    @property
    def size(self) -> int:
        """The bytes of all files, uncompressed."""
        return sum(len(file.data) for file in self.files)


def pack_state(state: ConversationState, *, credentials: Sequence[str] = ()) -> bytes:
    """``state`` as one blob: magic, format version, JSON header, compressed files.

    Raises:
        InvalidRequestError: a file is one of ``credentials`` (paths relative to HOME), two
            files share a path, or the files hold more than MAX_STATE_BYTES.
    """
    paths = [file.path for file in state.files]
    leaked = sorted(set(paths) & set(credentials))
    if leaked:
        raise InvalidRequestError(
            "files",
            f"{leaked} are credentials",
            f"a conversation blob never holds credentials ({leaked})",
        )
    if len(set(paths)) != len(paths):
        raise InvalidRequestError("files", "duplicate paths", "a state file path appears twice")
    if state.size > MAX_STATE_BYTES:
        raise InvalidRequestError(
            "files",
            f"{state.size} bytes",
            f"the conversation's files hold {state.size} bytes, more than {MAX_STATE_BYTES}; "
            "it is not exported (start a new conversation, or let the renewal budget retire it)",
        )
    payload = b"".join(file.data for file in state.files)
    header: dict[str, object] = {
        "provider": state.provider,
        "cli_version": state.cli_version,
        "session_id": state.session_id,
        "cwd": state.cwd,
        "files": [{"path": file.path, "size": len(file.data)} for file in state.files],
    }
    header["sha256"] = _digest(header, payload)
    encoded = _canonical(header)
    return _MAGIC + _PREFIX.pack(BLOB_FORMAT, len(encoded)) + encoded + zlib.compress(payload, 6)


def _canonical(header: dict[str, object]) -> bytes:
    return json.dumps(header, sort_keys=True, separators=(",", ":")).encode("utf-8")


def _digest(header: dict[str, object], payload: bytes) -> str:
    """The SHA-256 of the header (without its digest) and the files: covers all but the magic."""
    described = {key: value for key, value in header.items() if key != "sha256"}
    return hashlib.sha256(_canonical(described) + payload).hexdigest()


def blob_header(blob: bytes, provider: str) -> dict[str, object]:
    """The header of ``blob`` (its provider, CLI version, session id, cwd, files), checked.

    Raises:
        ConversationImportError: not a conversation blob, of an unknown format, or of
            another provider.
    """
    if not blob.startswith(_MAGIC) or len(blob) < len(_MAGIC) + _PREFIX.size:
        raise ConversationImportError(provider, "the blob is not a saved conversation")
    version, length = _PREFIX.unpack_from(blob, len(_MAGIC))
    if version != BLOB_FORMAT:
        raise ConversationImportError(
            provider,
            f"blob format {version} is not {BLOB_FORMAT}, the one this agentshim reads",
        )
    start = len(_MAGIC) + _PREFIX.size
    if length > _LONGEST_HEADER or start + length > len(blob):
        raise ConversationImportError(provider, "the blob's header is damaged")
    try:
        header = json.loads(blob[start : start + length])
    except (ValueError, RecursionError) as error:
        raise ConversationImportError(
            provider, f"the blob's header is damaged ({error})"
        ) from error
    if not isinstance(header, dict):
        raise ConversationImportError(provider, "the blob's header is damaged")
    if header.get("provider") != provider:  # pyright: ignore[reportUnknownMemberType]
        raise ConversationImportError(
            provider,
            f"the blob holds a {header.get('provider')!r} conversation",  # pyright: ignore[reportUnknownMemberType]
        )
    return {str(key): value for key, value in header.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]


def unpack_state(blob: bytes, provider: str) -> ConversationState:
    """Rebuild the state ``pack_state`` packed, checking all of it first.

    Raises:
        ConversationImportError: the blob is damaged (checksum, sizes, paths), of an unknown
            format, or of another provider.
    """
    header = blob_header(blob, provider)
    start = len(_MAGIC) + _PREFIX.size + _PREFIX.unpack_from(blob, len(_MAGIC))[1]
    entries = header.get("files")
    if not isinstance(entries, list):
        raise ConversationImportError(provider, "the blob's file list is damaged")
    try:
        sizes = [(_relative(entry["path"]), int(entry["size"])) for entry in entries]  # pyright: ignore[reportUnknownArgumentType, reportUnknownVariableType]
    except (KeyError, TypeError, ValueError) as error:
        raise ConversationImportError(
            provider, f"the blob's file list is damaged ({error})"
        ) from error
    total = sum(size for _, size in sizes)
    if total > MAX_STATE_BYTES or any(size < 0 for _, size in sizes):
        raise ConversationImportError(provider, "the blob's file sizes are damaged")
    try:
        inflater = zlib.decompressobj()
        payload = inflater.decompress(blob[start:], total + 1)
    except zlib.error as error:
        raise ConversationImportError(
            provider, f"the blob's files are damaged ({error})"
        ) from error
    if (
        not inflater.eof
        or len(payload) != total
        or _digest(header, payload) != header.get("sha256")
    ):
        raise ConversationImportError(provider, "the blob's checksum does not match its files")
    files: list[StateFile] = []
    offset = 0
    for path, size in sizes:
        files.append(StateFile(path, payload[offset : offset + size]))
        offset += size
    session_id, cwd, version = (
        header.get("session_id"),
        header.get("cwd"),
        header.get("cli_version"),
    )
    if not isinstance(session_id, str):
        raise ConversationImportError(provider, "the blob names no session id")
    return ConversationState(
        provider,
        version if isinstance(version, str) else None,
        session_id,
        cwd if isinstance(cwd, str) else None,
        tuple(files),
    )


def _parts(version: str | None) -> tuple[int, int, int] | None:
    found = _VERSION.search(version or "")
    if found is None:
        return None
    major, minor, patch = found.groups()
    return int(major), int(minor), int(patch or 0)


def versions_compatible(saved: str | None, local: str | None) -> bool:
    """Whether a CLI at ``local`` reads what the CLI at ``saved`` wrote.

    The same major version, and ``local`` no older than ``saved``: a CLI reads the files its
    earlier releases wrote, not those of a later one. Versions that cannot be read must be
    equal.
    """
    old, new = _parts(saved), _parts(local)
    if old is None or new is None:
        return saved == local
    return old[0] == new[0] and new >= old


@runtime_checkable
class ConversationPorter(Protocol):
    """Moves one provider's conversations between hosts, through the CLI's own files.

    Implementations read and write through the agent's execution seam, so a CLI in a
    container is exported from and imported into the container.
    """

    def export_blob(self, session_id: str, cwd: str | None) -> bytes | None:
        """The conversation's CLI state as a blob, or None when this host has none of it.

        Raises:
            InvalidRequestError: its files are larger than MAX_STATE_BYTES.
            AgentShimError: the files could not be read.
        """
        ...

    def import_blob(self, blob: bytes, cwd: str | None) -> str:
        """Write the conversation in ``blob`` where the CLI's resume in ``cwd`` finds it.

        Returns the session id it holds. Everything is checked before anything is written.

        Raises:
            ConversationImportError: the blob is damaged, of another provider, or written by
                a CLI version the installed one cannot read.
        """
        ...
