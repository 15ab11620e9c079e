"""Install a turn's MCP servers into a provider's JSON config file, under a journal.

:func:`install_json_config` merges rendered entries into a JSON (or JSONC) config file under a
key path (``("mcpServers",)`` for ``.mcp.json``) and returns a :class:`ConfigFileInstallation`
whose ``restore()`` puts the file back (:mod:`agentshim.mcp.restore`): the original bytes and
mode at the path, or, when the agent left something there that agentshim will not destroy, the
original next to it (see ``install_json_config``). A journal written before the install
(:mod:`agentshim.mcp.journal`) lets the next install, or
:func:`agentshim.mcp.recover.recover_config_files`, undo a turn whose process died.

For CLIs that read their MCP servers from a project file (such as ``.gemini/settings.json``
or ``opencode.json``), :func:`workspace_config_file` says where that file is and
:func:`configured_servers` which servers it holds.
"""

from __future__ import annotations

import copy
import json
import os
import stat
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, cast

from agentshim.core._files import atomic_write
from agentshim.core.errors import InvalidRequestError, McpConfigError
from agentshim.core.jsonvalues import as_mapping
from agentshim.mcp.journal import (
    JournalEntry,
    JournalLock,
    journal_directories,
    journal_file_for,
    private_directory,
)
from agentshim.mcp.jsonc import UnreadableDocument, decode_document, digest, encode_document
from agentshim.mcp.restore import missing_parents, remove_created_dirs, restore_entry

__all__ = [
    "ConfigFileInstallation",
    "configured_servers",
    "install_json_config",
    "workspace_config_file",
]

_RECOVER_HINT = "python -m agentshim mcp recover"


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
            document = decode_document(found.original, jsonc=jsonc)
        except UnreadableDocument as exc:
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
        written = encode_document(document)
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
        note = restore_entry(stale)
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
        written_sha256=digest(merged.written),
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
        remove_created_dirs(created_dirs)
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
        created_dirs = missing_parents(path.parent)
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
            note = restore_entry(self._entry)
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
