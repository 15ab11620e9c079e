"""Session titles: the name a CLI gives its conversation, read in band or out of band.

Claude Code names its conversations but does not print the name on stdout: it writes
``{"type":"ai-title","aiTitle":...}`` lines into the session's transcript under
``${CLAUDE_CONFIG_DIR:-$HOME/.claude}/projects``. Reading it takes a shell probe run where the
CLI runs (:func:`title_probe`, through the agent's executor, so inside a confinement too) and
a parser for what the probe printed (:func:`parse_title`). A CLI that names its conversation
in band emits a :class:`~agentshim.core.events.SessionTitle` event instead and needs neither.
"""

from __future__ import annotations

import json
from typing import Any

from agentshim.core._text import MAX_TITLE_CHARS, clean_title
from agentshim.core.events import SessionTitle
from agentshim.core.ids import is_valid_session_id
from agentshim.providers.claude import transcript as claude_transcript
from agentshim.providers.claude.parser import PROVIDER_NAME as CLAUDE

__all__ = [
    "MAX_TITLE_CHARS",
    "OUT_OF_BAND_PROVIDERS",
    "SessionTitle",
    "clean_title",
    "parse_title",
    "title_probe",
]

OUT_OF_BAND_PROVIDERS = frozenset({CLAUDE})
"""Providers whose titles are read from the session transcript rather than from the stream."""


def title_probe(provider: str, session_id: str) -> str | None:
    """The shell command that prints the last few ai-title lines of ``session_id``'s transcript.

    The transcript is found by its file name (``<session_id>.jsonl``) under
    ``${CLAUDE_CONFIG_DIR:-$HOME/.claude}/projects``. The command always exits 0 and prints
    nothing when there is no transcript (a run with ``--no-session-persistence``, say).
    None for a provider that names its titles in band, and for an id outside
    ``[A-Za-z0-9._-]{1,128}``: the id comes from the CLI's output and is about to be put into
    a shell command, so nothing else is accepted.
    """
    if provider not in OUT_OF_BAND_PROVIDERS:
        return None
    if not isinstance(session_id, str) or not is_valid_session_id(session_id):  # pyright: ignore[reportUnnecessaryIsInstance]
        return None
    return claude_transcript.title_lines_command(session_id)


def parse_title(provider: str, output: str) -> SessionTitle | None:
    """The title in what :func:`title_probe` printed: the newest real ai-title record wins.

    The probe's grep is a substring match on a file the agent itself can write into, so a
    line counts only when it is a JSON object whose ``type`` is ``ai-title`` and whose
    ``aiTitle`` cleans (:func:`clean_title`) to a title. ``source`` is that line. None when no
    line is one, and for a provider that names its titles in band.
    """
    if provider not in OUT_OF_BAND_PROVIDERS or not isinstance(output, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        return None
    for line in reversed(output.splitlines()):
        source = line.strip()
        if not source.startswith("{"):
            continue
        try:
            record: Any = json.loads(source)
        except (ValueError, RecursionError):
            continue
        title = clean_title(claude_transcript.title_of_record(record))
        if title is not None:
            return SessionTitle(title, source)
    return None
