"""JsonlProvider: runs a custom harness command that prints agentshim's vocabulary as JSONL.

The prompt goes on stdin and nothing else is agreed: no model, resume or schema flags. That
poverty is what lets the command be anything (a shell script, another tool behind a wrapper).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING

from agentshim.core._checks import sequence
from agentshim.core.argv import checked_option_value
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    InvalidRequestError,
    ProviderCapabilityError,
)
from agentshim.core.profile import McpMechanism, OutputSchemaStyle, ProviderProfile
from agentshim.core.provider import ArgvContext, McpInstallation, NoMcpInstallation

from .parser import JsonlStreamParser

if TYPE_CHECKING:
    from agentshim.core.events import AgentEvent
    from agentshim.core.mcp import McpServer

__all__ = ["DEFAULT_BINARY", "PROFILE", "RESUME_ALIASES", "RESUME_TEMPLATE", "JsonlProvider"]

DEFAULT_BINARY = "harness"
"""The command run when none is named."""

RESUME_TEMPLATE = ""
"""Empty: a harness has no agreed way to continue a conversation."""
RESUME_ALIASES: tuple[str, ...] = ()

PROFILE = ProviderProfile(
    name="jsonl",
    display_name="JSONL harness",
    binary=DEFAULT_BINARY,
    supports_resume=False,
    supports_reasoning_effort=False,
    mcp=McpMechanism.NONE,
    output_schema=OutputSchemaStyle.NONE,
    schema_dialect=None,
)
"""A harness's capabilities: a prompt on stdin, events on stdout, nothing else."""


@dataclass(frozen=True, kw_only=True, eq=False)
class JsonlProvider:
    """Runs ``binary args...`` with the prompt on stdin and reads its stdout as stored events.

    Each stdout line that is an object of the vocabulary (``docs/context-and-usage.md``,
    "Stored events") is that event; any other line is RawOutput. The command must exit 0 when
    run with ``--version`` (the health check every agent runs once).
    """

    binary: str = DEFAULT_BINARY
    args: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        checked_option_value("JSONL harness", "binary", self.binary)
        args = sequence("JsonlProvider", "args", self.args, "arguments (str)")
        if not all(isinstance(arg, str) for arg in args):
            raise InvalidRequestError(
                "JsonlProvider.args", "holds a non-string", "JsonlProvider.args must be strings"
            )
        object.__setattr__(self, "args", args)

    @property
    def profile(self) -> ProviderProfile:
        """The harness's capabilities, with its command as the binary."""
        return PROFILE if self.binary == PROFILE.binary else replace(PROFILE, binary=self.binary)

    def build_argv(self, ctx: ArgvContext) -> list[str]:
        """Return ``[binary, *args, *extra_args]``; the prompt is never in it.

        Raises:
            ProviderCapabilityError: a model or a resume was asked for (a harness takes
                neither from agentshim).
        """
        if ctx.model:
            raise ProviderCapabilityError(
                f"a JSONL harness takes no model from agentshim (asked for {ctx.model!r:.80}); "
                "configure the model in the harness command itself"
            )
        if ctx.resume_session_id is not None:
            raise ProviderCapabilityError(
                "a JSONL harness cannot resume a conversation; start a new one"
            )
        return ctx.ending([ctx.binary_path, *self.args])

    def new_parser(
        self, emit: Callable[[AgentEvent], None], *, expect_structured: bool
    ) -> JsonlStreamParser:
        """Return a fresh parser for one turn."""
        return JsonlStreamParser(emit)

    def install_mcp(self, workspace: Path | None, servers: Sequence[McpServer]) -> McpInstallation:
        """A harness takes no MCP servers from agentshim: nothing to install, servers refused.

        Raises:
            ProviderCapabilityError: ``servers`` is not empty.
        """
        if servers:
            names = ", ".join(server.name for server in servers)
            raise ProviderCapabilityError(
                f"a JSONL harness takes no MCP servers ({names}); configure them in the harness"
            )
        return NoMcpInstallation()

    def classify_exit(self, error: CliExitError, *, resumed: bool) -> AgentShimError:
        """The failure as it is: a harness says nothing agentshim could refine."""
        return error
