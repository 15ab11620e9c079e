"""The Gemini CLI's catalog entry."""

from __future__ import annotations

from agentshim.providers.static_plugin import builtin_plugin

from .provider import GeminiProvider

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(__name__, GeminiProvider)
"""Everything the catalog knows about the Gemini CLI."""
