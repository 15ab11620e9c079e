"""TextProvider: runs a custom harness command whose stdout is the answer.

Everything but the parser is shared with the other harness provider (``providers/harness.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentshim.core.events import Emit
from agentshim.providers.harness import DEFAULT_BINARY, HarnessProvider, harness_profile
from agentshim.providers.harness_resume import RESUME_ALIASES, RESUME_TEMPLATE

from .parser import PROVIDER_NAME, TextStreamParser

__all__ = ["DEFAULT_BINARY", "PROFILE", "RESUME_ALIASES", "RESUME_TEMPLATE", "TextProvider"]

PROFILE = harness_profile(PROVIDER_NAME, "text harness")
"""A harness's capabilities: a prompt on stdin, the answer on stdout, nothing else."""


@dataclass(frozen=True, kw_only=True, eq=False)
class TextProvider(HarnessProvider):
    """Runs ``binary args...`` with the prompt on stdin; its stdout is the answer.

    A nonzero exit fails the turn with the stderr tail. The command must exit 0 when
    run with ``--version`` (the health check every agent runs once).
    """

    default_profile = PROFILE

    def new_parser(self, emit: Emit, *, expect_structured: bool) -> TextStreamParser:
        """Return a fresh parser for one turn."""
        return TextStreamParser(emit)
