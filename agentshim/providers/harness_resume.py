"""How a harness provider continues a conversation: it does not.

The JSONL and text harness providers both re-export these as their ``RESUME_TEMPLATE`` and
``RESUME_ALIASES``, the names every provider package declares.
"""

from __future__ import annotations

__all__ = ["RESUME_ALIASES", "RESUME_TEMPLATE"]

RESUME_TEMPLATE = ""
"""Empty: a harness has no agreed way to continue a conversation."""
RESUME_ALIASES: tuple[str, ...] = ()
"""None either: no spelling of a resume line continues a harness's conversation."""
