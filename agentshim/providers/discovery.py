"""Third-party providers: plugins registered under the ``agentshim.providers`` entry-point group."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from agentshim.core.plugin import ProviderPlugin
from agentshim.providers.catalog import ProviderCatalog

if TYPE_CHECKING:
    from importlib.metadata import EntryPoint

__all__ = ["ENTRY_POINT_GROUP", "discover"]

ENTRY_POINT_GROUP = "agentshim.providers"
"""The entry-point group a distribution declares its ProviderPlugin objects under."""


def _ignore(_: str) -> None:
    """Drop a log line."""


def discover(
    base: ProviderCatalog,
    *,
    log: Callable[[str], None] | None = None,
    found: Iterable[EntryPoint] | None = None,
) -> ProviderCatalog:
    """Return ``base`` plus every installed plugin of the ``agentshim.providers`` group.

    A plugin that fails to load, is not a ProviderPlugin, or reuses a name already in the
    catalog is skipped and reported through ``log``; ``base`` itself never changes.
    ``found`` replaces the installed entry points (for tests).
    """
    report = log or _ignore
    catalog = base
    if found is None:
        # importlib.metadata is slow to import; only discovery needs it.
        from importlib.metadata import entry_points

        found = entry_points(group=ENTRY_POINT_GROUP)
    points = list(found)
    for point in points:
        try:
            plugin = point.load()
        except Exception as error:  # a broken third-party package must not break discovery
            report(f"agentshim: skipped provider plugin {point.name!r}: it failed to load: {error}")
            continue
        if not isinstance(plugin, ProviderPlugin):
            report(
                f"agentshim: skipped provider plugin {point.name!r}: {point.value} is not a "
                "ProviderPlugin"
            )
            continue
        if plugin.name in catalog:
            report(
                f"agentshim: skipped provider plugin {point.name!r}: a provider named "
                f"{plugin.name!r} is already in the catalog"
            )
            continue
        catalog = catalog.with_plugin(plugin)
    return catalog
