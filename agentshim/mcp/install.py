"""The merge and restore of a provider's JSON config file for one turn, and where that file is.

:func:`install_json_config` merges rendered entries into a JSON (or JSONC) config file under a
key path (``("mcpServers",)`` for ``.mcp.json``) and returns a :class:`ConfigFileInstallation`
whose ``restore()`` puts the file back: the original bytes and mode at the path, or, when the
agent left something there that agentshim will not destroy, the original next to it (see
``install_json_config``). A journal written before the install (:mod:`.mcp_journal`) lets the
next install, or :func:`recover_config_files`, undo a turn whose process died.

For CLIs that read their MCP servers from a project file (such as ``.gemini/settings.json``
or ``opencode.json``), :func:`workspace_config_file` says where that file is and
:func:`configured_servers` which servers it holds.
"""

from __future__ import annotations

import contextlib
import copy
import dataclasses
import hashlib
import json
import os
import secrets
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from agentshim.core._files import atomic_write
from agentshim.core.errors import InvalidRequestError, McpConfigError
from agentshim.core.jsonvalues import as_mapping
from agentshim.mcp.journal import (
    JournalEntry,
    JournalLock,
    check_private_directory,
    journal_directories,
    journal_file_for,
    private_directory,
)

__all__ = [
    "ORIGINAL_SUFFIX",
    "ConfigFileInstallation",
    "RecoveredConfig",
    "configured_servers",
    "install_json_config",
    "recover_config_files",
    "workspace_config_file",
]

#: The suffix of the file that keeps a config file's original content next to it, when the
#: agent left something at the path that restoring in place would destroy.
ORIGINAL_SUFFIX = ".agentshim-original"

_RECOVER_HINT = "python -m agentshim mcp recover"


# --- reading and writing documents -----------------------------------------------------------


class _Unreadable(Exception):
    """A config file that is not a readable, parseable JSON object; the text says why."""


def _reject_constant(name: str) -> Any:
    # NaN and Infinity are not JSON: no CLI reads them, and the encoder refuses them.
    raise ValueError(f"{name} is not a JSON value")


def _loads(text: str) -> Any:
    return json.loads(text, parse_constant=_reject_constant)


