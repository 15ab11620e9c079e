"""CodexProvider: argv for ``codex exec --json``, MCP servers as ``--config`` flags, exit rules.

One turn's argv, in order::

    codex exec [resume <id> -]
        (--dangerously-bypass-approvals-and-sandbox | <sandbox --config overrides> [--ignore-rules])
        --skip-git-repo-check --json [--model <m>]
        [--config shell_environment_policy.set.PATH="<env PATH>"]
        [--config model_reasoning_effort="<effort>"]
        [--config mcp_servers.<name>.<field>=<value> ...]
        [--output-schema <path>] [extra args] [-]

The prompt goes on stdin only. ``-`` tells Codex to read it; on resume it must follow the thread
id directly (the CLI ignores stdin otherwise), so a resumed argv has no trailing ``-``.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentshim.core.argv import word_after
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    ProviderCapabilityError,
)
from agentshim.core.events import Emit
from agentshim.core.exit_errors import as_resume_failure, resume_missing_line
from agentshim.core.ids import validate_session_id
from agentshim.core.jsonvalues import as_mapping, list_or_empty
from agentshim.core.mcp import HttpMcpServer, McpServer, StdioMcpServer, url_carries_secrets
from agentshim.core.permissions import NativeMode
from agentshim.core.profile import McpMechanism, OutputSchemaStyle, ProviderProfile, SchemaDialect
from agentshim.core.provider import ArgvContext, McpInstallation, NoMcpInstallation
from agentshim.core.turn_flags import model_flag
from agentshim.tools.local import is_tools_bridge

from ._config_flags import config_flag, read_config_flags
from ._toml import TomlError
from .parser import PROVIDER_NAME, CodexStreamParser
from .rules import CODEX_HOME_ENV, check_codex_home, install_rules
from .sandbox import CodexSandboxConfig, render_sandbox

__all__ = [
    "MCP_SERVERS_KEY",
    "PROFILE",
    "RESUME_ALIASES",
    "RESUME_MISSING_TEXT",
    "RESUME_TEMPLATE",
    "CodexProvider",
    "forwarded_env",
    "header_variable",
    "mcp_entry",
    "parse_mcp_servers",
    "render_mcp_servers",
]

MCP_SERVERS_KEY = "mcp_servers"
#: ``mcp_servers.<name>.default_tools_approval_mode`` for the tools bridge: Codex runs its
#: tools without asking (the bridge asks the caller's approvals).
TOOLS_APPROVAL_MODE = "approve"
"""The config table holding MCP servers, set one ``--config`` field at a time."""

RESUME_MISSING_TEXT = "no rollout found"
"""What Codex says on stderr (in any case) when ``resume`` names a thread it does not have."""

_STDIN_PROMPT = "-"
# "SECRET" in the name: Codex's default shell_environment_policy keeps variables whose names
# contain KEY, SECRET or TOKEN out of the agent's shell commands.
_HEADER_VARIABLE_PREFIX = "AGENTSHIM_MCP_SECRET_"

RESUME_TEMPLATE = "codex resume {id}"
"""The shell line that continues a Codex conversation, with ``{id}`` for its session id."""
RESUME_ALIASES: tuple[str, ...] = ("codex exec resume {id}",)
"""Other spellings of the resume line Codex accepts, which ``extract_resume`` recognises."""

PROFILE = ProviderProfile(
    name=PROVIDER_NAME,
    display_name="Codex CLI",
    supports_resume=True,
    supports_reasoning_effort=True,
    mcp=McpMechanism.CLI_FLAGS,
    output_schema=OutputSchemaStyle.FILE_PATH,
    schema_dialect=SchemaDialect.STRICT,
    state_dirs=(".codex",),
    auth_env_vars=("CODEX_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL"),
    container_install=("npm install -g @openai/codex",),
    state_root_env=CODEX_HOME_ENV,
    auth_files=(".codex/auth.json",),
    credential_files=(".codex/auth.json",),
    resume_state_paths=(".codex/sessions",),
    native_permission_modes=(
        NativeMode.BYPASS,
        NativeMode.READ_ONLY,
        NativeMode.WORKSPACE_WRITE,
    ),
)
"""Codex CLI's capabilities: resume, reasoning effort, MCP as flags, a STRICT schema file."""


