"""Resume lines: the shell line that continues a conversation, and finding one in free text."""

from __future__ import annotations

import re
from dataclasses import dataclass

from agentshim.core.ids import is_valid_session_id, validate_session_id
from agentshim.providers import DEFAULT_CATALOG, ProviderCatalog
from agentshim.providers.static_plugin import StaticProviderPlugin

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


def _patterns(provider: str, catalog: ProviderCatalog) -> list[re.Pattern[str]]:
    # Render the line with a placeholder id, then rebuild it as a regex around the id.
    placeholder = "agentshim-resume-placeholder-0"
    plugin = catalog.plugin(provider)
    head, _, tail = plugin.resume_command(placeholder).partition(placeholder)
    # Built-in plugins also list the other spellings their CLI accepts (per its --help).
    aliases = plugin.resume_aliases if isinstance(plugin, StaticProviderPlugin) else ()
    forms = [(head, tail), *(alias.partition("{id}")[::2] for alias in aliases)]
    return [
        re.compile(
            r"(?<![\w./-])"
            + re.escape(head)
            + _ID_PATTERN
            + re.escape(tail)
            + r"(?![A-Za-z0-9._-])"
        )
        for head, tail in forms
    ]


def extract_resume(
    text: str, provider: str | None = None, *, catalog: ProviderCatalog = DEFAULT_CATALOG
) -> ResumeLine | None:
    """Return the last resume line in ``text`` (of ``provider`` only, if given), or None.

    A resume line is the one ``resume_command`` writes, or another spelling the built-in CLI
    accepts for it: ``claude -r <id>``, ``codex exec resume <id>``, ``gemini -r <id>``,
    ``opencode -s <id>`` (also after ``run``), ``copilot --resume <id>`` or ``-r <id>``, and
    ``--flag=<id>`` where the CLI takes that. An id that is not a valid session id (see
    ``resume_command``) is never returned.
    """
    names = (provider,) if provider is not None else catalog.names()
    best: tuple[int, ResumeLine] | None = None
    for name in names:
        for pattern in _patterns(name, catalog):
            for match in pattern.finditer(text):
                if not is_valid_session_id(match.group(1)):
                    continue
                if best is None or match.start() > best[0]:
                    best = (match.start(), ResumeLine(name, match.group(1)))
    return best[1] if best is not None else None
