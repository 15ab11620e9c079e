"""PiProvider: argv, environment defaults and failure classification for Pi.

The prompt goes on stdin: in print mode Pi reads piped stdin and merges it into the initial
prompt (the recordings pass nothing else), so it never appears in argv.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import TYPE_CHECKING, ClassVar

from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    ProviderCapabilityError,
)
from agentshim.core.events import Emit
from agentshim.core.exit_errors import as_resume_failure, resume_missing_line
from agentshim.core.profile import ProviderProfile
from agentshim.core.provider import ArgvContext, McpInstallation, refuse_mcp_servers
from agentshim.core.turn_flags import model_flag, resume_flag
from agentshim.tools.local import LocalToolServer

from .parser import PROVIDER_NAME, PiStreamParser
from .tools import tool_extension

if TYPE_CHECKING:
    from agentshim.core.mcp import McpServer

__all__ = [
    "PROFILE",
    "RESUME_ALIASES",
    "RESUME_MISSING_TEXT",
    "RESUME_TEMPLATE",
    "THINKING_LEVELS",
    "PiProvider",
]

RESUME_MISSING_TEXT = "No session found matching"
"""What Pi prints on stderr (exit 1) when ``--session`` names no session it has."""

SESSION_FLAG = "--session"
FORK_FLAG = "--fork"

THINKING_LEVELS = ("off", "minimal", "low", "medium", "high", "xhigh", "max")
"""The levels ``pi --thinking`` accepts; ``max`` is Pi 1.x's (0.73 warns and ignores it)."""

RESUME_TEMPLATE = "pi --session {id}"
"""The shell line that continues a Pi conversation, with ``{id}`` for its session id."""
# No aliases: pi knows only `--session <id>`; its `-r` opens a picker.
RESUME_ALIASES: tuple[str, ...] = ()
"""Other spellings of the resume line Pi accepts, which ``extract_resume`` recognises."""

PROFILE = ProviderProfile(
    name=PROVIDER_NAME,
    display_name="Pi",
    supports_resume=True,
    supports_fork=True,
    supports_reasoning_effort=True,
    state_dirs=(".pi/agent",),
    auth_env_vars=(
        "ANTHROPIC_API_KEY",
        "OPENAI_API_KEY",
        "AZURE_OPENAI_API_KEY",
        "GEMINI_API_KEY",
        "DEEPSEEK_API_KEY",
        "MISTRAL_API_KEY",
        "GROQ_API_KEY",
        "CEREBRAS_API_KEY",
        "XAI_API_KEY",
        "OPENROUTER_API_KEY",
        "AI_GATEWAY_API_KEY",
        "ZAI_API_KEY",
        "OPENCODE_API_KEY",
        "FIREWORKS_API_KEY",
        "KIMI_API_KEY",
        "MINIMAX_API_KEY",
    ),
    skill_dirs=(".pi/skills", ".agents/skills"),
    container_install=("npm install -g @mariozechner/pi-coding-agent",),
    state_root_env="PI_CODING_AGENT_DIR",
    auth_files=(".pi/agent/auth.json",),
    credential_files=(".pi/agent/auth.json",),
    resume_state_paths=(".pi/agent/sessions",),
)
"""Pi's capabilities (checked against 0.73.1 and its documentation)."""