# -- MCP servers as --config flags ------------------------------------------------------


def mcp_entry(server: McpServer) -> dict[str, Any]:
    """Return the ``mcp_servers.<name>`` table Codex gets for ``server``; it holds no secret.

    A stdio server's env is named in ``env_vars`` (Codex forwards those variables from its own
    environment); an HTTP server's headers are named in ``env_http_headers`` (header -> the
    variable holding its value, see :func:`header_variable`). The values go into the CLI's
    environment (:func:`forwarded_env`), never into argv, where every local user can read them.

    Raises:
        ProviderCapabilityError: an SSE server, which ``codex exec`` cannot reach, or a URL
            with user info or a query string (a credential Codex would get in argv).
    """
    entry = _stdio_entry(server) if isinstance(server, StdioMcpServer) else _http_entry(server)
    entry["required"] = True
    if is_tools_bridge(server):
        # The bridge asks the caller's approvals itself; Codex would otherwise ask for each
        # call with an MCP elicitation under any sandbox but bypass (and take a refusal as
        # the user rejecting the call).
        entry["default_tools_approval_mode"] = TOOLS_APPROVAL_MODE
    if server.startup_timeout is not None:
        entry["startup_timeout_sec"] = float(server.startup_timeout)
    if server.tool_timeout is not None:
        entry["tool_timeout_sec"] = float(server.tool_timeout)
    return entry


def _stdio_entry(server: StdioMcpServer) -> dict[str, Any]:
    entry: dict[str, Any] = {"command": server.command, "args": list(server.args)}
    if server.env:
        entry["env_vars"] = sorted(server.env)
    return entry


def _http_entry(server: HttpMcpServer) -> dict[str, Any]:
    if server.transport != "http":
        raise ProviderCapabilityError(
            f"Codex reaches MCP servers over stdio or streamable HTTP, not "
            f"{server.transport!r} (server {server.name!r}); use transport='http'"
        )
    if url_carries_secrets(server.url):
        # The URL can only go into a --config flag, readable by every local user.
        raise ProviderCapabilityError(
            f"MCP server {server.name!r}: its url has user info or a query string, which "
            "Codex would get in argv where every local user can read it; pass the token "
            "as a header instead (headers={'Authorization': 'Bearer ...'}), which Codex "
            "reads from an environment variable it is given by name"
        )
    entry: dict[str, Any] = {"url": server.url}
    if server.headers:
        entry["env_http_headers"] = {
            header: header_variable(server.name, header) for header in server.headers
        }
    return entry


def header_variable(server: str, header: str) -> str:
    """The environment variable that carries header ``header`` of MCP server ``server``.

    Derived from both names (a digest, so any name gives a valid, distinct variable).
    """
    digest = hashlib.sha256(f"{server}\0{header.lower()}".encode()).hexdigest()[:16]
    return f"{_HEADER_VARIABLE_PREFIX}{digest.upper()}"


def forwarded_env(servers: Sequence[McpServer]) -> dict[str, str]:
    """The variables the CLI's environment must carry for ``servers``' env and headers.

    Raises:
        ProviderCapabilityError: two servers need one variable with different values (Codex
            forwards a variable under its own name, so it has one value for every server).
    """
    env: dict[str, str] = {}
    for server in servers:
        if isinstance(server, StdioMcpServer):
            wanted = dict(server.env)
        else:
            wanted = {header_variable(server.name, h): v for h, v in server.headers.items()}
        for name, value in wanted.items():
            if env.setdefault(name, value) != value:
                raise ProviderCapabilityError(
                    f"two MCP servers need {name} with different values, and Codex gives "
                    "every server the one value in its own environment; run them in "
                    "separate turns or have one read another variable"
                )
    return env


