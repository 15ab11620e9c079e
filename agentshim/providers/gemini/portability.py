"""Gemini CLI's conversation files: ``~/.gemini/tmp/<project id>/chats/session-<time>-<id8>.jsonl``.

Gemini finds a chat only under the project id that ``~/.gemini/projects.json`` gives the
workspace path, and only when ``tmp/<id>/.project_root`` holds that same path (otherwise it
picks a new id). An import therefore writes all three: the chat under the id, the id in
``projects.json`` (merged with what the host has), and ``.project_root`` (under ``tmp/`` and
``history/``). The id is the workspace's base name, with a number added when another
workspace has it already. The chat's header lines carry ``projectHash``, the SHA-256 of the
workspace path: a resume by ``--resume`` does without it, but a ``session/load`` over ACP
does not find the session in another project, so it is set for the new workspace.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
from collections.abc import Sequence

from agentshim.core.errors import ConversationImportError
from agentshim.core.portability import ConversationState, StateFile
from agentshim.providers.portability import FilePorter

__all__ = ["Porter", "project_id"]

_PROJECTS = ".gemini/projects.json"
_NOT_SLUG = re.compile(r"[^a-z0-9]+")


def _session_of(data: bytes) -> str | None:
    first = data.partition(b"\n")[0]
    try:
        header = json.loads(first)
    except ValueError:
        return None
    found = header.get("sessionId") if isinstance(header, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
    return found if isinstance(found, str) else None


def _with_project_hash(data: bytes, cwd: str) -> bytes:
    """The chat with every header line's ``projectHash`` set to the one of ``cwd``."""
    digest = hashlib.sha256(cwd.encode("utf-8")).hexdigest()
    lines = data.split(b"\n")
    for index, line in enumerate(lines):
        if b'"projectHash"' not in line:
            continue
        try:
            header = json.loads(line)
        except ValueError:
            continue
        if isinstance(header, dict) and "projectHash" in header:
            header["projectHash"] = digest
            lines[index] = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode()
    return b"\n".join(lines)


def project_id(cwd: str, projects: dict[str, str]) -> str:
    """The id for ``cwd``: the one ``projects`` maps it to, else a free one from its base name."""
    if cwd in projects:
        return projects[cwd]
    base = _NOT_SLUG.sub("-", os.path.basename(cwd.rstrip("/")).lower()).strip("-") or "project"
    taken = set(projects.values())
    candidate, number = base, 1
    while candidate in taken:
        candidate, number = f"{base}-{number}", number + 1
    return candidate


class Porter(FilePorter):
    """Exports a Gemini chat file; imports it under the project id of the new workspace."""

    def collect(self, session_id: str, cwd: str | None) -> tuple[StateFile, ...]:
        """The chat file(s) of ``session_id``, from the project directory of the largest one."""
        found = [
            file
            for file in self.files.read([f".gemini/tmp/*/chats/session-*-{session_id[:8]}.jsonl"])
            if _session_of(file.data) == session_id
        ]
        if not found:
            return ()
        keep = max(found, key=lambda file: len(file.data)).path.split("/")[2]
        return tuple(file for file in found if file.path.split("/")[2] == keep)

    def _projects(self) -> dict[str, str]:
        found = self.files.read([_PROJECTS])
        if not found:
            return {}
        try:
            data = json.loads(found[0].data)
        except ValueError as error:
            raise ConversationImportError(
                "gemini", f"{self.files.home}/{_PROJECTS} is not JSON ({error})"
            ) from error
        projects = data.get("projects") if isinstance(data, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if not isinstance(projects, dict):
            return {}
        return {str(k): str(v) for k, v in projects.items()}  # pyright: ignore[reportUnknownVariableType, reportUnknownArgumentType]

    def place(self, state: ConversationState, cwd: str | None) -> Sequence[StateFile]:
        """The chat under the new workspace's project id, with ``projects.json`` and roots."""
        if cwd is None:
            return state.files
        projects = self._projects()
        name = project_id(cwd, projects)
        projects[cwd] = name
        root = cwd.encode("utf-8")
        listing = json.dumps({"projects": projects}, indent=2, ensure_ascii=False)
        return (
            *(
                StateFile(
                    f".gemini/tmp/{name}/chats/{file.path.rsplit('/', 1)[-1]}",
                    _with_project_hash(file.data, cwd),
                )
                for file in state.files
            ),
            StateFile(f".gemini/tmp/{name}/.project_root", root),
            StateFile(f".gemini/history/{name}/.project_root", root),
            StateFile(_PROJECTS, listing.encode("utf-8")),
        )
