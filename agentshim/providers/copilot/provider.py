"""CopilotProvider: argv, MCP flags and failure classification for GitHub Copilot CLI.

The prompt goes on stdin: Copilot CLI 1.0.102 reads piped stdin as the prompt when no
``-p``/``--prompt`` is given (checked against the real binary: the ``user.message`` frame
carries the stdin text), so it never appears in argv.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from agentshim.core.argv import checked_option_value
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    ProviderCapabilityError,
)
from agentshim.core.exit_errors import as_resume_failure
from agentshim.core.ids import validate_session_id
from agentshim.core.mcp import HttpMcpServer, McpServer, StdioMcpServer
from agentshim.core.profile import McpMechanism, OutputSchemaStyle, ProviderProfile
from agentshim.core.provider import ArgvContext, McpInstallation, NoMcpInstallation

from .parser import CopilotStreamParser

if TYPE_CHECKING:
    from agentshim.core.events import AgentEvent

__all__ = [
    "MCP_FLAG",
    "MISSING_SESSION_TEXT",
    "PROFILE",
    "CopilotProvider",
    "mcp_entry",
    "parse_mcp_servers",
    "render_mcp_config",
]

MCP_FLAG = "--additional-mcp-config"
"""The flag that adds MCP servers for one run (JSON, or ``@file``); it may repeat."""

RESUME_FLAG = "--resume"

MISSING_SESSION_TEXT = "No session, task, or name matched"
"""What Copilot CLI prints on stderr (exit 1) when ``--resume`` names no session it has."""

PROFILE = ProviderProfile(
    name="copilot",
    display_name="GitHub Copilot CLI",
    binary="copilot",
    supports_resume=True,
    supports_reasoning_effort=False,
    mcp=McpMechanism.CLI_FLAGS,
    output_schema=OutputSchemaStyle.NONE,
    schema_dialect=None,
    state_dirs=(".copilot",),
    auth_env_vars=(
        "COPILOT_GITHUB_TOKEN",
        "GH_TOKEN",
        "GITHUB_TOKEN",
        "COPILOT_PROVIDER_BASE_URL",
        "COPILOT_PROVIDER_API_KEY",
        "COPILOT_PROVIDER_BEARER_TOKEN",
    ),
    container_install=("npm install -g @github/copilot",),
    state_root_env="COPILOT_HOME",
    auth_files=(".copilot/config.json",),
    credential_files=(".copilot/config.json",),
    resume_state_paths=(".copilot/session-state", ".copilot/session-store.db"),
    mcp_config_file=None,
)
"""Copilot CLI's capabilities (checked against 1.0.102 and its ``help`` topics)."""


class CopilotProvider:
    """Runs ``copilot --output-format json --allow-all-tools ...`` with the prompt on stdin.

    Copilot asks before touching a path outside the working directory or a URL; a headless run
    cannot answer, so by default both are allowed too (``allow_all_paths``/``allow_all_urls``,
    the agent's own sandbox being off as with every provider). ``auto_update=False`` passes
    ``--no-auto-update`` so a run uses the version that was installed and checked.
    """

    def __init__(
        self,
        *,
        allow_all_paths: bool = True,
        allow_all_urls: bool = True,
        auto_update: bool = False,
    ) -> None:
        """Choose the permission and update flags every turn gets."""
        self.allow_all_paths = allow_all_paths
        self.allow_all_urls = allow_all_urls
        self.auto_update = auto_update

    @property
    def profile(self) -> ProviderProfile:
        """Copilot CLI's static capabilities."""
        return PROFILE

    def build_argv(self, ctx: ArgvContext) -> list[str]:
        """Return the turn's argv; the prompt is never in it.

        ``copilot --output-format json --allow-all-tools [--allow-all-paths] [--allow-all-urls]
        [--no-auto-update] [--resume=<id>] [--model m] [--additional-mcp-config <json>] [extra]``

        Raises:
            InvalidSessionIdError: the resume id is not safe to pass.
            ProviderCapabilityError: a reasoning effort or an output schema was asked for.
        """
        if ctx.reasoning_effort is not None:
            raise ProviderCapabilityError(
                "GitHub Copilot CLI is driven without a reasoning-effort setting; drop "
                "reasoning_effort (or pass --reasoning-effort in extra_args yourself)"
            )
        if ctx.schema_inline is not None or ctx.schema_path is not None:
            raise ProviderCapabilityError(
                "GitHub Copilot CLI cannot constrain its answer to an output schema; "
                "drop output_schema"
            )
        argv = [ctx.binary_path, "--output-format", "json", "--allow-all-tools"]
        if self.allow_all_paths:
            argv.append("--allow-all-paths")
        if self.allow_all_urls:
            argv.append("--allow-all-urls")
        if not self.auto_update:
            argv.append("--no-auto-update")
        if ctx.resume_session_id is not None:
            # The equals form: --resume takes an optional value, so a separate word could be
            # read as the prompt or the next flag.
            argv.append(f"{RESUME_FLAG}={validate_session_id(ctx.resume_session_id)}")
        if ctx.model:
            argv += ["--model", checked_option_value("Copilot CLI", "model", ctx.model)]
        argv += ctx.mcp_argv
        argv += ctx.extra_args
        return argv

    def new_parser(
        self, emit: Callable[[AgentEvent], None], *, expect_structured: bool
    ) -> CopilotStreamParser:
        """Return a fresh parser for one turn."""
        return CopilotStreamParser(emit, expect_structured=expect_structured)

    def install_mcp(self, workspace: Path | None, servers: Sequence[McpServer]) -> McpInstallation:
        """Return the ``--additional-mcp-config`` flag carrying ``servers`` (nothing is written).

        Raises:
            ProviderCapabilityError: a server has a timeout (Copilot's per-server ``timeout``
                is not documented as startup or tool timeout) or two servers share a name.
        """
        if not servers:
            return NoMcpInstallation()
        return NoMcpInstallation(argv=(MCP_FLAG, render_mcp_config(servers)))

    def classify_exit(self, error: CliExitError, *, resumed: bool) -> AgentShimError:
        """Return SessionResumeError only when Copilot said the resumed session does not exist.

        Any other failure keeps its kind and detail, so a 5xx on a resumed turn stays a
        retryable failure of a conversation that still exists.
        """
        if resumed and (
            MISSING_SESSION_TEXT in error.stderr or MISSING_SESSION_TEXT in error.detail
        ):
            return as_resume_failure(error, session_id=resumed_session_id(error.argv))
        return error


