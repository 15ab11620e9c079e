"""Any agent that speaks the Agent Client Protocol, named by its command line.

``AcpAgentConfig`` describes it, ``acp_plugin`` makes its plugin (for a catalog, or an
entry point), and ``acp_catalog`` puts it beside the built-in providers, ready for
``Agent(name, catalog=...)``. See docs/acp.md.
"""

from __future__ import annotations

from agentshim.acp.clientside import AcpClientMethods
from agentshim.providers.catalog import ProviderCatalog

from .config import AcpAgentConfig
from .plugin import AcpPlugin, acp_plugin
from .provider import AcpProvider

__all__ = [
    "AcpAgentConfig",
    "AcpClientMethods",
    "AcpPlugin",
    "AcpProvider",
    "acp_catalog",
    "acp_plugin",
]


def acp_catalog(*configs: AcpAgentConfig, base: ProviderCatalog | None = None) -> ProviderCatalog:
    """``base`` (the built-in providers by default) with a plugin for each of ``configs``."""
    from agentshim.providers import DEFAULT_CATALOG

    catalog = DEFAULT_CATALOG if base is None else base
    for config in configs:
        catalog = catalog.with_plugin(acp_plugin(config))
    return catalog