@dataclass(frozen=True, kw_only=True, eq=False)
class PiProvider:
    """Runs ``pi --print --mode json ...`` with the prompt on stdin.

    ``provider`` is passed as ``--provider`` (Pi's model provider, e.g. ``anthropic``; None
    for Pi's configured default); ``short_session_ids`` makes fresh turns report the
    8-character short session id (see ``parser.short_session_id`` for why that is off by
    default). The options are fixed for the provider's lifetime.

    ``env_defaults`` (``NO_COLOR=1``, ``CI=1``, what the Untether project's Pi runner sets) keep colour codes
    and interactive behaviour out of the output. ``CliAgent`` adds them to its environment
    wherever the caller's env does not set the variable; a caller driving the provider another
    way merges them itself.
    """

    env_defaults: ClassVar[Mapping[str, str]] = MappingProxyType({"NO_COLOR": "1", "CI": "1"})

    provider: str | None = None
    short_session_ids: bool = False

    profile = PROFILE
    """Pi's static capabilities."""

    def build_argv(self, ctx: ArgvContext) -> list[str]:
        """Return the turn's argv; the prompt is never in it.

        ``pi --print --mode json`` and :meth:`conversation_flags`, then ``extra``.

        Raises:
            InvalidSessionIdError: the resume id is not safe to pass (paths are refused too).
            ProviderCapabilityError: an unknown thinking level.
        """
        argv = [ctx.binary_path, "--print", "--mode", "json"]
        argv += self.conversation_flags(ctx)
        return ctx.ending(argv)

    def conversation_flags(self, ctx: ArgvContext) -> list[str]:
        """``[--provider P] [--model M] [--thinking L] [(--session | --fork) <id>]``.

        ``ctx.fork_session`` makes the resumed id ``--fork``: Pi copies that session's history
        into a new session with a new id.

        Raises:
            InvalidSessionIdError: the resume id is not safe to pass (paths are refused too).
            ProviderCapabilityError: an unknown thinking level.
        """
        flags: list[str] = []
        if self.provider:
            flags += ["--provider", self.provider]
        flags += model_flag("Pi", ctx)
        if ctx.reasoning_effort is not None:
            if ctx.reasoning_effort not in THINKING_LEVELS:
                raise ProviderCapabilityError(
                    f"Pi has no thinking level {ctx.reasoning_effort!r}; use one of "
                    + ", ".join(THINKING_LEVELS)
                )
            flags += ["--thinking", ctx.reasoning_effort]
        flags += resume_flag(FORK_FLAG if ctx.fork_session else SESSION_FLAG, ctx)
        return flags

    def new_parser(self, emit: Emit, *, expect_structured: bool) -> PiStreamParser:
        """Return a fresh parser for one turn (the CLI takes no output schema)."""
        return PiStreamParser(emit, short_session_ids=self.short_session_ids)

    def install_tools(self, serving: LocalToolServer) -> McpInstallation:
        """Give the turn ``serving``'s tools as a generated extension (``-e``); see .tools."""
        return tool_extension(serving)

    def install_mcp(self, workspace: Path | None, servers: Sequence[McpServer]) -> McpInstallation:
        """MCP servers are not passed to Pi: nothing to install, and servers are refused.

        Pi 0.73 has no MCP. Pi 1.x has it built in, but reads servers only from its own
        ``mcp.json`` files (``~/.pi/agent/mcp.json``, and ``.pi/mcp.json`` of a project
        trusted with ``--approve``), with no per-run flag, so agentshim cannot give one turn
        its servers without changing the user's or the project's configuration.

        Raises:
            ProviderCapabilityError: ``servers`` is not empty.
        """
        return refuse_mcp_servers(
            servers,
            "agentshim does not pass MCP servers to Pi",
            "drop mcp_servers, add the tools as a Pi extension, or (Pi 1.x) configure the "
            "servers in Pi's own ~/.pi/agent/mcp.json",
        )

    def classify_exit(self, error: CliExitError, *, resumed: bool) -> AgentShimError:
        """Return SessionResumeError only when Pi said the resumed session does not exist.

        Any other failure keeps its kind and detail (Pi exits 0 on API errors, so those arrive
        here classified by the parser).
        """
        if resumed and resume_missing_line(RESUME_MISSING_TEXT, error.stderr, error.detail):
            return as_resume_failure(error, session_id=resumed_session_id(error.argv))
        return error


def resumed_session_id(argv: Sequence[str]) -> str | None:
    """The session a Pi argv resumes or forks (``--session <id>``, ``--fork=<id>``...), if any."""
    found: str | None = None
    args = list(argv)
    for index, arg in enumerate(args):
        for flag in (SESSION_FLAG, FORK_FLAG):
            if arg.startswith(flag + "="):
                found = arg[len(flag) + 1 :]
            elif arg == flag and index + 1 < len(args):
                found = args[index + 1]
    return found
