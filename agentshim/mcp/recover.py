"""Recovery by hand: undo the installs of turns whose process died before restoring.

:func:`recover_config_files` is what ``python -m agentshim mcp recover DIR`` runs: it reads
this user's journal entries (:mod:`agentshim.mcp.journal`) for files under a directory and
restores each one no running turn holds (:mod:`agentshim.mcp.restore`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from agentshim.mcp.journal import (
    JournalEntry,
    JournalLock,
    check_private_directory,
    journal_directories,
    journal_file_for,
)
from agentshim.mcp.restore import restore_entry

__all__ = ["RecoveredConfig", "recover_config_files"]


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
            note = restore_entry(entry)
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
