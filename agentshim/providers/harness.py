"""HarnessProvider: what the JSONL and text providers share, a custom command run as-is.

The prompt goes on stdin and nothing else is agreed: no model, resume or schema flags. That
poverty is what lets the command be anything (a shell script, another tool behind a wrapper).
The two harness providers differ only in how they read stdout, so only their parsers differ.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, ClassVar

from agentshim.core._checks import sequence
from agentshim.core.argv import checked_option_value
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    InvalidRequestError,
    ProviderCapabilityError,
)
from agentshim.core.profile import McpMechanism, OutputSchemaStyle, ProviderProfile
from agentshim.core.provider import ArgvContext, McpInstallation, refuse_mcp_servers

if TYPE_CHECKING:
    from agentshim.core.mcp import McpServer
    from agentshim.providers.static_plugin import StaticProviderPlugin

__all__ = ["DEFAULT_BINARY", "HarnessProvider", "harness_profile", "plugin_for_command"]

DEFAULT_BINARY = "harness"
"""The command run when none is named."""


def harness_profile(name: str, display_name: str) -> ProviderProfile:
    """A harness's capabilities: a prompt on stdin, output on stdout, nothing else."""
    return ProviderProfile(
        name=name,
        display_name=display_name,
        binary=DEFAULT_BINARY,
        supports_resume=False,
        supports_reasoning_effort=False,
        mcp=McpMechanism.NONE,
        output_schema=OutputSchemaStyle.NONE,
        schema_dialect=None,
    )


@dataclass(frozen=True, kw_only=True, eq=False)
class HarnessProvider:
    """Runs ``binary args...`` with the prompt on stdin; a subclass says how stdout is read.

    The command must exit 0 when run with ``--version`` (the health check every agent runs
    once). Messages name the harness by its profile's ``display_name``.
    """

    default_profile: ClassVar[ProviderProfile]
    """The subclass's profile, with the default command as its binary."""

    binary: str = DEFAULT_BINARY
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        owner = type(self).__name__
        checked_option_value(self.default_profile.display_name, "binary", self.binary)
        args = sequence(owner, "args", self.args, "arguments (str)")
        if not all(isinstance(arg, str) for arg in args):
            raise InvalidRequestError(
                f"{owner}.args", "holds a non-string", f"{owner}.args must be strings"
            )
        object.__setattr__(self, "args", args)

    @property
    def profile(self) -> ProviderProfile:
        """The harness's capabilities, with its command as the binary."""
        profile = self.default_profile
        return profile if self.binary == profile.binary else replace(profile, binary=self.binary)

    def build_argv(self, ctx: ArgvContext) -> list[str]:
        """Return ``[binary, *args, *extra_args]``; the prompt is never in it.

        Raises:
            ProviderCapabilityError: a model or a resume was asked for (a harness takes
                neither from agentshim).
        """
        kind = self.default_profile.display_name
        if ctx.model:
            raise ProviderCapabilityError(
                f"a {kind} takes no model from agentshim (asked for {ctx.model!r:.80}); "
                "configure the model in the harness command itself"
            )
        if ctx.resume_session_id is not None:
            raise ProviderCapabilityError(f"a {kind} cannot resume a conversation; start a new one")
        return ctx.ending([ctx.binary_path, *self.args])

    def install_mcp(self, workspace: Path | None, servers: Sequence[McpServer]) -> McpInstallation:
        """A harness takes no MCP servers from agentshim: nothing to install, servers refused.

        Raises:
            ProviderCapabilityError: ``servers`` is not empty.
        """
        return refuse_mcp_servers(
            servers,
            f"a {self.default_profile.display_name} takes no MCP servers",
            "configure them in the harness",
        )

    def classify_exit(self, error: CliExitError, *, resumed: bool) -> AgentShimError:
        """The failure as it is: a harness says nothing agentshim could refine."""
        return error


def plugin_for_command(
    plugin: StaticProviderPlugin,
    provider_class: type[HarnessProvider],
    binary: str,
    args: Sequence[str],
) -> StaticProviderPlugin:
    """``plugin`` with ``provider_class(binary=binary, args=args)`` as its provider and profile."""
    provider = provider_class(binary=binary, args=tuple(args))
    return replace(plugin, profile=provider.profile, factory=lambda: provider)
