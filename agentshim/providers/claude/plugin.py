"""The Claude Code provider's catalog entry."""

from __future__ import annotations

from agentshim.providers.static_plugin import builtin_plugin

from .provider import ClaudeProvider

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(__name__, ClaudeProvider)
"""Claude Code: profile, provider factory, scripted output, model and price tables."""
