"""Pi's conversation files: ``~/.pi/agent/sessions/--<cwd>--/<time>_<id>.jsonl``.

Pi looks a session up in the directory named for the workspace path (``/`` as ``-``, between
``--`` and ``--``), and tells the model the ``cwd`` of the session header (the file's first
line). An import moves the file into the new workspace's directory and rewrites that ``cwd``.
"""

from __future__ import annotations

import json
import re

from agentshim.core.errors import ConversationImportError
from agentshim.core.portability import StateFile
from agentshim.providers.portability import FilePorter

__all__ = ["Porter", "session_dir_name"]

_SESSIONS = ".pi/agent/sessions"
_SEPARATORS = re.compile(r"[/\\:]")


def session_dir_name(cwd: str) -> str:
    """The sessions directory name Pi gives the workspace ``cwd``."""
    return "--" + _SEPARATORS.sub("-", cwd.lstrip("/\\")) + "--"


def _with_header_cwd(data: bytes, cwd: str) -> bytes:
    first, newline, rest = data.partition(b"\n")
    try:
        header = json.loads(first)
    except ValueError as error:
        raise ConversationImportError("pi", f"the session header is not JSON ({error})") from error
    if not isinstance(header, dict) or header.get("type") != "session":  # pyright: ignore[reportUnknownMemberType]
        raise ConversationImportError("pi", "the session file does not start with its header")
    header["cwd"] = cwd
    line = json.dumps(header, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return line + newline + rest


class Porter(FilePorter):
    """Exports a Pi session file; imports it into the new workspace's directory, header rewritten."""

    def collect(self, session_id: str, cwd: str | None) -> tuple[StateFile, ...]:
        """The session file of ``session_id``: the longest, if several workspaces hold one."""
        found = self.files.read([f"{_SESSIONS}/*/*_{session_id}.jsonl"])
        return (max(found, key=lambda file: len(file.data)),) if found else ()

    def place_file(self, file: StateFile, cwd: str) -> StateFile:
        """``file`` moved into ``cwd``'s sessions directory with the header's ``cwd`` set."""
        name = file.path.rsplit("/", 1)[-1]
        return StateFile(
            f"{_SESSIONS}/{session_dir_name(cwd)}/{name}", _with_header_cwd(file.data, cwd)
        )
