"""The contract a provider catalog holds: one plugin object per provider."""

from __future__ import annotations

from typing import Protocol, runtime_checkable

from agentshim.core.models import ModelTable
from agentshim.core.pricing import PricingTable
from agentshim.core.profile import ProviderProfile
from agentshim.core.provider import Provider

__all__ = ["ProviderPlugin"]


@runtime_checkable
class ProviderPlugin(Protocol):
    """Everything a catalog needs to know about one provider, built-in or third-party.

    Built-ins answer from static facts; a third-party plugin may compute its answers. A plugin
    may also carry a ``test_kit`` (``agentshim.testing.ProviderTestKit``): its CLI's real
    output for made-up turns, which ``agentshim.testing.scripted_turn`` prints. It is
    optional; a plugin without one registers and runs turns all the same. A plugin may also
    carry ``transports``: a mapping from each long-lived ``TransportKind`` it offers to a
    factory of that transport (see ``agentshim.transport.installed.TransportFactory``);
    ``TransportKind.ONE_SHOT`` is offered by every provider.
    """

    @property
    def name(self) -> str:
        """The provider's name, as passed to ``CliAgent(name)``."""
        ...

    @property
    def profile(self) -> ProviderProfile:
        """The provider's static capabilities."""
        ...

    def create_provider(self) -> Provider:
        """Return a new provider with default options."""
        ...

    def model_table(self) -> ModelTable:
        """Return the models this provider knows (may be empty)."""
        ...

    def pricing_table(self) -> PricingTable:
        """Return the prices this provider knows (may be empty)."""
        ...

    def resume_command(self, session_id: str) -> str:
        """Return the shell line a person would type to continue ``session_id``."""
        ...
