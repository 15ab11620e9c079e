"""The plugin of the generic text provider, and a plugin for a named harness command."""

from __future__ import annotations

from collections.abc import Sequence

from agentshim.providers.harness import plugin_for_command
from agentshim.providers.static_plugin import StaticProviderPlugin, builtin_plugin

from .provider import TextProvider

__all__ = ["PLUGIN", "harness_plugin"]

PLUGIN = builtin_plugin(__name__, TextProvider)
"""The text provider with its default command (``harness``)."""


def harness_plugin(binary: str, args: Sequence[str] = ()) -> StaticProviderPlugin:
    """The text provider running ``binary args...``, for a catalog an ``Agent`` can name.

    ``Agent("text", catalog=ProviderCatalog({"text": harness_plugin("my-agent")}), ...)``.
    """
    return plugin_for_command(PLUGIN, TextProvider, binary, args)
