"""ProviderCatalog: an immutable set of provider plugins, resolved lazily by name."""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import cast

from agentshim.core.conversation import TransportKind
from agentshim.core.errors import InvalidRequestError, UnknownProviderError
from agentshim.core.plugin import ProviderPlugin
from agentshim.transport.installed import TransportFactory

__all__ = ["LazyPlugin", "ProviderCatalog", "transport_factories", "transports_offered"]


@dataclass(frozen=True, slots=True)
class LazyPlugin:
    """A plugin named by ``module:attribute``, imported the first time it is asked for.

    Keeps ``import agentshim`` from importing every provider's parser and tables.
    """

    name: str
    target: str

    def load(self) -> ProviderPlugin:
        """Import the module and return the plugin object it names."""
        module_name, _, attribute = self.target.partition(":")
        module = importlib.import_module(module_name)
        plugin = getattr(module, attribute or "PLUGIN")
        if not isinstance(plugin, ProviderPlugin):
            raise InvalidRequestError(
                "plugin",
                f"{self.target} is not a ProviderPlugin",
                f"{self.target} is not a ProviderPlugin; point the entry point at a plugin object",
            )
        if plugin.name != self.name:
            raise InvalidRequestError(
                "plugin",
                f"{self.target} declares provider {plugin.name!r}, not {self.name!r}",
                f"{self.target} declares provider {plugin.name!r}, not {self.name!r}; register "
                "it under the name its profile gives",
            )
        return plugin


CatalogEntry = ProviderPlugin | LazyPlugin


class ProviderCatalog:
    """An immutable mapping of provider names to plugins.

    ``with_plugin`` returns a new catalog; the original never changes. A duplicate name is a
    InvalidRequestError (a ValueError), so a third-party plugin cannot silently shadow a
    built-in.
    """

    __slots__ = ("_entries",)

    def __init__(self, entries: Mapping[str, CatalogEntry] | None = None) -> None:
        self._entries: Mapping[str, CatalogEntry] = MappingProxyType(dict(entries or {}))
        for name, entry in self._entries.items():
            if entry.name != name:
                raise InvalidRequestError(
                    "entries", f"catalog key {name!r} holds provider {entry.name!r}"
                )

    def with_plugin(self, plugin: CatalogEntry) -> ProviderCatalog:
        """Return a new catalog that also holds ``plugin``; InvalidRequestError if the name is taken."""
        if plugin.name in self._entries:
            raise InvalidRequestError(
                "plugin",
                f"provider {plugin.name!r} is already in the catalog",
                f"provider {plugin.name!r} is already in the catalog; a plugin cannot replace "
                "another, so give it a name of its own",
            )
        return ProviderCatalog({**self._entries, plugin.name: plugin})

    def names(self) -> tuple[str, ...]:
        """Return the provider names, in the order they were added."""
        return tuple(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def plugin(self, name: str) -> ProviderPlugin:
        """Return the plugin for ``name`` (importing it if needed); UnknownProviderError if absent."""
        entry = self._entries.get(name)
        if entry is None:
            raise UnknownProviderError(name, self.names())
        if isinstance(entry, LazyPlugin):
            return entry.load()
        return entry

    def __repr__(self) -> str:
        return f"ProviderCatalog({list(self._entries)!r})"


def transport_factories(plugin: ProviderPlugin) -> Mapping[TransportKind, TransportFactory]:
    """The long-lived transports ``plugin`` offers, by kind (its optional ``transports``)."""
    declared: object = getattr(plugin, "transports", None)
    if not isinstance(declared, Mapping):
        return {}
    factories: dict[TransportKind, TransportFactory] = {}
    for kind, factory in cast("Mapping[object, object]", declared).items():
        if (
            isinstance(kind, TransportKind)
            and kind is not TransportKind.ONE_SHOT
            and callable(factory)
        ):
            factories[kind] = cast("TransportFactory", factory)
    return factories


def one_shot_over(plugin: ProviderPlugin) -> TransportKind | None:
    """The long-lived kind whose conversations ``plugin``'s one-shot turns open and close.

    None (the usual case) when its one-shot turns are runs of its CLI. A plugin of an agent
    with no one-turn command (an ACP agent) names the kind in its optional ``one_shot_over``.
    """
    kind: object = getattr(plugin, "one_shot_over", None)
    if isinstance(kind, TransportKind) and kind in transport_factories(plugin):
        return kind
    return None


def transports_offered(plugin: ProviderPlugin) -> tuple[TransportKind, ...]:
    """Every transport kind ``plugin``'s provider runs on: one-shot first, then its own."""
    return (TransportKind.ONE_SHOT, *transport_factories(plugin))
