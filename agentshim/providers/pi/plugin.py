"""The built-in catalog's declaration of the Pi provider."""

from __future__ import annotations

from agentshim.providers.static_plugin import builtin_plugin

from .provider import PiProvider

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(__name__, PiProvider)
"""Pi: profile, provider factory, scripted output, resume line and (empty) tables."""
