"""opencode's catalog entry."""

from __future__ import annotations

from agentshim.providers.static_plugin import builtin_plugin

from .provider import OpencodeProvider

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(__name__, OpencodeProvider)
"""Everything the catalog knows about opencode."""
