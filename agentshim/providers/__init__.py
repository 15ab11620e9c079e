"""The built-in provider catalog and name-based lookups.

Providers are imported lazily: ``import agentshim`` does not import any provider's parser.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentshim.core.plugin import ProviderPlugin
from agentshim.core.provider import Provider
from agentshim.core.scripting import ScriptedRun
from agentshim.core.usage import TokenUsage
from agentshim.providers.catalog import LazyPlugin, ProviderCatalog
from agentshim.providers.discovery import ENTRY_POINT_GROUP
from agentshim.providers.discovery import discover as _discover

__all__ = [
    "DEFAULT_CATALOG",
    "DEFAULT_PROVIDER",
    "ENTRY_POINT_GROUP",
    "ProviderCatalog",
    "discover",
    "get_plugin",
    "get_provider",
    "get_resume_failure_lines",
    "get_scripted_lines",
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


def provider_names(catalog: ProviderCatalog = DEFAULT_CATALOG) -> tuple[str, ...]:
    """Return the names of the providers in ``catalog``."""
    return catalog.names()


def get_plugin(name: str, catalog: ProviderCatalog = DEFAULT_CATALOG) -> ProviderPlugin:
    """Return the plugin for ``name``; UnknownProviderError when there is none."""
    return catalog.plugin(name)


def get_provider(name: str, catalog: ProviderCatalog = DEFAULT_CATALOG) -> Provider:
    """Return a new provider instance for ``name`` with default options."""
    return catalog.plugin(name).create_provider()


def get_scripted_lines(
    name: str,
    *,
    text: str = "",
    session_id: str | None = None,
    usage: TokenUsage | None = None,
    tool_calls: Sequence[tuple[str, Mapping[str, Any], str]] = (),
    structured_output: object | None = None,
    returncode: int = 0,
    catalog: ProviderCatalog = DEFAULT_CATALOG,
) -> ScriptedRun:
    """Return provider ``name``'s real output format for a made-up turn."""
    return catalog.plugin(name).scripted_lines(
        text=text,
        session_id=session_id,
        usage=usage,
        tool_calls=tool_calls,
        structured_output=structured_output,
        returncode=returncode,
    )


def get_resume_failure_lines(
    name: str, *, session_id: str | None = None, catalog: ProviderCatalog = DEFAULT_CATALOG
) -> ScriptedRun:
    """Return provider ``name``'s real output for a resume of a conversation that is gone."""
    return catalog.plugin(name).resume_failure_lines(session_id=session_id)


def discover(log: Callable[[str], None] | None = None) -> ProviderCatalog:
    """Return the built-in catalog plus every installed third-party provider plugin.

    Plugins register under the ``agentshim.providers`` entry-point group; one that fails to
    load or duplicates a name is skipped and reported through ``log``.
    """
    return _discover(DEFAULT_CATALOG, log=log)
