"""The merge and restore of a provider's JSON config file for one turn, and where that file is.

:func:`install_json_config` merges rendered entries into a JSON config file under a key path
(``("mcpServers",)`` for ``.mcp.json``) and returns a :class:`ConfigFileInstallation` whose
``restore()`` puts the file back the way it was. See ``install_json_config`` for exactly what
"back the way it was" means when the agent touched the file during the turn.

For CLIs that read their MCP servers from a project file (such as ``.gemini/settings.json``
or ``opencode.json``), :func:`workspace_config_file` says where that file is and
:func:`configured_servers` which servers it holds.
"""

from __future__ import annotations

import contextlib
import copy
import json
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, cast

from agentshim.core._files import atomic_write
from agentshim.core.errors import InvalidRequestError, McpConfigError
from agentshim.core.jsonvalues import as_mapping

__all__ = [
    "ConfigFileInstallation",
    "configured_servers",
    "install_json_config",
    "workspace_config_file",
]


class _Unreadable(Exception):
    """A config file that is not a readable, parseable JSON object; the text says why."""


def _decode_document(data: bytes) -> dict[str, Any]:
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise _Unreadable(f"it is not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    try:
        value = json.loads(text)
    except (ValueError, RecursionError) as exc:
        if _is_jsonc(text):
            raise _Unreadable(
                "it contains comments or trailing commas (JSONC), which agentshim would lose "
                "when it writes its servers in; remove them, or configure the servers yourself"
            ) from None
        raise _Unreadable(f"it is not valid JSON ({exc})") from None
    if not isinstance(value, dict):
        raise _Unreadable(f"its top level is not a JSON object but {type(value).__name__}")
    return cast("dict[str, Any]", value)


def _is_jsonc(text: str) -> bool:
    """Whether ``text`` becomes valid JSON once comments and trailing commas are taken out."""
    stripped = _strip_jsonc(text)
    if stripped is None:
        return False
    try:
        json.loads(stripped)
    except (ValueError, RecursionError):
        return False
    return True


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


def _read(path: Path) -> bytes | None:
    """The file's bytes, or None if it does not exist; OSError for anything else."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None


def _missing_parents(directory: Path) -> list[Path]:
    """The ancestors of a file that do not exist yet, outermost first."""
    missing: list[Path] = []
    current = directory
    while not current.exists() and current != current.parent:
        missing.append(current)
        current = current.parent
    return list(reversed(missing))


def _remove_dirs(created: Sequence[Path]) -> None:
    """Remove directories agentshim created, innermost first, if they are empty again."""
    for directory in reversed(created):
        try:
            directory.rmdir()
        except OSError:
            return  # not empty (someone put something there) or already gone: leave the rest


def _container(document: dict[str, Any], key_path: Sequence[str]) -> dict[str, Any] | None:
    node: Any = document
    for key in key_path:
        if not isinstance(node, dict):
            return None
        node = cast("dict[str, Any]", node).get(key)
    return cast("dict[str, Any]", node) if isinstance(node, dict) else None


def install_json_config(
    path: Path,
    key_path: Sequence[str],
    entries: Mapping[str, Mapping[str, Any]],
    *,
    defaults: Mapping[str, Any] | None = None,
) -> ConfigFileInstallation:
    """Merge ``entries`` into the JSON object at ``key_path`` in the file ``path``.

    ``key_path`` names the nested object that holds the servers (``("mcpServers",)``,
    ``("mcp",)``); missing objects along it are created. An entry whose name is already
    there replaces it for the turn. ``defaults`` are top-level keys set only when the
    document lacks them (opencode's ``"$schema"``). Missing parent directories are created.
    The merged file is written atomically, pretty-printed with two-space indents.

    The returned installation's ``restore()`` undoes it:

    - the file is as agentshim left it (same bytes, or the same JSON value): the original
      bytes are written back, or the file is deleted if it did not exist before, along with
      any directories agentshim created for it;
    - the file changed during the turn and still holds a JSON object: only agentshim's
      entries are removed (a server the file had before under the same name gets its old
      value back), along with objects and defaults agentshim added that are unchanged;
      everything else the agent changed is kept;
    - the agent left the file unreadable, not JSON, not an object, or deleted it: the
      original bytes are written back (or the file is removed if there was none).

    A file with comments or trailing commas (JSONC) is refused: merging would mean writing
    it back without them, and the comments would not survive the turn. The caller gets an
    McpConfigError that says so and can remove the comments or configure the servers
    itself.

    Two turns must not install into the same file at the same time: each would take the
    other's entries for the user's.

    Raises:
        McpConfigError: the file is unreadable, not UTF-8, not JSON, JSONC, not an object,
            an object on ``key_path`` is something else, or the file cannot be written.
        InvalidRequestError: ``key_path`` is empty (a programming error in the provider).
    """
    if not key_path:
        raise InvalidRequestError(
            "key_path",
            "empty",
            "install_json_config key_path must name at least one key, such as ('mcpServers',)",
        )
    path = Path(path)
    where = str(path)
    try:
        original = _read(path)
    except OSError as exc:
        raise McpConfigError(where, f"it cannot be read ({exc.strerror or exc})") from exc
    if original is None and path.is_symlink():
        # A link to a file that does not exist: writing would create the target and restoring
        # would remove the link, so neither would be as the user left them.
        raise McpConfigError(
            where,
            f"it is a symbolic link to {os.readlink(path)!r}, which does not exist; create the "
            "target or remove the link",
        )
    if original is None:
        document: dict[str, Any] = dict(copy.deepcopy(defaults or {}))
        added_defaults: dict[str, Any] = dict(document)
    else:
        try:
            document = _decode_document(original)
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

    replaced = {name: copy.deepcopy(container[name]) for name in entries if name in container}
    for name, entry in entries.items():
        container[name] = copy.deepcopy(dict(entry))
    try:
        written = _encode_document(document)
    except (TypeError, ValueError) as exc:
        raise McpConfigError(where, f"an entry cannot be written as JSON ({exc})") from exc

    created_dirs = _missing_parents(path.parent)
    try:
        for directory in created_dirs:
            directory.mkdir()
        atomic_write(path, written)
    except OSError as exc:
        _remove_dirs(created_dirs)
        raise McpConfigError(where, f"it cannot be written ({exc.strerror or exc})") from exc
    return ConfigFileInstallation(
        path=path,
        original=original,
        written=written,
        merged=document,
        key_path=tuple(key_path),
        names=tuple(entries),
        replaced=replaced,
        added_defaults=added_defaults,
        created_from=created_from,
        created_dirs=tuple(created_dirs),
    )


class ConfigFileInstallation:
    """MCP servers merged into a config file for one turn; ``restore()`` undoes it.

    Satisfies :class:`agentshim.core.provider.McpInstallation` (``argv`` is empty: the
    servers are in the file).
    """

    argv: tuple[str, ...] = ()

    def __init__(
        self,
        *,
        path: Path,
        original: bytes | None,
        written: bytes,
        merged: dict[str, Any],
        key_path: tuple[str, ...],
        names: tuple[str, ...],
        replaced: dict[str, Any],
        added_defaults: dict[str, Any],
        created_from: int | None,
        created_dirs: tuple[Path, ...],
    ) -> None:
        """Built by :func:`install_json_config`; not meant to be built by hand."""
        self.path = path
        self._original = original
        self._written = written
        self._merged = merged
        self._key_path = key_path
        self._names = names
        self._replaced = replaced
        self._added_defaults = added_defaults
        self._created_from = created_from
        self._created_dirs = created_dirs
        self._lock = threading.Lock()
        self._done = False

    def restore(self) -> str | None:
        """Put the file back; returns a note worth logging, or None when all went as planned.

        Idempotent (only the first call does anything) and never raises: it runs in a
        ``finally`` where an exception would hide the turn's own result or error.
        """
        with self._lock:
            if self._done:
                return None
            self._done = True
        try:
            return self._restore()
        except Exception as exc:
            return (
                f"could not restore {self.path} after the turn ({exc}); check it by hand: "
                "agentshim's MCP servers may still be in it"
            )

    def _restore(self) -> str | None:
        try:
            current = _read(self.path)
        except OSError as exc:
            return self._put_back_original(f"it was unreadable ({exc.strerror or exc})")
        if current is None:
            if self._original is None:
                _remove_dirs(self._created_dirs)
                return None
            return self._put_back_original("it was deleted during the turn")
        if current == self._written:
            return self._put_back_original(None)
        try:
            document = _decode_document(current)
        except _Unreadable as exc:
            return self._put_back_original(f"the turn left it unusable: {exc}")
        if document == self._merged:
            return self._put_back_original(None)  # rewritten with the same content
        return self._remove_ours(document)

    def _put_back_original(self, why: str | None) -> str | None:
        if self._original is None:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            _remove_dirs(self._created_dirs)
            return None if why is None else f"{self.path}: {why}; removed it, as it did not exist"
        atomic_write(self.path, self._original)
        return None if why is None else f"{self.path}: {why}; wrote back its original content"

    def _remove_ours(self, document: dict[str, Any]) -> str | None:
        changed = False
        container = _container(document, self._key_path)
        if container is not None:
            for name in self._names:
                if name in self._replaced:
                    if container.get(name) != self._replaced[name]:
                        container[name] = copy.deepcopy(self._replaced[name])
                        changed = True
                elif name in container:
                    del container[name]
                    changed = True
        if self._created_from is not None:
            # Drop the objects agentshim created along the key path, innermost first, while
            # they are empty.
            for depth in range(len(self._key_path) - 1, self._created_from - 1, -1):
                parent = _container(document, self._key_path[:depth]) if depth else document
                key = self._key_path[depth]
                if parent is None or parent.get(key) != {}:
                    break
                del parent[key]
                changed = True
        for key, value in self._added_defaults.items():
            if key in document and document[key] == value:
                del document[key]
                changed = True
        if self._original is None and not document:
            with contextlib.suppress(FileNotFoundError):
                self.path.unlink()
            _remove_dirs(self._created_dirs)
            return None
        if changed:
            atomic_write(self.path, _encode_document(document))
        return (
            f"{self.path} changed during the turn; removed only agentshim's MCP servers "
            "and kept the other changes"
        )


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
