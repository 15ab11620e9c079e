"""Private file helpers shared by schema.py and mcp.py: write a file so readers never see half of it."""

from __future__ import annotations

import contextlib
import os
import secrets
from pathlib import Path

__all__ = ["atomic_write"]

# A new file gets 0o666 minus the umask, as open() would give it; passing the mode to os.open
# lets the kernel apply the umask without the process-wide os.umask() dance.
_NEW_FILE_MODE = 0o666


def atomic_write(path: Path | str, data: bytes | str) -> None:
    """Replace the contents of ``path`` with ``data`` in one step.

    The data goes to a temporary file in the same directory, is flushed and fsynced, and then
    renamed over ``path`` with ``os.replace``, so a reader sees either the old contents or the
    new ones, never a mix. ``str`` data is encoded as UTF-8.

    An existing file keeps its permission bits; a new file gets the default mode a plain
    ``open()`` would give it (0o666 minus the umask). When ``path`` is a symlink, the file it
    points to is replaced and the link is left in place. The parent directory must exist.

    Raises:
        OSError: the directory is not writable, the disk is full, and so on. The temporary
            file is removed before the error propagates; ``path`` is untouched.
    """
    payload = data.encode("utf-8") if isinstance(data, str) else data
    target = Path(os.path.realpath(path))
    try:
        existing_mode: int | None = os.stat(target).st_mode & 0o7777
    except FileNotFoundError:
        existing_mode = None

    temp, fd = _create_temp(target)
    try:
        try:
            if existing_mode is not None:
                os.fchmod(fd, existing_mode)
            view = memoryview(payload)
            while view:
                written = os.write(fd, view)
                view = view[written:]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(temp)
        raise
    _fsync_directory(target.parent)


def _create_temp(target: Path) -> tuple[Path, int]:
    """Create a fresh, exclusively-owned temporary file next to ``target``."""
    while True:
        temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
        try:
            fd = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _NEW_FILE_MODE)
        except FileExistsError:
            continue
        return temp, fd


def _fsync_directory(directory: Path) -> None:
    """Make the rename durable; best effort, since not every platform can fsync a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
