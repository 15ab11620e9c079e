"""The built-in provider catalog and name-based lookups.

Providers are imported lazily: ``import agentshim`` does not import any provider's parser.
"""

from __future__ import annotations

from collections.abc import Callable

from agentshim.core.plugin import ProviderPlugin
from agentshim.core.provider import Provider
from agentshim.providers.catalog import LazyPlugin, ProviderCatalog
from agentshim.providers.discovery import ENTRY_POINT_GROUP
from agentshim.providers.discovery import discover as _discover

__all__ = [
    "DEFAULT_CATALOG",
    "DEFAULT_PROVIDER",
    "ENTRY_POINT_GROUP",
    "HARNESS_CATALOG",
    "ProviderCatalog",
    "discover",
    "get_plugin",
    "get_provider",
    "provider_names",
]

_BUILTIN_NAMES = ("claude", "codex", "gemini", "opencode", "copilot", "pi")

DEFAULT_PROVIDER = _BUILTIN_NAMES[0]
"""The provider the command line uses when none is named."""


def _builtin_catalog() -> ProviderCatalog:
    return ProviderCatalog(
        {
            name: LazyPlugin(name, f"agentshim.providers.{name}.plugin:PLUGIN")
            for name in _BUILTIN_NAMES
        }
    )


DEFAULT_CATALOG: ProviderCatalog = _builtin_catalog()
"""The built-in providers. Immutable: extend it with ``with_plugin`` into a new catalog."""

HARNESS_CATALOG: ProviderCatalog = ProviderCatalog(
    {
        name: LazyPlugin(name, f"agentshim.providers.{name}.plugin:PLUGIN")
        for name in ("jsonl", "text")
    }
)
"""The generic providers for a custom harness command: ``jsonl`` (it prints the event
vocabulary) and ``text`` (its stdout is the answer). They name no CLI of their own, so they
are not in DEFAULT_CATALOG; each package's ``harness_plugin(binary)`` names the command."""


def provider_names(catalog: ProviderCatalog = DEFAULT_CATALOG) -> tuple[str, ...]:
    """Return the names of the providers in ``catalog``."""
    return catalog.names()


def get_plugin(name: str, catalog: ProviderCatalog = DEFAULT_CATALOG) -> ProviderPlugin:
    """Return the plugin for ``name``; UnknownProviderError when there is none."""
    return catalog.plugin(name)


def get_provider(name: str, catalog: ProviderCatalog = DEFAULT_CATALOG) -> Provider:
    """Return a new provider instance for ``name`` with default options."""
    return catalog.plugin(name).create_provider()


def discover(log: Callable[[str], None] | None = None) -> ProviderCatalog:
    """Return the built-in catalog plus every installed third-party provider plugin.

    Plugins register under the ``agentshim.providers`` entry-point group; one that fails to
    load or duplicates a name is skipped and reported through ``log``.
    """
    return _discover(DEFAULT_CATALOG, log=log)
