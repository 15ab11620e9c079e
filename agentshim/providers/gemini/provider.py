"""GeminiProvider: argv, MCP install and failure classification for the Gemini CLI.

The prompt goes on stdin only: with stdin a pipe the CLI runs headless and takes stdin as the
prompt (checked against 0.61.0), so no ``-p`` is needed and the prompt never reaches argv.
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentshim.core.argv import word_after
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    ProviderCapabilityError,
)
from agentshim.core.events import Emit
from agentshim.core.exit_errors import as_resume_failure, resume_missing_line, with_kind
from agentshim.core.mcp import (
    McpServer,
    mcp_servers_entry,
    refuse_timeouts,
    tool_timeout_ms,
)
from agentshim.core.permissions import NativeMode, NativePermissions
from agentshim.core.pricing import PricingTable
from agentshim.core.profile import McpMechanism, ProviderProfile
from agentshim.core.provider import ArgvContext, McpInstallation, NoMcpInstallation
from agentshim.core.turn_flags import model_flag, resume_flag
from agentshim.mcp.install import install_json_config, workspace_config_file
from agentshim.mcp.secrets import ReferenceStyle, SecretReferences, WithSecretEnv

from .failures import classify
from .model_data import PRICING_TABLE
from .parser import PROVIDER_NAME, GeminiStreamParser

__all__ = [
    "MCP_CONFIG_FILE",
    "MCP_SERVERS_KEY",
    "PROFILE",
    "RESUME_ALIASES",
    "RESUME_MISSING_TEXT",
    "RESUME_TEMPLATE",
    "GeminiProvider",
    "mcp_entry",
]

MCP_CONFIG_FILE = ".gemini/settings.json"
"""Workspace-relative settings file the MCP servers are merged into for a turn."""
MCP_SERVERS_KEY = "mcpServers"
"""The settings key holding MCP servers."""

RESUME_MISSING_TEXT = "Error resuming session:"
"""What the CLI's stderr says when ``--resume`` names no session it has."""

RESUME_TEMPLATE = "gemini --resume {id}"
"""The shell line that continues a Gemini CLI conversation, with ``{id}`` for its session id."""
RESUME_ALIASES: tuple[str, ...] = ("gemini -r {id}", "gemini --resume={id}")
"""Other spellings of the resume line Gemini CLI accepts, which ``extract_resume`` recognises."""

PROFILE = ProviderProfile(
    name=PROVIDER_NAME,
    display_name="Gemini CLI",
    supports_resume=True,
    mcp=McpMechanism.CONFIG_FILE,
    state_dirs=(".gemini",),
    auth_env_vars=("GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL"),
    container_install=("npm install -g @google/gemini-cli",),
    auth_files=(".gemini/oauth_creds.json", ".gemini/settings.json"),
    credential_files=(".gemini/oauth_creds.json",),
    resume_state_paths=(".gemini/tmp",),
    mcp_config_file=MCP_CONFIG_FILE,
    native_permission_modes=(NativeMode.BYPASS, NativeMode.READ_ONLY),
)
"""The Gemini CLI's static capabilities."""


def mcp_entry(
    server: McpServer, *, trust: bool = True, refs: SecretReferences | None = None
) -> dict[str, Any]:
    """Render one server as a ``mcpServers`` entry of Gemini CLI 0.61.0's settings.

    Stdio: ``command``, ``args``, ``env`` (when set); HTTP: ``url`` with ``type`` ``"http"`` or
    ``"sse"`` and ``headers`` (when set). ``trust`` skips the CLI's per-call confirmation, which
    headless mode cannot answer. ``tool_timeout`` becomes ``timeout`` in milliseconds.
    Given ``refs``, every env and header value is written as ``${NAME}``, a variable Gemini
    CLI expands in its settings from its own environment (``refs.env`` holds the values).

    Raises:
        ProviderCapabilityError: ``startup_timeout`` was set; the CLI has no separate
            connect timeout (its one ``timeout`` covers every request).
    """
    refuse_timeouts(server, "the Gemini CLI", tool_timeout=True)
    entry = mcp_servers_entry(server)
    if refs is not None:
        for key in ("env", "headers"):
            if key in entry:
                entry[key] = refs.refer(entry[key])
    timeout = tool_timeout_ms(server)
    if timeout is not None:
        entry["timeout"] = timeout
    entry["trust"] = trust
    return entry


def gemini_start_env() -> dict[str, str]:
    """``GEMINI_CLI_NO_RELAUNCH`` and the heap limit the CLI's relaunch would set (see below)."""
    env = {"GEMINI_CLI_NO_RELAUNCH": "true"}
    half = _half_of_memory_mib()
    if half is not None:
        env["NODE_OPTIONS"] = f"--max-old-space-size={half}"
    return env


