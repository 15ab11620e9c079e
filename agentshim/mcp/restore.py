"""The restore engine: put a config file back as it was before a turn's install.

:func:`restore_entry` reads a journal entry (:mod:`agentshim.mcp.journal`) and undoes the
install it records, on directory file descriptors so that no link planted during the turn is
followed. When putting the original back in place would destroy something the agent made, the
original is kept next to the path (``<name>`` + :data:`ORIGINAL_SUFFIX`) and the note says so.
Used at the end of a turn (:mod:`agentshim.mcp.install`) and after a crash
(:mod:`agentshim.mcp.recover`).
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import os
import secrets
import stat
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, cast

from agentshim.mcp.journal import JournalEntry
from agentshim.mcp.jsonc import (
    UnreadableDocument,
    decode_document,
    digest,
    encode_document,
    object_at,
)

__all__ = ["ORIGINAL_SUFFIX", "missing_parents", "remove_created_dirs", "restore_entry"]

#: The suffix of the file that keeps a config file's original content next to it, when the
#: agent left something at the path that restoring in place would destroy.
ORIGINAL_SUFFIX = ".agentshim-original"


def missing_parents(directory: Path) -> list[Path]:
    """The ancestors of a file that do not exist yet, outermost first."""
    missing: list[Path] = []
    current = directory
    while not os.path.lexists(current) and current != current.parent:
        missing.append(current)
        current = current.parent
    return list(reversed(missing))


def remove_created_dirs(created: Sequence[str | Path]) -> None:
    """Remove directories agentshim created, innermost first, if they are empty again.

    One the agent replaced by a link is unlinked (never followed), with all inside it.
    """
    for directory in created:  # outermost first: inner paths are only looked at through
        try:  # directories that are still real ones
            info = os.lstat(directory)
        except OSError:
            break
        if stat.S_ISLNK(info.st_mode):
            with contextlib.suppress(OSError):
                os.unlink(directory)
            created = created[: list(created).index(directory)]
            break
        if not stat.S_ISDIR(info.st_mode):
            break
    for directory in reversed(created):
        try:
            os.rmdir(directory)  # never follows a link: rmdir of a link fails
        except FileNotFoundError:
            continue
        except OSError:
            return  # not empty (someone put something there) or already gone: leave the rest


def restore_entry(entry: JournalEntry) -> str | None:
    """Undo ``entry``'s install; a note for the log, or None when all went as planned.

    Raises:
        OSError: the file system refused (the caller keeps the journal).
    """
    path = Path(entry.path)
    opened = _open_parent(entry)
    if isinstance(opened, str) or opened is None:
        return opened
    dir_fd, note = opened
    try:
        outcome = _restore_in(dir_fd, path.name, entry)
    finally:
        os.close(dir_fd)
    if entry.original is None:
        remove_created_dirs(entry.created_dirs)
    notes = [n for n in (note, outcome) if n]
    return "; ".join(notes) if notes else None


def _open_parent(entry: JournalEntry) -> tuple[int, str | None] | str | None:
    """The file's directory, opened without following a link planted there during the turn.

    Returns (fd, note), or the final note (or None) when there is nothing left to restore.
    """
    path = Path(entry.path)
    parent = path.parent
    try:
        info: os.stat_result | None = os.lstat(parent)
    except FileNotFoundError:
        info = None
    note: str | None = None
    if info is not None and stat.S_ISLNK(info.st_mode):
        if entry.parent_link is not None and os.readlink(parent) == entry.parent_link:
            fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
            if _same_directory(fd, entry):
                return fd, None
            os.close(fd)
            return _not_written_through(parent.parent, f"{parent.name}.{path.name}", parent, entry)
        target = os.readlink(parent)
        if entry.original is None and str(parent) not in entry.created_dirs:
            return f"{parent} was replaced by a link to {target!r} during the turn; left it alone"
        os.unlink(parent)  # a link holds no data; its target is not touched
        info = None
        note = (
            f"{parent} was replaced by a link to {target!r} during the turn; removed the "
            "link (its target is untouched)"
        )
    elif info is not None and not stat.S_ISDIR(info.st_mode):
        if entry.original is None:
            return None
        aside = _keep_aside_path(parent.parent, f"{parent.name}.{path.name}", entry)
        return f"{parent} is no longer a directory; kept the original content of {path} in {aside}"
    if info is None:
        if entry.original is None:
            if note is not None:
                remove_created_dirs(entry.created_dirs)
            return note
        for directory in missing_parents(parent):
            os.mkdir(directory, 0o700)
            if directory == parent and entry.parent_mode is not None:
                os.chmod(directory, entry.parent_mode)
        note = note or f"{parent} was removed during the turn; created it again"
    flags = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
    return os.open(parent, flags), note


def _restore_in(dir_fd: int, name: str, entry: JournalEntry) -> str | None:
    """Restore the file ``name`` in the directory ``dir_fd``."""
    if entry.link is not None and entry.link_target is not None:
        return _restore_linked(dir_fd, name, entry, Path(entry.link_target))
    where = entry.path
    try:
        info: os.stat_result | None = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        info = None
    if info is None:
        if entry.original is None:
            return None
        _put(dir_fd, name, entry.original, entry.mode, entry.owner)
        return f"{where}: it was deleted during the turn; wrote back its original content"
    if stat.S_ISLNK(info.st_mode):
        target = os.readlink(name, dir_fd=dir_fd)
        # Never follow a link the agent planted: it may point at any file this process can
        # write. The link itself holds nothing: replace it.
        if entry.original is None:
            os.unlink(name, dir_fd=dir_fd)
            return f"{where}: the agent put a link to {target!r} there; removed the link"
        _put(dir_fd, name, entry.original, entry.mode, entry.owner)
        return (
            f"{where}: the agent replaced it by a link to {target!r}; put the original back "
            "in place of the link, leaving the link's target untouched"
        )
    if stat.S_ISDIR(info.st_mode):
        if entry.original is None:
            return f"{where}: the agent made it a directory; left the directory alone"
        aside = _keep_aside(dir_fd, name, entry)
        return (
            f"{where}: the agent made it a directory; left the directory alone and kept the "
            f"original content next to it, in {aside}"
        )
    if not stat.S_ISREG(info.st_mode):  # a FIFO or a socket: holds no data, never opened
        if entry.original is None:
            os.unlink(name, dir_fd=dir_fd)
            return None
        _put(dir_fd, name, entry.original, entry.mode, entry.owner)
        return f"{where}: the agent put a special file there; wrote back its original content"
    return _settle_regular(dir_fd, name, entry, info)


def _settle_regular(
    dir_fd: int, name: str, entry: JournalEntry, info: os.stat_result
) -> str | None:
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC, dir_fd=dir_fd)
    try:
        current = _read_fd(fd)
    finally:
        os.close(fd)

    def put(data: bytes | None, mode: int | None) -> None:
        if data is None:
            os.unlink(name, dir_fd=dir_fd)
        else:
            _put(dir_fd, name, data, mode, entry.owner if mode == entry.mode else None)

    return _settle(
        entry, current, stat.S_IMODE(info.st_mode), put, lambda: _keep_aside(dir_fd, name, entry)
    )


def _restore_linked(dir_fd: int, name: str, entry: JournalEntry, target: Path) -> str | None:
    """The path was the user's link at install, so the install wrote into its target.

    The target (resolved at install) is restored like any file; then the user's link is put
    back if the agent replaced it.
    """
    as_target = dataclasses.replace(entry, path=str(target), link=None, link_target=None)
    target_fd = os.open(target.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        notes: list[str | None]
        if _same_directory(target_fd, entry):
            notes = [_restore_in(target_fd, target.name, as_target)]
        else:
            aside = _keep_aside(dir_fd, name, entry)
            notes = [_redirected_note(target.parent, entry, aside)]
    finally:
        os.close(target_fd)
    link = cast("str", entry.link)
    try:
        info: os.stat_result | None = os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        info = None
    if info is not None and stat.S_ISLNK(info.st_mode) and os.readlink(name, dir_fd=dir_fd) == link:
        pass
    elif info is not None and stat.S_ISDIR(info.st_mode):
        notes.append(
            f"{entry.path}: the agent made the link to {link!r} a directory; left it alone"
        )
    else:
        regular = info is not None and stat.S_ISREG(info.st_mode)
        if info is not None and regular:
            # The agent's own file in place of the link: take agentshim's entries out of it
            # before it is replaced by the link again; keep it if it holds anything else.
            as_new = dataclasses.replace(
                entry, original=None, mode=None, link=None, link_target=None
            )
            notes.append(_settle_regular(dir_fd, name, as_new, info))
        if not regular or not _lexists(dir_fd, name):
            _put_link(dir_fd, name, link)
            notes.append(f"{entry.path}: the agent replaced the link to {link!r}; put it back")
    kept = [n for n in notes if n]
    return "; ".join(kept) if kept else None


def _same_directory(fd: int, entry: JournalEntry) -> bool:
    """Whether ``fd`` is the directory the install wrote into (unknown: taken as the same)."""
    if entry.written_dir is None:
        return True
    info = os.fstat(fd)
    return (info.st_dev, info.st_ino) == entry.written_dir


def _redirected_note(directory: Path, entry: JournalEntry, aside: str | None) -> str:
    kept = "" if aside is None else f" and kept the original content in {aside}"
    return (
        f"{directory} is not the directory the install wrote {entry.path} into (moved or "
        f"replaced by a link during the turn); did not write through it{kept}; agentshim's "
        "MCP servers may remain in the file where the directory was moved"
    )


def _not_written_through(outer: Path, aside_name: str, directory: Path, entry: JournalEntry) -> str:
    aside = None if entry.original is None else _keep_aside_path(outer, aside_name, entry)
    return _redirected_note(directory, entry, aside)


def _lexists(dir_fd: int, name: str) -> bool:
    try:
        os.lstat(name, dir_fd=dir_fd)
    except FileNotFoundError:
        return False
    return True


def _put_link(dir_fd: int, name: str, text: str) -> None:
    """Replace whatever is at ``name`` (not a directory) with a link to ``text``."""
    temp = f".{name}.{secrets.token_hex(6)}.tmp"
    os.symlink(text, temp, dir_fd=dir_fd)
    try:
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise


def _settle(
    entry: JournalEntry,
    current: bytes,
    current_mode: int,
    put: Callable[[bytes | None, int | None], None],
    keep_aside: Callable[[], str],
) -> str | None:
    """Decide what the regular file ``current`` becomes, and write it with ``put``."""
    where = entry.path
    if digest(current) == entry.written_sha256:
        put(entry.original, entry.mode)
        return None
    try:
        document = decode_document(current, jsonc=True)
    except UnreadableDocument as exc:
        return _put_back_unusable(entry, put, str(exc))
    original = _original_document(entry)
    changed = _remove_ours(document, entry, original)
    if original is not None and document == original:
        put(entry.original, entry.mode)  # only agentshim's part differed, or the formatting
        return None
    if original is None and not document:
        put(None, None)
        return None
    if changed:
        try:
            rewritten = encode_document(document)
        except (ValueError, RecursionError) as exc:
            return _put_back_unusable(entry, put, str(exc))
        put(rewritten, current_mode)
    if entry.original is None:
        return (
            f"{where} changed during the turn; removed only agentshim's MCP servers and kept "
            "the other changes"
        )
    aside = keep_aside()
    return (
        f"{where} changed during the turn; removed only agentshim's MCP servers, kept the "
        f"other changes, and kept the original content in {aside}"
    )


def _put_back_unusable(
    entry: JournalEntry, put: Callable[[bytes | None, int | None], None], why: str
) -> str:
    """The turn left nothing agentshim can take its entries out of: the original comes back."""
    put(entry.original, entry.mode)
    if entry.original is None:
        return f"{entry.path}: the turn left it unusable ({why}); removed it, as it did not exist"
    return f"{entry.path}: the turn left it unusable ({why}); wrote back its original content"


def _original_document(entry: JournalEntry) -> dict[str, Any] | None:
    """The original as a document; None if there was none (or a journal says otherwise)."""
    if entry.original is None:
        return None
    try:
        return decode_document(entry.original, jsonc=True)
    except UnreadableDocument:
        return None  # an edited journal: agentshim's names are removed, the bytes kept aside


def _remove_ours(
    document: dict[str, Any], entry: JournalEntry, original: dict[str, Any] | None
) -> bool:
    """Take agentshim's entries, objects and defaults out of ``document``; whether any were."""
    changed = False
    key_path = entry.key_path
    container = object_at(document, key_path)
    before = None if original is None else object_at(original, key_path)
    if container is not None:
        for name in entry.names:
            if before is not None and name in before:
                if container.get(name) != before[name]:
                    container[name] = copy.deepcopy(before[name])
                    changed = True
            elif name in container:
                del container[name]
                changed = True
    if entry.created_from is not None:
        # Drop the objects agentshim created along the key path, innermost first, while
        # they are empty.
        for depth in range(len(key_path) - 1, entry.created_from - 1, -1):
            parent = object_at(document, key_path[:depth]) if depth else document
            key = key_path[depth]
            if parent is None or parent.get(key) != {}:
                break
            del parent[key]
            changed = True
    for key, value in entry.added_defaults.items():
        if key in document and document[key] == value:
            del document[key]
            changed = True
    return changed


