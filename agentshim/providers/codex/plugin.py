"""The Codex provider's catalog entry."""

from __future__ import annotations

from agentshim.providers.static_plugin import builtin_plugin

from .provider import CodexProvider

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(__name__, CodexProvider)
"""Codex CLI: profile, provider factory, scripted output, model and price facts."""
