"""Claude Code's conversation files: ``~/.claude/projects/<cwd key>/<id>.jsonl``.

The transcript lives in a directory named for the workspace path with every character that
is not a letter or digit replaced by ``-``; a conversation's side files (subagent transcripts,
tool results) live in ``<id>/`` beside it. Claude Code 2.1 finds a transcript in any project
directory, but older releases looked only in the one of the current workspace, so an import
moves the files into the directory of the new workspace. Nothing inside is rewritten: Claude
notices the changed working directory itself.
"""

from __future__ import annotations

import re

from agentshim.core.portability import StateFile
from agentshim.providers.portability import FilePorter

__all__ = ["Porter", "project_key"]

_PROJECTS = ".claude/projects"
_NOT_ALNUM = re.compile(r"[^A-Za-z0-9]")


def project_key(cwd: str) -> str:
    """The project directory name Claude Code gives the workspace ``cwd``."""
    return _NOT_ALNUM.sub("-", cwd)


class Porter(FilePorter):
    """Exports a Claude Code conversation's transcript and side files; imports them for a new cwd."""

    def collect(self, session_id: str, cwd: str | None) -> tuple[StateFile, ...]:
        """The transcript and its side directory, from whichever project directory holds them."""
        found = self.files.read(
            [f"{_PROJECTS}/*/{session_id}.jsonl", f"{_PROJECTS}/*/{session_id}"]
        )
        # One project directory: the one the newest transcript is in (a resumed conversation
        # may have left an older copy under a previous workspace's directory).
        transcripts = [file for file in found if file.path.endswith(f"/{session_id}.jsonl")]
        if not transcripts:
            return ()
        keep = max(transcripts, key=lambda file: len(file.data)).path.split("/")[2]
        return tuple(file for file in found if file.path.split("/")[2] == keep)

    def place_file(self, file: StateFile, cwd: str) -> StateFile:
        """``file`` moved into the project directory of ``cwd``."""
        parts = file.path.split("/")
        return StateFile("/".join([*parts[:2], project_key(cwd), *parts[3:]]), file.data)