def render_mcp_servers(servers: Sequence[McpServer]) -> list[str]:
    """Return the ``--config mcp_servers.<name>.<field>=<value>`` flags for ``servers``.

    Server names are TOML key segments, quoted where they are not bare keys, so ``my.srv``,
    ``a-b`` and ``a_b`` stay three distinct servers.

    Raises:
        ProviderCapabilityError: two servers share a name, or one cannot be expressed.
    """
    argv: list[str] = []
    seen: set[str] = set()
    for server in servers:
        if server.name in seen:
            raise ProviderCapabilityError(
                f"two MCP servers are both named {server.name!r}; give each a distinct name"
            )
        seen.add(server.name)
        for field, value in mcp_entry(server).items():
            try:
                argv += config_flag((MCP_SERVERS_KEY, server.name, field), value)
            except TomlError as error:
                raise ProviderCapabilityError(
                    f"MCP server {server.name!r} {field} cannot be passed to Codex: {error}"
                ) from error
    return argv


def _server_from_entry(
    name: str, entry: Mapping[str, Any], env: Mapping[str, str]
) -> McpServer | None:
    startup = entry.get("startup_timeout_sec")
    tool = entry.get("tool_timeout_sec")
    startup_timeout = float(startup) if isinstance(startup, int | float) else None
    tool_timeout = float(tool) if isinstance(tool, int | float) else None
    command = entry.get("command")
    url = entry.get("url")
    try:
        if isinstance(command, str):
            server_env = {str(k): str(v) for k, v in (as_mapping(entry.get("env")) or {}).items()}
            for variable in list_or_empty(entry.get("env_vars")):
                if isinstance(variable, str) and variable in env:
                    server_env[variable] = env[variable]
            return StdioMcpServer(
                name=name,
                command=command,
                args=tuple(str(a) for a in list_or_empty(entry.get("args"))),
                env=server_env,
                startup_timeout=startup_timeout,
                tool_timeout=tool_timeout,
            )
        if isinstance(url, str):
            headers = {
                str(header): env[variable]
                for header, variable in (as_mapping(entry.get("env_http_headers")) or {}).items()
                if isinstance(variable, str) and variable in env
            }
            return HttpMcpServer(
                name=name,
                url=url,
                headers=headers,
                startup_timeout=startup_timeout,
                tool_timeout=tool_timeout,
            )
    except ValueError:
        return None
    return None


def parse_mcp_servers(
    argv: Sequence[str], env: Mapping[str, str] | None = None
) -> dict[str, McpServer]:
    """Invert :func:`render_mcp_servers`: the MCP servers ``argv`` configures, by name.

    Reads every ``--config``/``-c`` override under ``mcp_servers``. The values of the
    variables an entry names (``env_vars``, ``env_http_headers``) are taken from ``env``, the
    CLI's environment; a variable it lacks is left out. A server whose entry has neither a
    command nor a URL (or is not a valid server) is left out.
    """
    entries: dict[str, dict[str, Any]] = {}
    for key, value in read_config_flags(argv):
        if len(key) < 3 or key[0] != MCP_SERVERS_KEY:
            continue
        entry = entries.setdefault(key[1], {})
        field = key[2]
        if len(key) == 3:
            entry[field] = value
        elif field in ("env", "env_http_headers"):
            table = entry.get(field)
            if not isinstance(table, dict):
                table = entry[field] = {}
            table[".".join(key[3:])] = value
    servers: dict[str, McpServer] = {}
    for name, entry in entries.items():
        server = _server_from_entry(name, entry, env or {})
        if server is not None:
            servers[name] = server
    return servers


# -- the provider ------------------------------------------------------------------------