def _read_fd(fd: int) -> bytes:
    chunks: list[bytes] = []
    while chunk := os.read(fd, 1 << 16):
        chunks.append(chunk)
    return b"".join(chunks)


def _write_fd(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _put(
    dir_fd: int, name: str, data: bytes, mode: int | None, owner: tuple[int, int] | None
) -> None:
    """Replace whatever is at ``name`` (a file, a link: never followed) with ``data``."""
    temp = f".{name}.{secrets.token_hex(6)}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o600, dir_fd=dir_fd)
    try:
        try:
            _write_fd(fd, data)
            os.fchmod(fd, 0o644 if mode is None else mode)
            if owner is not None and os.geteuid() == 0:
                with contextlib.suppress(OSError):
                    os.fchown(fd, *owner)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp, dir_fd=dir_fd)
        raise
    with contextlib.suppress(OSError):
        os.fsync(dir_fd)


def _keep_aside(dir_fd: int, name: str, entry: JournalEntry) -> str:
    """Write the original next to ``name`` under a new name; returns the path written."""
    data = entry.original or b""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    for attempt in range(1, 1000):
        aside = f"{name}{ORIGINAL_SUFFIX}" + ("" if attempt == 1 else f"-{attempt}")
        try:
            fd = os.open(aside, flags, 0o600, dir_fd=dir_fd)
        except FileExistsError:
            continue
        try:
            _write_fd(fd, data)
            os.fchmod(fd, 0o600 if entry.mode is None else entry.mode)
            os.fsync(fd)
        finally:
            os.close(fd)
        return str(Path(entry.path).with_name(aside))
    raise FileExistsError(17, "no free name for the original's copy", entry.path)


def _keep_aside_path(directory: Path, name: str, entry: JournalEntry) -> str:
    fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    try:
        written = _keep_aside(fd, name, entry)
    finally:
        os.close(fd)
    return str(directory / Path(written).name)
