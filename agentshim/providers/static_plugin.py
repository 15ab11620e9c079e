"""StaticProviderPlugin: a ProviderPlugin built from a provider's static facts and functions."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentshim.core.conversation import TransportKind
from agentshim.core.ids import validate_session_id
from agentshim.core.models import ModelTable
from agentshim.core.pricing import PricingTable
from agentshim.core.profile import ProviderProfile
from agentshim.core.provider import Provider
from agentshim.core.scripting import ScriptedRun, ScriptedTurn
from agentshim.execution.executor import CommandRequest
from agentshim.transport.installed import TransportFactory

__all__ = [
    "InstalledMcpReader",
    "ResumeFailureLines",
    "ScriptedLines",
    "StaticProviderPlugin",
    "StaticTestKit",
    "builtin_plugin",
]

ScriptedLines = Callable[[ScriptedTurn], ScriptedRun]
"""The signature of every provider's ``scripted.scripted_lines``."""


class ResumeFailureLines(Protocol):
    """The signature of every provider's ``scripted.resume_failure_lines``."""

    def __call__(self, *, session_id: str | None = None) -> ScriptedRun:
        """Return the CLI's output for a resume of a conversation that is gone."""
        ...


InstalledMcpReader = Callable[[CommandRequest, Path], dict[str, dict[str, Any]]]
"""Reads back the MCP servers one in-flight turn installed, in the canonical shape."""


@dataclass(frozen=True, slots=True)
class StaticTestKit:
    """A built-in provider's test kit: the functions of its ``scripted.py`` and ``testing.py``.

    Each field is named for the ``agentshim.testing.ProviderTestKit`` method it provides.
    """

    scripted_lines: ScriptedLines
    resume_failure_lines: ResumeFailureLines
    installed_mcp_servers: InstalledMcpReader


def _empty_models() -> ModelTable:
    return ModelTable()


def _empty_pricing() -> PricingTable:
    return PricingTable(version="none", date="")


def _no_transports() -> dict[TransportKind, TransportFactory]:
    return {}


@dataclass(frozen=True)
class StaticProviderPlugin:
    """A built-in provider's plugin: its facts are constants and its provider a class.

    ``resume_template`` is the resume shell line with ``{id}`` for the session id;
    ``resume_aliases`` are other spellings the CLI accepts for it (short flags, ``--flag=``,
    non-interactive subcommands), also with ``{id}``, which ``extract_resume`` recognises.
    ``test_kit`` prints the CLI's real output for made-up turns (None: the provider has none).
    ``transports`` builds the long-lived transports the provider offers, by kind; every
    provider also offers ``TransportKind.ONE_SHOT``, which needs no factory.
    """

    profile: ProviderProfile
    factory: Callable[[], Provider]
    resume_template: str
    resume_aliases: tuple[str, ...] = ()
    models: ModelTable = field(default_factory=_empty_models)
    pricing: PricingTable = field(default_factory=_empty_pricing)
    test_kit: StaticTestKit | None = None
    transports: Mapping[TransportKind, TransportFactory] = field(default_factory=_no_transports)

    @property
    def name(self) -> str:
        """The provider's name (the profile's)."""
        return self.profile.name

    def create_provider(self) -> Provider:
        """Return a new provider with default options."""
        return self.factory()

    def model_table(self) -> ModelTable:
        """Return the provider's model facts."""
        return self.models

    def pricing_table(self) -> PricingTable:
        """Return the provider's prices."""
        return self.pricing

    def resume_command(self, session_id: str) -> str:
        """Return the shell line that continues ``session_id`` (validated first)."""
        return self.resume_template.format(id=validate_session_id(session_id))


def builtin_plugin(
    module: str,
    factory: Callable[[], Provider],
    *,
    transports: Mapping[TransportKind, TransportFactory] | None = None,
) -> StaticProviderPlugin:
    """Return the plugin of the built-in provider whose ``plugin`` module is ``module``.

    Every built-in provider package has the same files with the same names inside (the
    conventions test pins them), so all but the provider class is read from there:
    ``provider.PROFILE``, ``RESUME_TEMPLATE`` and ``RESUME_ALIASES``,
    ``model_data.MODEL_TABLE`` and ``PRICING_TABLE``, and the test kit from ``scripted`` and
    ``testing``.
    """
    package = module.rpartition(".")[0]

    def sibling(name: str) -> Any:
        return importlib.import_module(f"{package}.{name}")

    provider, model_data = sibling("provider"), sibling("model_data")
    scripted, testing = sibling("scripted"), sibling("testing")
    return StaticProviderPlugin(
        profile=provider.PROFILE,
        factory=factory,
        resume_template=provider.RESUME_TEMPLATE,
        resume_aliases=provider.RESUME_ALIASES,
        models=model_data.MODEL_TABLE,
        pricing=model_data.PRICING_TABLE,
        test_kit=StaticTestKit(
            scripted.scripted_lines, scripted.resume_failure_lines, testing.installed_mcp_servers
        ),
        transports=dict(transports or {}),
    )
