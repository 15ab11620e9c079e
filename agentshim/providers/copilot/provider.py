"""CopilotProvider: argv, MCP flags and failure classification for GitHub Copilot CLI.

The prompt goes on stdin: Copilot CLI 1.0.102 reads piped stdin as the prompt when no
``-p``/``--prompt`` is given (checked against the real binary: the ``user.message`` frame
carries the stdin text), so it never appears in argv.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    InvalidRequestError,
    McpConfigError,
    ProviderCapabilityError,
)
from agentshim.core.events import Emit
from agentshim.core.exit_errors import as_resume_failure, resume_missing_line
from agentshim.core.ids import validate_session_id
from agentshim.core.jsonvalues import as_mapping, list_or_empty
from agentshim.core.mcp import (
    HttpMcpServer,
    McpServer,
    StdioMcpServer,
    mcp_servers_entry,
    refuse_timeouts,
    url_carries_secrets,
)
from agentshim.core.profile import McpMechanism, ProviderProfile
from agentshim.core.provider import ArgvContext, McpInstallation, NoMcpInstallation
from agentshim.core.turn_flags import model_flag

from .parser import PROVIDER_NAME, CopilotStreamParser

__all__ = [
    "MCP_FLAG",
    "MCP_SERVERS_KEY",
    "PROFILE",
    "RESUME_ALIASES",
    "RESUME_MISSING_TEXT",
    "RESUME_TEMPLATE",
    "CopilotProvider",
    "mcp_entry",
    "parse_mcp_servers",
    "render_mcp_config",
]

MCP_FLAG = "--additional-mcp-config"
"""The flag that adds MCP servers for one run (JSON, or ``@file``); it may repeat."""

MCP_SERVERS_KEY = "mcpServers"
"""The object in the flag's JSON that holds the servers, keyed by name."""

RESUME_FLAG = "--resume"

RESUME_MISSING_TEXT = "No session, task, or name matched"
"""What Copilot CLI prints on stderr (exit 1) when ``--resume`` names no session it has."""

RESUME_TEMPLATE = "copilot --resume={id}"
"""The shell line that continues a Copilot CLI conversation, with ``{id}`` for its session id."""
RESUME_ALIASES: tuple[str, ...] = ("copilot --resume {id}", "copilot -r {id}")
"""Other spellings of the resume line Copilot CLI accepts, which ``extract_resume`` recognises."""

PROFILE = ProviderProfile(
    name=PROVIDER_NAME,
    display_name="GitHub Copilot CLI",
    supports_resume=True,
    mcp=McpMechanism.CLI_FLAGS,
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
)
"""Copilot CLI's capabilities (checked against 1.0.102 and its ``help`` topics)."""


@dataclass(frozen=True, kw_only=True, eq=False)
class CopilotProvider:
    """Runs ``copilot --output-format json --allow-all-tools ...`` with the prompt on stdin.

    Copilot asks before touching a path outside the working directory or a URL; a headless run
    cannot answer, so by default both are allowed too (``allow_all_paths``/``allow_all_urls``,
    the agent's own sandbox being off as with every provider). ``auto_update=False`` passes
    ``--no-auto-update`` so a run uses the version that was installed and checked. The options
    are fixed for the provider's lifetime.
    """

    allow_all_paths: bool = True
    allow_all_urls: bool = True
    auto_update: bool = False

    profile = PROFILE
    """Copilot CLI's static capabilities."""

    def build_argv(self, ctx: ArgvContext) -> list[str]:
        """Return the turn's argv; the prompt is never in it.

        ``copilot --output-format json --allow-all-tools [--allow-all-paths] [--allow-all-urls]
        [--no-auto-update] [--resume=<id>] [--model m] [--additional-mcp-config <json>] [extra]``

        ``--reasoning-effort`` can go in ``extra_args`` (the profile declares no effort).

        Raises:
            InvalidSessionIdError: the resume id is not safe to pass.
        """
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
            # Only the id's own safety matters then.
            argv.append(f"{RESUME_FLAG}={validate_session_id(ctx.resume_session_id)}")
        argv += model_flag("Copilot CLI", ctx)
        return ctx.ending(argv)

    def new_parser(self, emit: Emit, *, expect_structured: bool) -> CopilotStreamParser:
        """Return a fresh parser for one turn (the CLI takes no output schema)."""
        return CopilotStreamParser(emit)

    def install_mcp(self, workspace: Path | None, servers: Sequence[McpServer]) -> McpInstallation:
        """Return the ``--additional-mcp-config`` flag carrying ``servers``.

        Servers without secrets go inline as JSON. When any server has env values, HTTP
        headers (tokens) or a URL with user info or a query string, the JSON goes into a private file instead (mode 0600, in a fresh
        0700 temporary directory, removed when the turn ends) and the flag names it as
        ``@<path>``: argv is readable by every local user, the file only by this one.

        Raises:
            ProviderCapabilityError: a server has a timeout (Copilot's per-server ``timeout``
                is not documented as startup or tool timeout) or two servers share a name.
            McpConfigError: the private file cannot be written.
        """
        if not servers:
            return NoMcpInstallation()
        config = render_mcp_config(servers)
        if not any(_carries_secrets(server) for server in servers):
            return NoMcpInstallation(argv=(MCP_FLAG, config))
        return _PrivateConfigFile.write(config)

    def classify_exit(self, error: CliExitError, *, resumed: bool) -> AgentShimError:
        """Return SessionResumeError only when Copilot said the resumed session does not exist.

        Any other failure keeps its kind and detail, so a 5xx on a resumed turn stays a
        retryable failure of a conversation that still exists.
        """
        if resumed and resume_missing_line(RESUME_MISSING_TEXT, error.stderr, error.detail):
            return as_resume_failure(error, session_id=resumed_session_id(error.argv))
        return error


