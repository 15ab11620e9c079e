"""The plugin of an ACP agent named by its command line: ``acp_plugin(AcpAgentConfig(...))``.

Its transports are the ACP client: ``TransportKind.LONG_LIVED`` keeps one agent process per
conversation, and ``TransportKind.ONE_SHOT`` opens a conversation for each turn and closes it
after. Put it in a catalog (``DEFAULT_CATALOG.with_plugin(plugin)``) to build an ``Agent``
with it, or register it under the ``agentshim.providers`` entry-point group.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from agentshim.acp.client import AcpTransport
from agentshim.core.conversation import TransportKind
from agentshim.core.ids import validate_session_id
from agentshim.core.models import ModelSpec, ModelTable
from agentshim.core.pricing import PricingTable
from agentshim.core.profile import ProviderProfile
from agentshim.core.provider import Provider
from agentshim.transport.installed import InstalledCli, TransportFactory

from .config import AcpAgentConfig
from .provider import AcpProvider

__all__ = ["AcpPlugin", "acp_plugin"]


@dataclass(frozen=True)
class AcpPlugin:
    """The ProviderPlugin of one ACP agent (see the module docstring).

    ``one_shot_over`` names the long-lived transport whose conversations one-shot turns open
    and close: ``Agent`` builds its one-shot transport from it.
    """

    config: AcpAgentConfig
    transports: Mapping[TransportKind, TransportFactory] = field(init=False)
    one_shot_over: TransportKind = field(init=False, default=TransportKind.LONG_LIVED)

    def __post_init__(self) -> None:
        object.__setattr__(self, "transports", {TransportKind.LONG_LIVED: self._transport})

    def _transport(self, context: Callable[[], InstalledCli]) -> AcpTransport:
        return AcpTransport(context, self.config.dialect(), client=self.config.client)

    @property
    def name(self) -> str:
        """The provider name the config gives."""
        return self.config.name

    @property
    def profile(self) -> ProviderProfile:
        """The agent's capabilities (see ``AcpAgentConfig.profile``)."""
        return self.config.profile()

    def create_provider(self) -> Provider:
        """The agent's Provider (health check and readiness; turns go through Agent)."""
        return AcpProvider(profile=self.profile, checks_version=self.config.version_check)

    def model_table(self) -> ModelTable:
        """The models the config names, with nothing else known of them."""
        return ModelTable(
            tuple(ModelSpec(model, source="AcpAgentConfig") for model in self.config.models)
        )

    def pricing_table(self) -> PricingTable:
        """No prices: an unknown agent's cost is what it reports."""
        return PricingTable(version="none", date="")

    def resume_command(self, session_id: str) -> str:
        """The agent's command line: ACP sessions are reopened in band, not by a flag."""
        validate_session_id(session_id)
        return " ".join(self.config.words)


def acp_plugin(config: AcpAgentConfig) -> AcpPlugin:
    """The plugin of the agent ``config`` describes."""
    return AcpPlugin(config)
