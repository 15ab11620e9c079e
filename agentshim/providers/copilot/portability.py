"""Copilot CLI's conversation files: ``~/.copilot/session-state/<id>/``.

The directory holds the transcript (``events.jsonl``), ``workspace.yaml`` and the session's
checkpoints; ``session-store.db`` is an index Copilot does without. Copilot resumes the copied
directory as it is, but tells the model the ``cwd:`` of ``workspace.yaml``, so an import
rewrites that line. Lock files never travel.
"""

from __future__ import annotations

import json

from agentshim.core.portability import StateFile
from agentshim.providers.portability import FilePorter

__all__ = ["Porter"]


def _with_cwd(data: bytes, cwd: str) -> bytes:
    # A JSON string is a valid YAML double-quoted scalar, whatever the path holds.
    quoted = (
        cwd
        if cwd.replace("/", "").replace("-", "").replace("_", "").replace(".", "").isalnum()
        else json.dumps(cwd)
    )
    lines = data.decode("utf-8").splitlines(keepends=True)
    for index, line in enumerate(lines):
        if line.startswith("cwd:"):
            lines[index] = f"cwd: {quoted}\n"
    return "".join(lines).encode("utf-8")


class Porter(FilePorter):
    """Exports a Copilot session directory; imports it with ``workspace.yaml``'s cwd rewritten."""

    def collect(self, session_id: str, cwd: str | None) -> tuple[StateFile, ...]:
        """Everything in the session's directory but lock files."""
        return self.files.read([f".copilot/session-state/{session_id}"])

    def place_file(self, file: StateFile, cwd: str) -> StateFile:
        """``file``, with the cwd of ``workspace.yaml`` set to ``cwd``."""
        if not file.path.endswith("/workspace.yaml"):
            return file
        return StateFile(file.path, _with_cwd(file.data, cwd))