def _half_of_memory_mib() -> int | None:
    # What the CLI's relaunch computes (os.totalmem() / 2); node's own default is below it.
    try:
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None  # no sysconf (Windows): the CLI's node default stands
    return total // (2 * 1024 * 1024) if total > 0 else None


REFERENCE_STYLE = ReferenceStyle("${", "}")
"""How Gemini CLI writes a reference to a variable it expands from its own environment."""


@dataclass(frozen=True, kw_only=True, eq=False)
class GeminiProvider:
    """Runs ``gemini --output-format stream-json`` with the prompt on stdin.

    ``permissions``: bypass (the default) passes ``--yolo``; read-only passes
    ``--approval-mode plan``. Workspace-write has no Gemini CLI equivalent: asking for it
    raises ProviderCapabilityError. ``pricing`` prices turns per model (the CLI reports no
    cost); the built-in table is empty. The options are fixed for the provider's lifetime.
    """

    permissions: NativePermissions = field(default_factory=NativePermissions.bypass)
    pricing: PricingTable = PRICING_TABLE

    def __post_init__(self) -> None:
        if self.permissions.mode not in PROFILE.native_permission_modes:
            raise ProviderCapabilityError(
                f"the Gemini CLI has no {self.permissions.mode.value} mode; use bypass (--yolo) "
                "or read_only (--approval-mode plan)"
            )

    profile = PROFILE
    """The Gemini CLI's static capabilities."""

    @property
    def env_defaults(self) -> Mapping[str, str]:
        """Start the CLI as one node process, with the heap limit its relaunch would give it.

        Unless ``GEMINI_CLI_NO_RELAUNCH`` is set, the Gemini CLI starts a second node process
        of itself, for two things only: a V8 heap limit of half the machine's memory
        (``--max-old-space-size``) and a loop that starts it again when it asks to be
        restarted (an interactive feature). That second process costs about 140 MiB and a
        second of start-up per run. CliAgent adds these where the env is silent: the variable
        the relaunched process itself gets, and the same heap limit in ``NODE_OPTIONS``. Set
        ``GEMINI_CLI_NO_RELAUNCH`` or ``NODE_OPTIONS`` in the agent's env to choose otherwise.
        """
        return gemini_start_env()

    def build_argv(self, ctx: ArgvContext) -> list[str]:
        """``gemini --output-format stream-json [--model m] [--resume id] <mode> [extra]``."""
        argv = [ctx.binary_path, "--output-format", "stream-json"]
        argv += model_flag("the Gemini CLI", ctx)
        argv += resume_flag("--resume", ctx)
        if self.permissions.mode is NativeMode.BYPASS:
            argv.append("--yolo")
        else:
            argv += ["--approval-mode", "plan"]
        return ctx.ending(argv)

    def new_parser(self, emit: Emit, *, expect_structured: bool) -> GeminiStreamParser:
        """Return a fresh stream-json parser pricing with this provider's table."""
        return GeminiStreamParser(emit, pricing=self.pricing)

    def install_mcp(self, workspace: Path | None, servers: Sequence[McpServer]) -> McpInstallation:
        """Merge ``servers`` into ``<workspace>/.gemini/settings.json`` for one turn.

        Servers are trusted only in bypass mode; in read-only mode every MCP call would need a
        confirmation headless mode cannot give, so untrusted servers' tools are not offered.
        """
        if not servers:
            return NoMcpInstallation()
        path = workspace_config_file(workspace, MCP_CONFIG_FILE)
        trust = self.permissions.mode is NativeMode.BYPASS
        refs = SecretReferences(REFERENCE_STYLE)
        entries = {server.name: mcp_entry(server, trust=trust, refs=refs) for server in servers}
        return WithSecretEnv(install_json_config(path, (MCP_SERVERS_KEY,), entries), refs.env)

    def classify_exit(self, error: CliExitError, *, resumed: bool) -> AgentShimError:
        """Refine a failed run using the CLI's exit code and messages.

        A resumed turn becomes SessionResumeError only when stderr carries the CLI's own
        ``Error resuming session:`` (exit 42); any other failure of a resumed turn keeps its
        kind. Otherwise the kind is ``failures.classify``'s; a kind the stream gave is kept.
        """
        if resumed:
            line = resume_missing_line(RESUME_MISSING_TEXT, error.stderr)
            if line is not None:
                return as_resume_failure(
                    error, session_id=word_after(error.argv, "--resume", "-r"), detail=line
                )
        kind = classify(error)
        return error if kind is error.kind else with_kind(error, kind)
