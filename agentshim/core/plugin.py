"""The contract a provider catalog holds: one plugin object per provider."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from agentshim.core.models import ModelTable
from agentshim.core.pricing import PricingTable
from agentshim.core.profile import ProviderProfile
from agentshim.core.provider import Provider
from agentshim.core.scripting import ScriptedRun
from agentshim.core.usage import TokenUsage

__all__ = ["ProviderPlugin"]


@runtime_checkable
class ProviderPlugin(Protocol):
    """Everything a catalog knows about one provider, built-in or third-party.

    Built-ins answer from static facts; a third-party plugin may compute its answers.
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

    def scripted_lines(
        self,
        *,
        text: str = "",
        session_id: str | None = None,
        usage: TokenUsage | None = None,
        tool_calls: Sequence[tuple[str, Mapping[str, Any], str]] = (),
        structured_output: object | None = None,
        returncode: int = 0,
    ) -> ScriptedRun:
        """Return the CLI's real output for a made-up turn (for tests)."""
        ...

    def resume_failure_lines(self, *, session_id: str | None = None) -> ScriptedRun:
        """Return the CLI's real output for a resumed turn whose conversation is gone."""
        ...

    def resume_command(self, session_id: str) -> str:
        """Return the shell line a person would type to continue ``session_id``."""
        ...