@dataclass(frozen=True, kw_only=True, eq=False)
class CodexProvider:
    """Drives ``codex exec --json``; ``sandbox`` turns Codex's own sandbox on (default: off).

    Without a sandbox the CLI runs with ``--dangerously-bypass-approvals-and-sandbox``, which
    is only safe inside an outside confinement. With ``sandbox.excluded_commands`` every turn
    writes them into ``$CODEX_HOME/rules/agentshim.rules`` and is refused unless CODEX_HOME is
    dedicated to the caller and outside every directory the sandbox lets commands write. The
    sandbox is fixed for the provider's lifetime.
    """

    sandbox: CodexSandboxConfig | None = None

    profile = PROFILE
    """Codex CLI's static capabilities."""

    def build_argv(self, ctx: ArgvContext) -> list[str]:
        """Return one turn's argv (see the module docstring); the prompt is never in it.

        Raises:
            InvalidSessionIdError: the resume id is not safe to pass to the CLI.
            ProviderCapabilityError: a value has no TOML form, or ``excluded_commands`` cannot
                be loaded safely (see ``rules.check_codex_home``).
        """
        argv = [ctx.binary_path, "exec"]
        resume = ctx.resume_session_id
        if resume is not None:
            # validate_session_id also refuses a leading "-", which the CLI would read as an option.
            argv += ["resume", validate_session_id(resume), _STDIN_PROMPT]
        argv += self._sandbox_argv(ctx)
        argv += ["--skip-git-repo-check", "--json"]
        argv += model_flag("Codex", ctx)
        try:
            path = ctx.env.get("PATH")
            if path:
                argv += config_flag(("shell_environment_policy", "set", "PATH"), path)
            if ctx.reasoning_effort:
                argv += config_flag(("model_reasoning_effort",), ctx.reasoning_effort)
        except TomlError as error:
            raise ProviderCapabilityError(
                f"a setting cannot be passed to Codex as TOML: {error}"
            ) from error
        argv += ctx.mcp_argv
        if ctx.schema_path:
            argv += ["--output-schema", ctx.schema_path]
        argv += ctx.extra_args
        if resume is None:
            argv.append(_STDIN_PROMPT)
        return argv

    def _sandbox_argv(self, ctx: ArgvContext) -> list[str]:
        sandbox = self.sandbox
        if sandbox is not None and sandbox.excluded_commands:
            home = check_codex_home(sandbox, cwd=ctx.cwd, env=ctx.env)
            install_rules(home, sandbox.excluded_commands)
        try:
            return render_sandbox(sandbox)
        except TomlError as error:
            raise ProviderCapabilityError(
                f"the sandbox settings cannot be passed to Codex as TOML: {error}"
            ) from error

    def new_parser(self, emit: Emit, *, expect_structured: bool) -> CodexStreamParser:
        """Return a fresh parser for one turn's output."""
        return CodexStreamParser(emit, expect_structured=expect_structured)

    def install_mcp(self, workspace: Path | None, servers: Sequence[McpServer]) -> McpInstallation:
        """Return the ``--config`` flags that make ``servers`` available; nothing is written.

        Env values and header values are not in the flags: the installation's ``env`` carries
        them into the CLI's environment, and the flags name the variables.

        Raises:
            ProviderCapabilityError: a server Codex cannot reach (see ``mcp_entry``), or two
                servers needing one variable with different values.
        """
        if not servers:
            return NoMcpInstallation()
        return NoMcpInstallation(
            argv=tuple(render_mcp_servers(servers)), env=forwarded_env(servers)
        )

    def classify_exit(self, error: CliExitError, *, resumed: bool) -> AgentShimError:
        """Return SessionResumeError when a resumed turn found no rollout; else ``error``.

        Codex names a lost thread on stderr (``no rollout found for thread id ...``); any
        other failure of a resumed turn keeps its kind and leaves the conversation alone.
        """
        if resumed and resume_missing_line(RESUME_MISSING_TEXT, error.stderr, error.detail):
            return as_resume_failure(error, session_id=word_after(error.argv, "resume"))
        return error
