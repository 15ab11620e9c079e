"""The built-in catalog's declaration of the GitHub Copilot CLI provider."""

from __future__ import annotations

from agentshim.providers.static_plugin import builtin_plugin

from .provider import CopilotProvider

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(__name__, CopilotProvider)
"""Copilot CLI: profile, provider factory, scripted output, resume line and (empty) tables."""