def mcp_entry(server: McpServer) -> dict[str, Any]:
    """One server as Copilot's MCP config writes it (what ``copilot mcp add --json`` prints).

    Raises:
        ProviderCapabilityError: the server sets a startup or tool timeout.
    """
    refuse_timeouts(server, "GitHub Copilot CLI")
    entry = mcp_servers_entry(server)
    if isinstance(server, StdioMcpServer):
        entry = {"type": "local", **entry}
    entry["tools"] = ["*"]
    return entry


def _carries_secrets(server: McpServer) -> bool:
    if isinstance(server, StdioMcpServer):
        return bool(server.env)
    return bool(server.headers) or url_carries_secrets(server.url)


@dataclass(frozen=True, slots=True)
class _PrivateConfigFile:
    """An MCP config in a file only this user can read, passed as ``@<path>``; removed after."""

    directory: Path
    argv: tuple[str, ...]

    @classmethod
    def write(cls, config: str) -> _PrivateConfigFile:
        # Encoded before anything is created: a value that cannot be written leaves nothing.
        try:
            data = config.encode("utf-8")
        except UnicodeEncodeError as error:
            raise McpConfigError(
                MCP_FLAG, f"the MCP config is not UTF-8 text ({error.reason})"
            ) from None
        try:
            directory = Path(tempfile.mkdtemp(prefix="agentshim-copilot-mcp-"))
        except OSError as error:
            raise McpConfigError(
                tempfile.gettempdir(), f"no private directory can be made there ({error})"
            ) from error
        path = directory / "mcp-config.json"
        try:
            descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(descriptor, "wb") as file:
                file.write(data)
        except BaseException as error:
            shutil.rmtree(directory, ignore_errors=True)
            if isinstance(error, OSError):
                raise McpConfigError(str(path), f"it cannot be written ({error})") from error
            raise
        return cls(directory, (MCP_FLAG, f"@{path}"))

    def restore(self) -> str | None:
        """Remove the file and its directory; idempotent, never raises."""
        shutil.rmtree(self.directory, ignore_errors=True)
        if self.directory.exists():
            return f"could not remove the private MCP config under {self.directory}; remove it"
        return None


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
    return json.dumps({MCP_SERVERS_KEY: entries}, separators=(",", ":"), ensure_ascii=False)


def parse_mcp_servers(argv: Sequence[str]) -> dict[str, McpServer]:
    """Invert :func:`render_mcp_config`: the MCP servers ``argv`` passes, by name.

    Every ``--additional-mcp-config`` is read (a later one wins for a repeated name): a JSON
    value, or an ``@file`` that still exists (agentshim's private file exists for the length
    of its turn). Values that are not a JSON object, and entries that are not a valid server,
    are left out.
    """
    servers: dict[str, McpServer] = {}
    for value in _flag_values(argv, MCP_FLAG):
        if value.startswith("@"):
            try:
                value = Path(value[1:]).expanduser().read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
        try:
            document: Any = json.loads(value)
        except (ValueError, RecursionError):
            continue
        entries = as_mapping((as_mapping(document) or {}).get(MCP_SERVERS_KEY)) or {}
        for name, entry in entries.items():
            server = _server_from_entry(str(name), as_mapping(entry))
            if server is not None:
                servers[str(name)] = server
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


def _server_from_entry(name: str, entry: Mapping[str, Any] | None) -> McpServer | None:
    if entry is None:
        return None
    kind = entry.get("type")
    url = entry.get("url")
    try:
        if isinstance(url, str) and kind not in ("local", "stdio"):
            return HttpMcpServer(
                name=name,
                url=url,
                transport="sse" if kind == "sse" else "http",
                headers=_strings(entry.get("headers")),
            )
        command = entry.get("command")
        if isinstance(command, str):
            return StdioMcpServer(
                name=name,
                command=command,
                args=tuple(str(a) for a in list_or_empty(entry.get("args"))),
                env=_strings(entry.get("env")),
            )
    except InvalidRequestError:
        return None
    return None


def _strings(value: object) -> dict[str, str]:
    return {str(k): str(v) for k, v in (as_mapping(value) or {}).items()}
