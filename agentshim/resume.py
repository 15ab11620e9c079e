"""Resume lines: the shell line that continues a conversation, and finding one in free text."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentshim.core.ids import validate_session_id
from agentshim.providers import DEFAULT_CATALOG, ProviderCatalog

__all__ = ["ResumeLine", "extract_resume", "resume_command"]

_ID_PATTERN = r"([A-Za-z0-9._-]{1,128})"


@dataclass(frozen=True, slots=True)
class ResumeLine:
    """A provider and the conversation id a resume line names."""

    provider: str
    session_id: str


def resume_command(
    provider: str, session_id: str, *, catalog: ProviderCatalog = DEFAULT_CATALOG
) -> str:
    """Return the shell line a person would type to continue ``session_id`` on ``provider``.

    Raises InvalidSessionIdError for an id that is not safe to put on a command line.
    """
    return catalog.plugin(provider).resume_command(validate_session_id(session_id))


def _pattern(provider: str, catalog: ProviderCatalog) -> re.Pattern[str]:
    # Render the line with a placeholder id, then rebuild it as a regex around the id.
    placeholder = "agentshim-resume-placeholder-0"
    head, _, tail = catalog.plugin(provider).resume_command(placeholder).partition(placeholder)
    return re.compile(
        r"(?<![\w./-])" + re.escape(head) + _ID_PATTERN + re.escape(tail) + r"(?![A-Za-z0-9._-])"
    )


def extract_resume(
    text: str, provider: str | None = None, *, catalog: ProviderCatalog = DEFAULT_CATALOG
) -> ResumeLine | None:
    """Return the last resume line in ``text`` (of ``provider`` only, if given), or None."""
    names = (provider,) if provider is not None else catalog.names()
    best: tuple[int, ResumeLine] | None = None
    for name in names:
        for match in _pattern(name, catalog).finditer(text):
            if best is None or match.start() > best[0]:
                best = (match.start(), ResumeLine(name, match.group(1)))
    return best[1] if best is not None else None