def mcp_entry(server: McpServer) -> dict[str, Any]:
    """One server as Copilot's MCP config writes it (what ``copilot mcp add --json`` prints).

    Raises:
        ProviderCapabilityError: the server sets a startup or tool timeout.
    """
    if server.startup_timeout_s is not None or server.tool_timeout_s is not None:
        raise ProviderCapabilityError(
            f"GitHub Copilot CLI has no separate startup and tool timeouts for MCP server "
            f"{server.name!r}; drop startup_timeout_s and tool_timeout_s"
        )
    if isinstance(server, StdioMcpServer):
        entry: dict[str, Any] = {
            "type": "local",
            "command": server.command,
            "args": list(server.args),
            "tools": ["*"],
        }
        if server.env:
            entry["env"] = dict(server.env)
        return entry
    http: HttpMcpServer = server
    entry = {"type": http.transport, "url": http.url, "tools": ["*"]}
    if http.headers:
        entry["headers"] = dict(http.headers)
    return entry


def render_mcp_config(servers: Sequence[McpServer]) -> str:
    """The JSON value of ``--additional-mcp-config`` for ``servers`` (compact, one object).

    Raises:
        ProviderCapabilityError: two servers share a name, or one sets a timeout.
    """
    entries: dict[str, dict[str, Any]] = {}
    for server in servers:
        if server.name in entries:
            raise ProviderCapabilityError(
                f"two MCP servers are named {server.name!r}; give each server its own name"
            )
        entries[server.name] = mcp_entry(server)
    return json.dumps({"mcpServers": entries}, separators=(",", ":"), ensure_ascii=False)


def parse_mcp_servers(argv: Sequence[str]) -> dict[str, dict[str, Any]]:
    """The MCP servers ``argv`` passes with ``--additional-mcp-config``, in canonical shape.

    The inverse of :func:`render_mcp_config`: a stdio server gives ``{"command", "args",
    "env"}``, an HTTP one ``{"url", "transport"}``. Every occurrence of the flag is read (a
    later one wins for a repeated name); ``@file`` values and values that are not a JSON
    object are skipped.
    """
    servers: dict[str, dict[str, Any]] = {}
    for value in _flag_values(argv, MCP_FLAG):
        if value.startswith("@"):
            continue
        try:
            document = json.loads(value)
        except (ValueError, RecursionError):
            continue
        if not isinstance(document, dict):
            continue
        entries = document.get("mcpServers")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        if not isinstance(entries, dict):
            continue
        for name, entry in entries.items():  # pyright: ignore[reportUnknownVariableType]
            if isinstance(name, str) and isinstance(entry, dict):
                servers[name] = _canonical_entry(entry)  # pyright: ignore[reportUnknownArgumentType]
    return servers


def resumed_session_id(argv: Sequence[str]) -> str | None:
    """The session id a Copilot argv resumes (``--resume=<id>`` or ``--resume <id>``), if any."""
    found: str | None = None
    for value in _flag_values(argv, RESUME_FLAG):
        found = value
    return found


def _flag_values(argv: Sequence[str], flag: str) -> list[str]:
    values: list[str] = []
    prefix = flag + "="
    args = list(argv)
    for index, arg in enumerate(args):
        if arg.startswith(prefix):
            values.append(arg[len(prefix) :])
        elif arg == flag and index + 1 < len(args) and not args[index + 1].startswith("-"):
            values.append(args[index + 1])
    return values


def _canonical_entry(entry: Mapping[str, Any]) -> dict[str, Any]:
    kind = entry.get("type")
    if "url" in entry and kind != "local" and kind != "stdio":
        transport = kind if kind in ("http", "sse") else "http"
        return {"url": entry.get("url"), "transport": transport}
    raw_args = entry.get("args")
    raw_env = entry.get("env")
    args: list[Any] = list(raw_args) if isinstance(raw_args, list) else []  # pyright: ignore[reportUnknownArgumentType]
    env: dict[str, Any] = dict(raw_env) if isinstance(raw_env, dict) else {}  # pyright: ignore[reportUnknownArgumentType]
    return {"command": entry.get("command"), "args": args, "env": env}
