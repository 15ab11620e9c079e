"""Following a Claude Code session transcript as the TUI writes it, line by line.

The interactive CLI prints no machine-readable stream; its transcript
(``$CLAUDE_CONFIG_DIR|$HOME/.claude/projects/<munged cwd>/<session_id>.jsonl``) holds what the
stream would have said: ``assistant`` lines (one per content block, each with the message's
usage), ``user`` lines (the prompt, tool results), ``system`` lines (``turn_duration`` ends a
turn) and ``ai-title`` lines naming the conversation. It is flushed on its own schedule and
may lag the hooks, so everything read from it is best effort.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentshim.core.jsonvalues import as_mapping

__all__ = ["TURN_END", "TranscriptFollower", "transcript_path"]

TURN_END = "turn_duration"
"""The ``system`` subtype of the line that closes a turn in the transcript."""

# A transcript line longer than this is skipped (a pasted file, a huge tool result).
_MAX_LINE = 8 << 20


def transcript_path(env: Mapping[str, str], munged: str, session_id: str) -> Path:
    """Where the transcript of ``session_id`` run in the munged directory lives, per ``env``."""
    config = env.get("CLAUDE_CONFIG_DIR") or os.path.join(env.get("HOME") or "~", ".claude")
    return Path(config).expanduser() / "projects" / munged / f"{session_id}.jsonl"


class TranscriptFollower:
    """Reads the lines appended to one transcript since the last read; never raises.

    ``path`` may change (the SessionStart hook names the real one); reading starts at the
    end of what the previous path had only when the path is the same.
    """

    __slots__ = ("_offset", "_partial", "_path")

    def __init__(self, path: Path | None = None) -> None:
        self._path = path
        self._offset = 0
        self._partial = b""

    @property
    def path(self) -> Path | None:
        """The transcript followed (None: not known yet)."""
        return self._path

    @path.setter
    def path(self, value: Path) -> None:
        if value != self._path:
            self._path, self._offset, self._partial = value, 0, b""

    def read(self) -> list[tuple[Mapping[str, Any], str]]:
        """Every complete JSON-object line written since the last call, with its text."""
        path = self._path
        if path is None:
            return []
        try:
            with path.open("rb") as handle:
                handle.seek(self._offset)
                data = handle.read()
        except OSError:
            return []
        self._offset += len(data)
        data = self._partial + data
        lines = data.split(b"\n")
        self._partial = lines.pop()
        if len(self._partial) > _MAX_LINE:
            self._partial = b""
        records: list[tuple[Mapping[str, Any], str]] = []
        for raw in lines:
            if not raw.strip() or len(raw) > _MAX_LINE:
                continue
            text = raw.decode("utf-8", "replace")
            try:
                value: object = json.loads(text)
            except ValueError:
                continue  # a torn or foreign line costs that line
            record = as_mapping(value)
            if record is not None:
                records.append((record, text))
        return records
