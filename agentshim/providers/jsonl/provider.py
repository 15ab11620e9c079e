"""JsonlProvider: runs a custom harness command that prints agentshim's vocabulary as JSONL.

Everything but the parser is shared with the other harness provider (``providers/harness.py``).
"""

from __future__ import annotations

from dataclasses import dataclass

from agentshim.core.events import Emit
from agentshim.providers.harness import DEFAULT_BINARY, HarnessProvider, harness_profile
from agentshim.providers.harness_resume import RESUME_ALIASES, RESUME_TEMPLATE

from .parser import PROVIDER_NAME, JsonlStreamParser

__all__ = ["DEFAULT_BINARY", "PROFILE", "RESUME_ALIASES", "RESUME_TEMPLATE", "JsonlProvider"]

PROFILE = harness_profile(PROVIDER_NAME, "JSONL harness")
"""A harness's capabilities: a prompt on stdin, events on stdout, nothing else."""


@dataclass(frozen=True, kw_only=True, eq=False)
class JsonlProvider(HarnessProvider):
    """Runs ``binary args...`` with the prompt on stdin and reads its stdout as stored events.

    Each stdout line that is an object of the vocabulary (``docs/context-and-usage.md``,
    "Stored events") is that event; any other line is RawOutput. The command must exit 0 when
    run with ``--version`` (the health check every agent runs once).
    """

    default_profile = PROFILE

    def new_parser(self, emit: Emit, *, expect_structured: bool) -> JsonlStreamParser:
        """Return a fresh parser for one turn."""
        return JsonlStreamParser(emit)
