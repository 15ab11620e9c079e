"""OpencodeProvider: argv, MCP install and failure classification for ``opencode run``.

The prompt goes on stdin only: ``opencode run`` reads piped stdin as the message when no
positional message is given, also with ``--session`` (checked against 1.18.33), so the prompt
never reaches argv.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentshim.core.argv import word_after
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    FailureKind,
)
from agentshim.core.events import Emit
from agentshim.core.exit_errors import as_resume_failure, resume_missing_line, with_kind
from agentshim.core.failures import kind_from_text
from agentshim.core.mcp import McpServer, StdioMcpServer, refuse_timeouts, tool_timeout_ms
from agentshim.core.profile import McpMechanism, ProviderProfile
from agentshim.core.provider import ArgvContext, McpInstallation, NoMcpInstallation
from agentshim.core.turn_flags import model_flag, resume_flag
from agentshim.mcp.install import install_json_config, workspace_config_file
from agentshim.mcp.secrets import ReferenceStyle, SecretReferences, WithSecretEnv

from .parser import PROVIDER_NAME, OpencodeStreamParser, strip_ansi

__all__ = [
    "CONFIG_SCHEMA_URL",
    "MCP_CONFIG_FILE",
    "MCP_SERVERS_KEY",
    "PROFILE",
    "RESUME_ALIASES",
    "RESUME_MISSING_TEXT",
    "RESUME_TEMPLATE",
    "OpencodeProvider",
    "mcp_entry",
]

MCP_CONFIG_FILE = "opencode.json"
"""Workspace-relative project config the MCP servers are merged into for a turn."""
MCP_SERVERS_KEY = "mcp"
"""The config key holding MCP servers."""
CONFIG_SCHEMA_URL = "https://opencode.ai/config.json"
"""The ``$schema`` opencode's own config files declare; added when the file has none."""
RESUME_MISSING_TEXT = "Session not found"
"""What opencode prints on stderr when ``--session`` names a session it does not have."""

RESUME_TEMPLATE = "opencode --session {id}"
"""The shell line that continues an opencode conversation, with ``{id}`` for its session id."""
RESUME_ALIASES: tuple[str, ...] = (
    "opencode -s {id}",
    "opencode --session={id}",
    "opencode run --session {id}",
    "opencode run --session={id}",
    "opencode run -s {id}",
)
"""Other spellings of the resume line opencode accepts, which ``extract_resume`` recognises."""

PROFILE = ProviderProfile(
    name=PROVIDER_NAME,
    display_name="opencode",
    supports_resume=True,
    mcp=McpMechanism.CONFIG_FILE,
    state_dirs=(".local/share/opencode", ".config/opencode"),
    container_install=("npm install -g opencode-ai",),
    auth_files=(".local/share/opencode/auth.json",),
    credential_files=(".local/share/opencode/auth.json",),
    resume_state_paths=(".local/share/opencode",),
    mcp_config_file=MCP_CONFIG_FILE,
)
"""opencode's static capabilities."""


def mcp_entry(server: McpServer, refs: SecretReferences | None = None) -> dict[str, Any]:
    """Render one server as an ``mcp`` entry of opencode 1.18.33's config.

    Stdio: ``{"type": "local", "command": [command, *args], "environment"?, "enabled": true}``;
    HTTP: ``{"type": "remote", "url", "headers"?, "enabled": true}``. opencode picks the HTTP
    transport itself (streamable HTTP, then SSE), so ``transport`` is not written.
    ``tool_timeout`` becomes ``timeout`` in milliseconds. Given ``refs``, every env and
    header value is written as ``{env:NAME}``, a variable opencode substitutes from its own
    environment (``refs.env`` holds the values).

    Raises:
        ProviderCapabilityError: ``startup_timeout`` was set; opencode has one request
            timeout and no separate startup timeout.
    """
    refuse_timeouts(server, "opencode", tool_timeout=True)
    entry: dict[str, Any]
    if isinstance(server, StdioMcpServer):
        entry = {"type": "local", "command": [server.command, *server.args]}
        if server.env:
            entry["environment"] = refs.refer(server.env) if refs else dict(server.env)
    else:
        entry = {"type": "remote", "url": server.url}
        if server.headers:
            entry["headers"] = refs.refer(server.headers) if refs else dict(server.headers)
    entry["enabled"] = True
    timeout = tool_timeout_ms(server)
    if timeout is not None:
        entry["timeout"] = timeout
    return entry


REFERENCE_STYLE = ReferenceStyle("{env:", "}")
"""How opencode writes a reference to a variable it expands from its own environment."""


@dataclass(frozen=True, kw_only=True, eq=False)
class OpencodeProvider:
    """Runs ``opencode run --format json`` with the prompt on stdin.

    ``thinking`` adds ``--thinking`` so reasoning parts reach the stream as Reasoning events.
    ``auto_approve`` adds ``--auto``: without it, ``opencode run`` auto-rejects every request
    the user's permission config answers with "ask" (the tool fails, the turn goes on). The
    options are fixed for the provider's lifetime.
    """

    thinking: bool = False
    auto_approve: bool = False

    profile = PROFILE
    """Opencode's static capabilities."""

    def build_argv(self, ctx: ArgvContext) -> list[str]:
        """``opencode run --format json [--session id] [--model provider/model] [extra]``."""
        argv = [ctx.binary_path, "run", "--format", "json"]
        argv += resume_flag("--session", ctx)
        argv += model_flag("opencode", ctx)
        if self.thinking:
            argv.append("--thinking")
        if self.auto_approve:
            argv.append("--auto")
        return ctx.ending(argv)

    def new_parser(self, emit: Emit, *, expect_structured: bool) -> OpencodeStreamParser:
        """Return a fresh parser for opencode's JSON events."""
        return OpencodeStreamParser(emit)

    def install_mcp(self, workspace: Path | None, servers: Sequence[McpServer]) -> McpInstallation:
        """Merge ``servers`` into ``<workspace>/opencode.json`` under ``mcp`` for one turn.

        The user's own keys are kept; ``$schema`` is added only when the file has none.
        """
        if not servers:
            return NoMcpInstallation()
        path = workspace_config_file(workspace, MCP_CONFIG_FILE)
        refs = SecretReferences(REFERENCE_STYLE)
        entries = {server.name: mcp_entry(server, refs) for server in servers}
        installed = install_json_config(
            path,
            (MCP_SERVERS_KEY,),
            entries,
            defaults={"$schema": CONFIG_SCHEMA_URL},
        )
        return WithSecretEnv(installed, refs.env)

    def classify_exit(self, error: CliExitError, *, resumed: bool) -> AgentShimError:
        """Refine a failed run.

        A resumed turn becomes SessionResumeError only when stderr says ``Session not found``;
        any other failure of a resumed turn keeps its kind (a 429 stays TRANSIENT). The
        stream's ``error`` frames already classified API failures; when they said nothing,
        stderr's text is read.
        """
        if resumed:
            line = resume_missing_line(RESUME_MISSING_TEXT, strip_ansi(error.stderr))
            if line is not None:
                return as_resume_failure(
                    error, session_id=word_after(error.argv, "--session", "-s"), detail=line
                )
        if error.kind is not FailureKind.OTHER:
            return error
        kind = kind_from_text(error.detail or strip_ansi(error.stderr))
        if kind is None or kind is FailureKind.OTHER:
            return error
        return with_kind(error, kind)
