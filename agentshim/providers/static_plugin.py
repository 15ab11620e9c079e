"""StaticProviderPlugin: a ProviderPlugin built from a provider's static facts and functions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from agentshim.core.ids import validate_session_id
from agentshim.core.models import ModelTable
from agentshim.core.pricing import PricingTable
from agentshim.core.profile import ProviderProfile
from agentshim.core.provider import Provider
from agentshim.core.scripting import ScriptedRun
from agentshim.core.usage import TokenUsage
from agentshim.execution.executor import CommandRequest

__all__ = ["InstalledMcpReader", "ResumeFailureLines", "ScriptedLines", "StaticProviderPlugin"]


class ScriptedLines(Protocol):
    """The signature of every provider's ``scripted.scripted_lines``."""

    def __call__(
        self,
        *,
        text: str = "",
        session_id: str | None = None,
        usage: TokenUsage | None = None,
        tool_calls: Sequence[tuple[str, Mapping[str, Any], str]] = (),
        structured_output: object | None = None,
        returncode: int = 0,
    ) -> ScriptedRun:
        """Return the CLI's output for a made-up turn."""
        ...


class ResumeFailureLines(Protocol):
    """The signature of every provider's ``scripted.resume_failure_lines``."""

    def __call__(self, *, session_id: str | None = None) -> ScriptedRun:
        """Return the CLI's output for a resume of a conversation that is gone."""
        ...


InstalledMcpReader = Callable[[CommandRequest, Path], dict[str, dict[str, Any]]]
"""Reads back the MCP servers one in-flight turn installed, in the canonical shape."""


def _empty_models() -> ModelTable:
    return ModelTable()


def _empty_pricing() -> PricingTable:
    return PricingTable(version="none", date="")


@dataclass(frozen=True)
class StaticProviderPlugin:
    """A built-in provider's plugin: its facts are constants and its provider a class.

    ``resume_template`` is the resume shell line with ``{id}`` for the session id;
    ``resume_aliases`` are other spellings the CLI accepts for it (short flags, ``--flag=``,
    non-interactive subcommands), also with ``{id}``, which ``extract_resume`` recognises.
    """

    profile: ProviderProfile
    factory: Callable[[], Provider]
    scripted: ScriptedLines
    resume_failure: ResumeFailureLines
    resume_template: str
    resume_aliases: tuple[str, ...] = ()
    installed_mcp: InstalledMcpReader | None = None
    models: ModelTable = field(default_factory=_empty_models)
    pricing: PricingTable = field(default_factory=_empty_pricing)

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
        """Return the CLI's real output format for a made-up turn."""
        return self.scripted(
            text=text,
            session_id=session_id,
            usage=usage,
            tool_calls=tool_calls,
            structured_output=structured_output,
            returncode=returncode,
        )

    def resume_failure_lines(self, *, session_id: str | None = None) -> ScriptedRun:
        """Return the CLI's real output for a resume of a conversation that is gone."""
        return self.resume_failure(session_id=session_id)

    def resume_command(self, session_id: str) -> str:
        """Return the shell line that continues ``session_id`` (validated first)."""
        return self.resume_template.format(id=validate_session_id(session_id))
