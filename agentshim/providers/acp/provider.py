"""AcpProvider: the Provider of an agent that runs every turn over ACP.

An ACP agent has no command that runs one turn and prints it: its one-shot turns are
conversations opened, prompted once and closed
(:class:`~agentshim.transport.per_turn.PerTurnTransport`). What the one-shot machinery still
asks of a provider is its binary's health check and readiness; a CliAgent run of it is
refused with a message that says how to run it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import NoReturn

from agentshim.core.errors import AgentShimError, CliExitError, ProviderCapabilityError
from agentshim.core.events import Emit
from agentshim.core.mcp import McpServer
from agentshim.core.profile import ProviderProfile
from agentshim.core.provider import ArgvContext, McpInstallation, NoMcpInstallation, StreamParser

__all__ = ["AcpProvider"]


@dataclass(frozen=True, kw_only=True, eq=False)
class AcpProvider:
    """The Provider of one ACP agent; its turns run through ``Agent``, never a CliAgent.

    ``checks_version`` False (the default) skips the ``--version`` health check: many ACP
    agents and adapters answer it with an error; ``agentshim doctor --acp`` checks
    ``initialize`` instead.
    """

    profile: ProviderProfile
    checks_version: bool = False

    def _refuse(self) -> NoReturn:
        name = self.profile.name
        raise ProviderCapabilityError(
            f"{self.profile.display_name} speaks ACP and has no one-turn command; run it "
            f"through Agent({name!r}, ...) (any transport kind) instead of CliAgent"
        )

    def build_argv(self, ctx: ArgvContext) -> list[str]:
        """Refused: an ACP agent's turns are conversations, see the module docstring."""
        del ctx
        self._refuse()

    def new_parser(self, emit: Emit, *, expect_structured: bool) -> StreamParser:
        """Refused: an ACP agent's output is read by the ACP client, not a parser."""
        del emit, expect_structured
        self._refuse()

    def install_mcp(self, workspace: Path | None, servers: Sequence[McpServer]) -> McpInstallation:
        """Nothing to install: MCP servers go to the agent in ``session/new``."""
        del workspace, servers
        return NoMcpInstallation()

    def classify_exit(self, error: CliExitError, *, resumed: bool) -> AgentShimError:
        """The failure as it is."""
        del resumed
        return error