def _decode_document(data: bytes, *, jsonc: bool) -> dict[str, Any]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _Unreadable(f"it is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        value = _loads(text)
    except (ValueError, RecursionError) as exc:
        stripped = _strip_jsonc(text)
        value = None if stripped is None else _loads_or_none(stripped)
        if value is None:
            raise _Unreadable(f"it is not valid JSON ({exc})") from None
        if not jsonc:
            raise _Unreadable(
                "it contains comments or trailing commas (JSONC), which this CLI does not "
                "read; remove them, or configure the servers yourself"
            ) from None
    if not isinstance(value, dict):
        raise _Unreadable(f"its top level is not a JSON object but {type(value).__name__}")
    try:
        # A number too large for a float (1e999 is inf) or a lone surrogate ("\\ud800") parses
        # but cannot be written back: a document holding one is as unusable as NaN.
        _encode_document(cast("dict[str, Any]", value))
    except (ValueError, RecursionError) as exc:  # UnicodeEncodeError is a ValueError
        raise _Unreadable(f"it holds a value JSON cannot carry ({exc})") from None
    return cast("dict[str, Any]", value)


def _loads_or_none(text: str) -> Any:
    try:
        return _loads(text)
    except (ValueError, RecursionError):
        return None


def _strip_jsonc(text: str) -> str | None:
    """``text`` without // and /* */ comments and trailing commas; None if it had none."""
    out: list[str] = []
    changed = False
    in_string = False
    i = 0
    n = len(text)
    while i < n:
        char = text[i]
        if in_string:
            if char == "\\":
                out.append(text[i : i + 2])
                i += 2
                continue
            in_string = char != '"'
            out.append(char)
            i += 1
            continue
        if char == '"':
            in_string = True
        elif text.startswith("//", i):
            end = text.find("\n", i)
            i = n if end < 0 else end
            changed = True
            continue
        elif text.startswith("/*", i):
            end = text.find("*/", i + 2)
            if end < 0:
                return None
            out.append(" ")
            i = end + 2
            changed = True
            continue
        elif char == ",":
            j = i + 1
            # Look past whitespace and comments for the closing bracket of a trailing comma.
            while j < n:
                if text[j].isspace():
                    j += 1
                elif text.startswith("//", j):
                    end = text.find("\n", j)
                    j = n if end < 0 else end
                elif text.startswith("/*", j):
                    end = text.find("*/", j + 2)
                    j = n if end < 0 else end + 2
                else:
                    break
            if j < n and text[j] in "}]":
                changed = True
                i += 1
                continue
        out.append(char)
        i += 1
    return "".join(out) if changed else None


def _encode_document(document: Mapping[str, Any]) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode(
        "utf-8"
    )


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def _missing_parents(directory: Path) -> list[Path]:
    """The ancestors of a file that do not exist yet, outermost first."""
    missing: list[Path] = []
    current = directory
    while not os.path.lexists(current) and current != current.parent:
        missing.append(current)
        current = current.parent
    return list(reversed(missing))


def _remove_dirs(created: Sequence[str | Path]) -> None:
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


def _container(document: dict[str, Any], key_path: Sequence[str]) -> dict[str, Any] | None:
    node: Any = document
    for key in key_path:
        if not isinstance(node, dict):
            return None
        node = cast("dict[str, Any]", node).get(key)
    return cast("dict[str, Any]", node) if isinstance(node, dict) else None


# --- install: read, merge, record, write -----------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Found:
    """The config file as the install found it."""

    original: bytes | None
    mode: int | None
    owner: tuple[int, int] | None
    link: str | None
    link_target: str | None
    parent_link: str | None
    parent_mode: int | None
    written_dir: tuple[int, int] | None


@dataclass(frozen=True, slots=True)
class _Merged:
    """The document to write and what in it is agentshim's."""

    written: bytes
    added_defaults: dict[str, Any]
    created_from: int | None


def _link_text(path: Path) -> str | None:
    try:
        return os.readlink(path)
    except OSError:  # not a link, or nothing there
        return None


def _read_config(path: Path) -> _Found:
    """Step 1: the file's bytes, mode and links as they are before the install."""
    where = str(path)
    try:
        original: bytes | None = path.read_bytes()
    except FileNotFoundError:
        original = None
    except OSError as exc:
        raise McpConfigError(where, f"it cannot be read ({exc.strerror or exc})") from exc
    link = _link_text(path)
    if original is None and link is not None:
        # A link to a file that does not exist: writing would create the target and restoring
        # would remove the link, so neither would be as the user left them.
        raise McpConfigError(
            where,
            f"it is a symbolic link to {link!r}, which does not exist; create the "
            "target or remove the link",
        )
    if link is not None:
        # Written through, the turn's servers would land in a file elsewhere that other
        # workspaces (or other users) read; replacing the link would hide from the CLI what
        # the user linked in. Neither is the user's intent, so the user chooses.
        raise McpConfigError(
            where,
            f"it is a symbolic link to {link!r}, and agentshim does not write a turn's MCP "
            "servers through a link into another file; replace the link with a copy of its "
            f"target (cp --remove-destination {os.path.realpath(path)!r} {where!r}) or "
            "remove it",
        )
    info = os.stat(path) if original is not None else None
    try:
        parent_mode: int | None = stat.S_IMODE(os.stat(path.parent).st_mode)
    except OSError:
        parent_mode = None
    try:
        # The directory the file really is in, through the user's links: a restore through
        # them writes there only if it is still that directory.
        written = os.stat(os.path.dirname(os.path.realpath(path)))
        written_dir: tuple[int, int] | None = (written.st_dev, written.st_ino)
    except OSError:
        written_dir = None  # created by the install: there is no link to follow
    return _Found(
        original=original,
        mode=None if info is None else stat.S_IMODE(info.st_mode),
        owner=None if info is None else (info.st_uid, info.st_gid),
        link=link,
        link_target=None if link is None else os.path.realpath(path),
        parent_link=_link_text(path.parent),
        parent_mode=parent_mode,
        written_dir=written_dir,
    )


def _merge(
    found: _Found,
    where: str,
    key_path: Sequence[str],
    entries: Mapping[str, Mapping[str, Any]],
    defaults: Mapping[str, Any] | None,
    *,
    jsonc: bool,
) -> _Merged:
    """Step 2: the original document with ``entries`` (and missing ``defaults``) merged in."""
    if found.original is None:
        document: dict[str, Any] = dict(copy.deepcopy(defaults or {}))
        added_defaults: dict[str, Any] = dict(document)
    else:
        try:
            document = _decode_document(found.original, jsonc=jsonc)
        except _Unreadable as exc:
            raise McpConfigError(where, str(exc)) from None
        added_defaults = {
            key: copy.deepcopy(value)
            for key, value in (defaults or {}).items()
            if key not in document
        }
        document.update(copy.deepcopy(added_defaults))
    container = document
    created_from: int | None = None
    for depth, key in enumerate(key_path):
        if key not in container:
            container[key] = {}
            if created_from is None:
                created_from = depth
        child = container[key]
        if not isinstance(child, dict):
            dotted = ".".join(key_path[: depth + 1])
            raise McpConfigError(where, f"its {dotted!r} is not an object")
        container = cast("dict[str, Any]", child)
    for name, entry in entries.items():
        container[name] = copy.deepcopy(dict(entry))
    try:
        written = _encode_document(document)
    except (TypeError, ValueError) as exc:
        raise McpConfigError(where, f"an entry cannot be written as JSON ({exc})") from exc
    return _Merged(written, added_defaults, created_from)


def _lock_journal(path: Path) -> JournalLock:
    """Step 3a: the locked journal entry of ``path``, in the first usable private directory."""
    problems: list[str] = []
    for directory in journal_directories():
        try:
            private_directory(directory)
            return cast("JournalLock", JournalLock.acquire(journal_file_for(path, directory)))
        except OSError as exc:
            problems.append(f"{directory}: {exc.strerror or exc}")
    raise McpConfigError(
        str(path),
        "agentshim cannot keep the journal that undoes the install if this process dies ("
        + "; ".join(problems)
        + "); set AGENTSHIM_STATE_DIR to a private directory this user can write",
    )


def _recover_stale(lock: JournalLock, path: Path) -> str | None:
    """Step 3b: undo what a dead turn left in the file; a note for the log, if it did."""
    try:
        stale = lock.read()
    except ValueError as exc:
        raise McpConfigError(
            str(path),
            f"its recovery journal {lock.path} is damaged ({exc}); check the file by hand, "
            "then delete the journal",
        ) from None
    if stale is None:
        return None
    if stale.path != str(path):
        raise McpConfigError(
            str(path),
            f"its recovery journal {lock.path} names another file ({stale.path}); check "
            "both by hand, then delete the journal",
        )
    try:
        note = _restore(stale)
    except (OSError, ValueError) as exc:
        raise McpConfigError(
            str(path),
            f"a turn that never ended (process {stale.pid}) left agentshim's MCP servers in "
            f"it, and removing them failed ({exc}); fix that, then run "
            f"`{_RECOVER_HINT} {path.parent}`",
        ) from exc
    return (
        f"{path}: a turn that never ended (process {stale.pid}) had left agentshim's MCP "
        f"servers in it; restored it before this install" + ("" if note is None else f" ({note})")
    )


def _record(
    lock: JournalLock,
    path: Path,
    found: _Found,
    merged: _Merged,
    key_path: Sequence[str],
    entries: Mapping[str, Mapping[str, Any]],
    created_dirs: Sequence[Path],
    jsonc: bool,
) -> JournalEntry:
    """Step 4: journal what the install is about to change, durably, before it changes it."""
    entry = JournalEntry(
        path=str(path),
        original=found.original,
        mode=found.mode,
        owner=found.owner,
        written_sha256=_sha256(merged.written),
        key_path=tuple(key_path),
        names=tuple(entries),
        added_defaults=merged.added_defaults,
        created_from=merged.created_from,
        created_dirs=tuple(str(d) for d in created_dirs),
        parent_mode=found.parent_mode,
        link=found.link,
        link_target=found.link_target,
        parent_link=found.parent_link,
        jsonc=jsonc,
        pid=os.getpid(),
        written_dir=found.written_dir,
    )
    try:
        lock.write(entry)
    except OSError as exc:
        raise McpConfigError(
            str(path), f"its recovery journal cannot be written ({exc.strerror or exc})"
        ) from exc
    return entry


def _write_config(path: Path, written: bytes, created_dirs: Sequence[Path]) -> None:
    """Step 5: write the merged file atomically, creating its missing directories."""
    try:
        for directory in created_dirs:
            directory.mkdir()
        atomic_write(path, written)
    except OSError as exc:
        _remove_dirs(created_dirs)
        raise McpConfigError(str(path), f"it cannot be written ({exc.strerror or exc})") from exc


def install_json_config(
    path: Path,
    key_path: Sequence[str],
    entries: Mapping[str, Mapping[str, Any]],
    *,
    defaults: Mapping[str, Any] | None = None,
    jsonc: bool = True,
) -> ConfigFileInstallation:
    """Merge ``entries`` into the JSON object at ``key_path`` in the file ``path``.

    ``key_path`` names the nested object that holds the servers (``("mcpServers",)``,
    ``("mcp",)``); missing objects along it are created. An entry whose name is already
    there replaces it for the turn. ``defaults`` are top-level keys set only when the
    document lacks them (opencode's ``"$schema"``). Missing parent directories are created.
    The merged file is written atomically, pretty-printed with two-space indents, keeping the
    file's mode. A symbolic link at the path is refused (:class:`McpConfigError` saying what
    to do): the turn's servers are never written through it into another file. A link as the
    file's directory is followed; restore writes there again only while it leads to the same
    directory (else the original is kept next to the path).

    A file with comments or trailing commas (JSONC) is accepted when ``jsonc`` is true: the
    merged file the CLI reads during the turn is plain JSON, and the original, comments
    included, comes back byte for byte. ``jsonc=False`` refuses it, for a CLI that reads
    strict JSON only.

    Before anything is written, a journal entry (original bytes and mode, the names added)
    is recorded in a private per-user directory (:mod:`agentshim.mcp.journal`) and
    locked for the turn. A second install into the same file, in this process or another,
    waits until the first is restored. An entry left by a process that died mid-turn is undone
    first, so its servers are never taken for the user's.

    The returned installation's ``restore()`` never raises and never follows a link that was
    not there at install. It gives back the original bytes and mode at the path when the file
    is as agentshim left it (or reformatted, or with only agentshim's entries changed), when
    the agent deleted it, removed its directory, made it unusable (not JSON, ``NaN``, ``1e999``,
    a lone surrogate, not an object) or put a link in its place (the link is replaced; its
    target is not touched; a directory agentshim created that became a link is unlinked).
    When that would destroy something the agent made, it keeps the original next to the path
    instead (``<name>.agentshim-original``) and says so in its note: the agent made the path
    a directory, or rewrote the file into a different JSON object (agentshim then removes
    only its own entries there and keeps the agent's other changes). A file that did not exist
    is removed again with the directories agentshim created, unless the agent put its own
    content there (without agentshim's entries).

    Raises:
        McpConfigError: the path is a symbolic link, the file is unreadable, not UTF-8, not JSON (or JSONC with
            ``jsonc=False``), not an object, an object on ``key_path`` is something else, the
            file or the journal cannot be written, or a dead turn's leftovers cannot be
            removed.
        InvalidRequestError: ``key_path`` is empty (a programming error in the provider).
    """
    if not key_path:
        raise InvalidRequestError(
            "key_path",
            "empty",
            "install_json_config key_path must name at least one key, such as ('mcpServers',)",
        )
    path = Path(os.path.abspath(path))
    lock = _lock_journal(path)
    try:
        recovered = _recover_stale(lock, path)
    except BaseException:
        lock.release()  # keep the dead turn's journal for `mcp recover`
        raise
    try:
        found = _read_config(path)
        merged = _merge(found, str(path), key_path, entries, defaults, jsonc=jsonc)
        created_dirs = _missing_parents(path.parent)
        entry = _record(lock, path, found, merged, key_path, entries, created_dirs, jsonc)
        _write_config(path, merged.written, created_dirs)
    except BaseException:
        lock.discard()
        raise
    return ConfigFileInstallation(entry, lock, recovered)


class ConfigFileInstallation:
    """MCP servers merged into a config file for one turn; ``restore()`` undoes it.

    Satisfies :class:`agentshim.core.provider.McpInstallation` (``argv`` is empty: the
    servers are in the file).
    """

    argv: tuple[str, ...] = ()

    def __init__(self, entry: JournalEntry, lock: JournalLock, recovered: str | None) -> None:
        """Built by :func:`install_json_config`; not meant to be built by hand."""
        self.path = Path(entry.path)
        self._entry = entry
        self._journal = lock
        self._recovered = recovered
        self._lock = threading.Lock()
        self._done = False

    def restore(self) -> str | None:
        """Put the file back; returns a note worth logging, or None when all went as planned.

        Idempotent (only the first call does anything) and never raises: it runs in a
        ``finally`` where an exception would hide the turn's own result or error. When the
        file could not be put back at all, the journal is kept and the note says to run
        ``python -m agentshim mcp recover DIR``.
        """
        with self._lock:
            if self._done:
                return None
            self._done = True
        try:
            note = _restore(self._entry)
        except Exception as exc:
            self._journal.release()
            note = (
                f"could not restore {self.path} after the turn ({exc}); agentshim's MCP "
                f"servers may still be in it: run `{_RECOVER_HINT} {self.path.parent}`"
            )
        else:
            self._journal.discard()
        notes = [n for n in (self._recovered, note) if n]
        return "; ".join(notes) if notes else None


# --- restore ---------------------------------------------------------------------------------


def _restore(entry: JournalEntry) -> str | None:
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
        _remove_dirs(entry.created_dirs)
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
                _remove_dirs(entry.created_dirs)
            return note
        for directory in _missing_parents(parent):
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
    if _sha256(current) == entry.written_sha256:
        put(entry.original, entry.mode)
        return None
    try:
        document = _decode_document(current, jsonc=True)
    except _Unreadable as exc:
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
            rewritten = _encode_document(document)
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
        return _decode_document(entry.original, jsonc=True)
    except _Unreadable:
        return None  # an edited journal: agentshim's names are removed, the bytes kept aside


def _remove_ours(
    document: dict[str, Any], entry: JournalEntry, original: dict[str, Any] | None
) -> bool:
    """Take agentshim's entries, objects and defaults out of ``document``; whether any were."""
    changed = False
    key_path = entry.key_path
    container = _container(document, key_path)
    before = None if original is None else _container(original, key_path)
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
            parent = _container(document, key_path[:depth]) if depth else document
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


# --- recovery by hand ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecoveredConfig:
    """One config file :func:`recover_config_files` looked at.

    ``restored`` is true when a dead turn's install was undone; ``note`` says how (None: the
    original came back exactly). ``error`` is set when it could not be undone (the journal is
    kept) or the file is in use by a running turn.
    """

    path: str
    restored: bool
    note: str | None = None
    error: str | None = None


def recover_config_files(directory: Path | str) -> list[RecoveredConfig]:
    """Undo every install into a config file under ``directory`` whose turn never ended.

    Looks at this user's journal entries (see :mod:`agentshim.mcp.journal`); an entry
    locked by a live turn is reported as in use and left alone. A journal directory that is not
    private (see ``check_private_directory``) is skipped, with ``error`` saying so, before
    anything in it is read; an entry filed under another file's name is left alone. Never raises for a damaged
    entry or a file it cannot restore: those come back with ``error`` set.
    """
    root = os.path.normpath(os.path.abspath(directory))
    found: list[RecoveredConfig] = []
    for journals in journal_directories():
        if not os.path.lexists(journals):
            continue
        try:
            # Checked before anything in it is read: an entry someone else could have put
            # there would make this process write what it says, where it says.
            check_private_directory(journals)
            names = sorted(os.listdir(journals))
        except OSError as exc:
            found.append(
                RecoveredConfig(
                    str(journals),
                    False,
                    error=f"skipped this journal directory ({exc.strerror or exc}: "
                    f"{exc.filename}); only a directory this user alone can change is trusted",
                )
            )
            continue
        for name in names:
            if name.endswith(".json"):
                result = _recover_one(journals / name, root)
                if result is not None:
                    found.append(result)
    return found


def _recover_one(journal: Path, root: str) -> RecoveredConfig | None:
    try:
        lock = JournalLock.acquire(journal, blocking=False)
    except OSError as exc:
        return RecoveredConfig(str(journal), False, error=f"cannot open it ({exc})")
    if lock is None:
        try:
            busy = JournalEntry.from_bytes(journal.read_bytes()).path
        except (OSError, ValueError):
            return None
        if not _under(busy, root):
            return None
        return RecoveredConfig(busy, False, error="a running turn is using it; left it alone")
    try:
        try:
            entry = lock.read()
        except ValueError as exc:
            lock.release()
            return RecoveredConfig(str(journal), False, error=f"damaged journal ({exc})")
        if entry is None:
            lock.discard()
            return None
        if not _under(entry.path, root):
            lock.release()
            return None
        if journal_file_for(Path(entry.path), journal.parent).name != journal.name:
            lock.release()
            return RecoveredConfig(
                str(journal),
                False,
                error=f"it names {entry.path}, whose journal it is not; left it alone",
            )
        try:
            note = _restore(entry)
        except (OSError, ValueError) as exc:
            lock.release()
            return RecoveredConfig(entry.path, False, error=str(exc))
        lock.discard()
        return RecoveredConfig(entry.path, True, note=note)
    finally:
        lock.release()


def _under(path: str, root: str) -> bool:
    def inside(child: str, parent: str) -> bool:
        child, parent = os.path.normpath(child), os.path.normpath(parent)
        return child == parent or child.startswith(parent.rstrip(os.sep) + os.sep)

    return inside(path, root) or inside(os.path.realpath(path), os.path.realpath(root))


# --- the workspace file ----------------------------------------------------------------------


def workspace_config_file(workspace: Path | str | None, relative: str) -> Path:
    """Return the config file ``relative`` inside ``workspace``.

    Raises:
        McpConfigError: there is no workspace to put the file in.
    """
    if workspace is None:
        raise McpConfigError(
            relative, "no workspace directory was given; pass mcp_workspace or a cwd for the turn"
        )
    return Path(workspace) / relative


def configured_servers(path: Path, key: str) -> dict[str, dict[str, Any]]:
    """Return the object entries under ``key`` in the JSON file at ``path``, keyed by name.

    A missing file, a document that is not an object and a ``key`` that holds no object all
    mean no servers; an entry that is not an object is left out.

    Raises:
        OSError: the file exists but cannot be read.
        ValueError: the file is not JSON.
    """
    try:
        document: object = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    servers = as_mapping((as_mapping(document) or {}).get(key)) or {}
    return {str(name): entry for name, entry in servers.items() if isinstance(entry, dict)}
