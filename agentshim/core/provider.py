"""The seam every provider implements: argv, stream parsing, MCP install, exit classification."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    ProviderCapabilityError,
)
from agentshim.core.events import Emit
from agentshim.core.profile import ProviderProfile
from agentshim.core.turn import ParsedTurn
from agentshim.core.usage import ProviderUsage

if TYPE_CHECKING:
    from agentshim.core.mcp import McpServer

__all__ = [
    "ArgvContext",
    "ContextualStreamParser",
    "McpInstallation",
    "NoMcpInstallation",
    "ParserContext",
    "Provider",
    "StreamParser",
    "mcp_env",
    "mcp_env_defaults",
    "refuse_mcp_servers",
]


@dataclass(frozen=True, slots=True)
class ParserContext:
    """Invocation facts a contextual parser may need before it reads anything."""

    previous_usage: ProviderUsage | None = None
    resumed: bool = False
    requested_session_id: str | None = None
    model: str | None = None


@runtime_checkable
class StreamParser(Protocol):
    """Consumes one turn's output line by line and summarizes it."""

    def feed_stdout(self, line: str) -> None:
        """Take one stdout line (with or without its newline); never raises on bad input."""
        ...

    def feed_stderr(self, line: str) -> None:
        """Take one stderr line."""
        ...

    def finish(self) -> ParsedTurn:
        """Summarize everything fed so far."""
        ...


@runtime_checkable
class ContextualStreamParser(StreamParser, Protocol):
    """A parser that wants invocation context before streaming (optional)."""

    def configure(self, context: ParserContext) -> None:
        """Receive the context; called once, before the first line."""
        ...


@runtime_checkable
class McpInstallation(Protocol):
    """MCP servers installed for one turn: flags to add, and how to undo it.

    An installation may also have an ``env`` mapping: variables the CLI's environment must
    carry for its servers (a secret passed by name, never in argv). CliAgent adds them to the
    turn's environment, and refuses the turn when the environment already sets one of them to
    another value (see :func:`mcp_env`). And it may have an ``env_defaults`` mapping:
    variables the CLI should see for a turn with these servers unless the environment sets
    them already, as the caller's choice (see :func:`mcp_env_defaults`).
    """

    @property
    def argv(self) -> Sequence[str]:
        """Flags to append to argv (CLI_FLAGS providers), else empty."""
        ...

    def restore(self) -> str | None:
        """Undo the install; idempotent, never raises; returns a note worth logging, if any."""
        ...


def mcp_env(installation: McpInstallation) -> Mapping[str, str]:
    """The variables ``installation`` needs in the CLI's environment (empty when it has none)."""
    env: object = getattr(installation, "env", None)
    return env if isinstance(env, Mapping) else {}  # pyright: ignore[reportUnknownVariableType]


def mcp_env_defaults(installation: McpInstallation) -> Mapping[str, str]:
    """The variables ``installation`` sets where the env has none (empty when it has none)."""
    env: object = getattr(installation, "env_defaults", None)
    return env if isinstance(env, Mapping) else {}  # pyright: ignore[reportUnknownVariableType]


@dataclass(frozen=True, slots=True)
class NoMcpInstallation:
    """An installation that wrote nothing: no servers, or flags (and env) only."""

    argv: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])

    def restore(self) -> str | None:
        """Nothing to undo."""
        return None


def refuse_mcp_servers(servers: Sequence[McpServer], refusal: str, advice: str) -> McpInstallation:
    """The ``install_mcp`` of a provider that takes no MCP servers: nothing to install.

    Raises:
        ProviderCapabilityError: ``servers`` is not empty; the message is ``refusal``, the
            servers' names, then ``advice``.
    """
    if servers:
        names = ", ".join(server.name for server in servers)
        raise ProviderCapabilityError(f"{refusal} ({names}); {advice}")
    return NoMcpInstallation()


@dataclass(frozen=True, slots=True)
class ArgvContext:
    """Everything a provider needs to build one turn's argv. The prompt is not here: stdin only."""

    binary_path: str
    model: str | None = None
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    resume_session_id: str | None = None
    reasoning_effort: str | None = None
    schema_inline: str | None = None
    schema_path: str | None = None
    mcp_argv: Sequence[str] = ()
    extra_args: Sequence[str] = ()
    cwd: str | None = None
    fork_session: bool = False
    """Start a new conversation from ``resume_session_id``'s history (profile.supports_fork)."""

    def ending(self, argv: list[str]) -> list[str]:
        """``argv`` followed by ``mcp_argv`` and then ``extra_args``, the end of a turn's argv.

        The caller's extra args come last so they can override what came before.
        """
        return [*argv, *self.mcp_argv, *self.extra_args]


@runtime_checkable
class Provider(Protocol):
    """One agent CLI: how to invoke it and how to read what it prints."""

    @property
    def profile(self) -> ProviderProfile:
        """The CLI's static capabilities."""
        ...

    def build_argv(self, ctx: ArgvContext) -> list[str]:
        """Return the full argv for one turn (never containing the prompt).

        ``ctx`` never asks for what the profile does not declare (an output schema, a
        reasoning effort): the agent refuses such a request before building argv.
        """
        ...

    def new_parser(self, emit: Emit, *, expect_structured: bool) -> StreamParser:
        """Return a fresh parser that emits events through ``emit``."""
        ...

    def install_mcp(self, workspace: Path | None, servers: Sequence[McpServer]) -> McpInstallation:
        """Make ``servers`` available to the next turn; raise McpConfigError if it cannot."""
        ...

    def classify_exit(self, error: CliExitError, *, resumed: bool) -> AgentShimError:
        """Turn a failed run into the most specific error (e.g. SessionResumeError)."""
        ...
