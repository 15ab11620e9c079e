"""Claude Code's session transcript: where it lives and the title records it holds.

Claude Code names its conversations but does not print the name on stdout: it writes
``{"type":"ai-title","aiTitle":...}`` lines into the session's transcript,
``<session_id>.jsonl`` under ``${CLAUDE_CONFIG_DIR:-$HOME/.claude}/projects/<project>/``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["TITLE_FIELD", "TITLE_RECORD", "title_lines_command", "title_of_record"]

TITLE_RECORD = "ai-title"
"""The ``type`` of a transcript line that names the conversation."""

TITLE_FIELD = "aiTitle"
"""The field of that line that holds the title."""

# Enough lines that a few made-up ones (the agent can write into its own transcript) cannot
# push the real record out, few enough that the probe's output stays small.
_PROBE_LINES = 20


def title_lines_command(session_id: str) -> str:
    """The shell command printing the last title-looking lines of ``session_id``'s transcript.

    ``session_id`` must already be a safe id (``[A-Za-z0-9._-]``): it is put into the command
    as it is. The command always exits 0 and prints nothing when there is no transcript.
    """
    return (
        'root="${CLAUDE_CONFIG_DIR:-$HOME/.claude}/projects"; '
        f"file=$(find \"$root\" -type f -name '{session_id}.jsonl' 2>/dev/null | head -n 1); "
        f'if [ -n "$file" ]; then grep -F \'{TITLE_RECORD}\' "$file" | tail -n {_PROBE_LINES}; fi; '
        "exit 0"
    )


def title_of_record(record: Any) -> object:
    """The raw title of a decoded transcript line, or None when it is not a title record."""
    if record.__class__ is not dict or record.get("type") != TITLE_RECORD:
        return None
    return record.get(TITLE_FIELD)
