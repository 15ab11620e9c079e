"""ClaudeProvider: how to run ``claude -p`` for one turn, and the Claude Code profile.

argv, in order::

    claude -p --output-format stream-json --verbose
           [--resume ID [--fork-session]] [--model M] [--effort E] [--json-schema JSON]
           (--dangerously-skip-permissions | --permission-mode MODE)
           [--settings JSON] [mcp argv] [extra_args]

The prompt goes on stdin, never into argv. ``--verbose`` is required: without it the CLI
refuses stream-json in print mode and exits 1.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agentshim.core._checks import instance, sequence
from agentshim.core.argv import checked_option_value, word_after
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    FailureKind,
    InvalidRequestError,
    SessionResumeError,
)
from agentshim.core.events import Emit
from agentshim.core.exit_errors import as_resume_failure, resume_missing_line
from agentshim.core.jsonvalues import as_mapping, list_or_empty
from agentshim.core.mcp import (
    McpServer,
    mcp_servers_entry,
    refuse_timeouts,
)
from agentshim.core.pricing import PricingTable
from agentshim.core.profile import McpMechanism, OutputSchemaStyle, ProviderProfile, SchemaDialect
from agentshim.core.provider import ArgvContext, McpInstallation, NoMcpInstallation, mcp_env
from agentshim.core.turn_flags import model_flag, resume_flag
from agentshim.mcp.install import install_json_config, workspace_config_file
from agentshim.mcp.secrets import ReferenceStyle, SecretReferences, WithSecretEnv

from .model_data import PRICING_TABLE
from .parser import PROVIDER_NAME, ClaudeStreamParser
from .sandbox import SANDBOX_ENV, SandboxConfig
from .user_hooks import ClaudeHook, build_settings

__all__ = [
    "MCP_CONFIG_FILE",
    "MCP_SERVERS_KEY",
    "PERMISSION_MODES",
    "PROFILE",
    "RESUME_ALIASES",
    "RESUME_MISSING_TEXT",
    "RESUME_TEMPLATE",
    "TOOL_SEARCH_ENV",
    "ClaudeProvider",
    "mcp_entry",
]

MCP_CONFIG_FILE = ".mcp.json"
"""Where Claude Code reads project MCP servers from, relative to its working directory."""

MCP_SERVERS_KEY = "mcpServers"
"""The object in ``.mcp.json`` that holds the servers, keyed by name."""

RESUME_MISSING_TEXT = "No conversation found"
"""What Claude Code says (stderr and the result's ``errors``) when a resumed id is unknown."""

PERMISSION_MODES = (
    "acceptEdits",
    "auto",
    "bypassPermissions",
    "default",
    "dontAsk",
    "manual",
    "plan",
)
"""The values ``--permission-mode`` accepts: those of 2.1.197, plus 2.1.332's ``auto`` and
``manual`` (its help no longer lists ``default``, which it still accepts; 2.1.197 knows
neither new one)."""

TOOL_SEARCH_ENV = {"ENABLE_TOOL_SEARCH": "false"}
"""What a turn that brings its own MCP servers sets, unless the caller's env sets it.

From 2.1.332 Claude Code defers MCP tools behind its ``ToolSearch`` tool: the server is
connected but its tools are not offered to the model until it searches for them. A turn's own
servers are offered up front instead (``docs/providers/claude.md`` has the trade-off);
2.1.197 ignores the variable."""

RESUME_TEMPLATE = "claude --resume {id}"
"""The shell line that continues a Claude Code conversation, with ``{id}`` for its session id."""
RESUME_ALIASES: tuple[str, ...] = ("claude -r {id}", "claude --resume={id}")
"""Other spellings of the resume line Claude Code accepts, which ``extract_resume`` recognises."""

PROFILE = ProviderProfile(
    name=PROVIDER_NAME,
    display_name="Claude Code",
    supports_resume=True,
    supports_fork=True,
    supports_reasoning_effort=True,
    mcp=McpMechanism.CONFIG_FILE,
    output_schema=OutputSchemaStyle.INLINE_JSON,
    schema_dialect=SchemaDialect.OPEN,
    state_dirs=(".claude", ".claude.json"),
    auth_env_vars=(
        "ANTHROPIC_AUTH_TOKEN",
        "ANTHROPIC_API_KEY",
        "CLAUDE_CODE_OAUTH_TOKEN",
        "ANTHROPIC_BASE_URL",
        "ANTHROPIC_CUSTOM_HEADERS",
    ),
    skill_dirs=(".claude/skills",),
    container_install=("npm install -g @anthropic-ai/claude-code",),
    container_env={"IS_SANDBOX": "1"},
    state_root_env="CLAUDE_CONFIG_DIR",
    auth_files=(".claude/.credentials.json",),
    credential_files=(".claude/.credentials.json",),
    resume_state_paths=(".claude/projects",),
    mcp_config_file=MCP_CONFIG_FILE,
)
"""Claude Code's capabilities. ``IS_SANDBOX=1`` lets a root container use the bypass flags."""


def mcp_entry(server: McpServer, refs: SecretReferences | None = None) -> dict[str, Any]:
    """Render ``server`` as a ``.mcp.json`` entry.

    A stdio server is ``{"command", "args", "env"?}``; an HTTP one ``{"type", "url",
    "headers"?}``. Given ``refs``, every env and header value is written as ``${NAME}``, a
    variable Claude Code expands from its own environment (``refs.env`` holds the values).
    Claude Code has no per-server startup or tool timeout, so a server that sets one is
    refused with ProviderCapabilityError rather than silently run without it.
    """
    refuse_timeouts(server, "Claude Code")
    entry = mcp_servers_entry(server)
    if refs is not None:
        for key in ("env", "headers"):
            if key in entry:
                entry[key] = refs.refer(entry[key])
    return entry


REFERENCE_STYLE = ReferenceStyle("${", "}")
"""How Claude Code writes a reference to a variable it expands from its own environment."""


@dataclass(frozen=True, kw_only=True, eq=False)
class ClaudeProvider:
    """Claude Code in print mode (``claude -p``), one process per turn.

    Options (all keyword-only, fixed for the provider's lifetime):

    - ``permission_mode``: None passes ``--dangerously-skip-permissions`` (no prompts: the
      turn runs unattended, so any approval request would stall it); a name from
      PERMISSION_MODES passes ``--permission-mode NAME`` instead.
    - ``sandbox``: Claude Code's own Bash sandbox (and optional read confinement), sent in
      ``--settings``. Merge ``sandbox_env`` into the agent's env when using it.
    - ``hooks``: caller hooks, merged after agentshim's own into the same ``--settings``; kept
      as a tuple, in the order they are registered.
    - ``pricing``: prices used when a result frame reports no cost.

    Raises:
        InvalidRequestError: an unknown permission mode, a sandbox that is not a
            SandboxConfig, or a hook that is not a ClaudeHook.
    """

    permission_mode: str | None = None
    sandbox: SandboxConfig | None = None
    hooks: Sequence[ClaudeHook] = ()
    pricing: PricingTable = PRICING_TABLE
    settings_json: str | None = field(init=False, repr=False)
    """The ``--settings`` argument, or None when there is nothing to configure."""

    def __post_init__(self) -> None:
        permission_mode, sandbox, hooks = self.permission_mode, self.sandbox, self.hooks
        if permission_mode is not None and permission_mode not in PERMISSION_MODES:
            raise InvalidRequestError(
                "ClaudeProvider.permission_mode",
                f"unknown permission mode {permission_mode!r}",
                f"unknown Claude Code permission mode {permission_mode!r} (permission_mode); "
                f"use one of {', '.join(PERMISSION_MODES)} or None",
            )
        if sandbox is not None:
            instance("ClaudeProvider", "sandbox", sandbox, SandboxConfig, "a SandboxConfig or None")
        hooks = tuple(
            instance("ClaudeProvider", "hooks", hook, ClaudeHook, "ClaudeHook values")
            for hook in sequence("ClaudeProvider", "hooks", hooks, "ClaudeHook values")
        )
        settings = build_settings(sandbox, hooks)
        settings_json = (
            json.dumps(settings, separators=(",", ":"), ensure_ascii=False) if settings else None
        )
        # Frozen: the checked values are stored the one way a frozen dataclass allows.
        object.__setattr__(self, "hooks", hooks)
        object.__setattr__(self, "settings_json", settings_json)

    profile = PROFILE
    """Claude Code's capabilities."""

    @property
    def sandbox_env(self) -> Mapping[str, str]:
        """Environment Claude Code's sandbox needs; merge it into ``CliAgent(env=...)``."""
        return SANDBOX_ENV

    @property
    def env_defaults(self) -> Mapping[str, str]:
        """Environment CliAgent adds where its env is silent: ``sandbox_env`` with a sandbox."""
        return SANDBOX_ENV if self.sandbox is not None else {}

    def build_argv(self, ctx: ArgvContext) -> list[str]:
        """Return the argv for one turn; InvalidSessionIdError for an unsafe resume id."""
        argv = [ctx.binary_path, "-p", "--output-format", "stream-json", "--verbose"]
        argv += conversation_flags(ctx, fork=ctx.fork_session)
        if ctx.schema_inline is not None:
            argv += ["--json-schema", ctx.schema_inline]
        if self.permission_mode is None:
            argv.append("--dangerously-skip-permissions")
        else:
            argv += ["--permission-mode", self.permission_mode]
        if self.settings_json is not None:
            argv += ["--settings", self.settings_json]
        return ctx.ending(argv)

    def new_parser(self, emit: Emit, *, expect_structured: bool) -> ClaudeStreamParser:
        """Return a fresh stream-json parser for one turn."""
        return ClaudeStreamParser(emit, expect_structured=expect_structured, pricing=self.pricing)

    def install_mcp(self, workspace: Path | None, servers: Sequence[McpServer]) -> McpInstallation:
        """Merge ``servers`` into ``<workspace>/.mcp.json`` for the turn (restored afterwards).

        Raises:
            McpConfigError: there is no workspace, or the file cannot be read, parsed or
                written.
            ProviderCapabilityError: a server sets a timeout.
        """
        if not servers:
            return NoMcpInstallation()
        path = workspace_config_file(workspace, MCP_CONFIG_FILE)
        refs = SecretReferences(REFERENCE_STYLE)
        entries = {server.name: mcp_entry(server, refs) for server in servers}
        # Claude Code reads .mcp.json as strict JSON, so a commented file is refused up front.
        installed = install_json_config(path, (MCP_SERVERS_KEY,), entries, jsonc=False)
        return _UpFrontTools(WithSecretEnv(installed, refs.env))

    def classify_exit(self, error: CliExitError, *, resumed: bool) -> AgentShimError:
        """Return SessionResumeError when the conversation is gone, else ``error`` unchanged.

        Claude Code names a missing conversation ("No conversation found", on stderr and in the
        result's ``errors``); that is a resume failure whether or not the turn was flagged as
        resumed. A resumed turn that failed without a classified kind is one too: the CLI has
        no distinct exit for a lost transcript (an id that is not a UUID fails differently),
        and a conversation that cannot continue is lost either way. A resumed turn with a
        classified kind (TRANSIENT, AUTH, ...) keeps it: the conversation is still there.
        """
        if isinstance(error, SessionResumeError):
            return error
        missing = _resume_target_missing(error)
        if missing is None and not (resumed and error.kind is FailureKind.OTHER):
            return error
        return as_resume_failure(
            error, session_id=word_after(error.argv, "--resume") or missing or None
        )


def conversation_flags(ctx: ArgvContext, *, fork: bool = False) -> list[str]:
    """``--resume ID`` (with ``--fork-session`` when ``fork``), ``--model``, ``--effort``.

    Raises:
        InvalidSessionIdError: the resume id is not safe to pass.
        InvalidRequestError: a model or effort that would read as a flag.
    """
    flags = resume_flag("--resume", ctx)
    if flags and fork:
        flags.append("--fork-session")
    flags += model_flag("Claude Code", ctx)
    if ctx.reasoning_effort:
        effort = checked_option_value("Claude Code", "reasoning_effort", ctx.reasoning_effort)
        flags += ["--effort", effort]
    return flags


@dataclass(frozen=True, slots=True)
class _UpFrontTools:
    """The config-file installation, plus the env that offers its tools up front."""

    inner: McpInstallation

    @property
    def argv(self) -> Sequence[str]:
        """The inner installation's flags (none: the servers are in the file)."""
        return self.inner.argv

    @property
    def env(self) -> Mapping[str, str]:
        """The inner installation's required env."""
        return mcp_env(self.inner)

    @property
    def env_defaults(self) -> Mapping[str, str]:
        """``ENABLE_TOOL_SEARCH=false``, where the caller's env does not set it."""
        return TOOL_SEARCH_ENV

    def restore(self) -> str | None:
        """Put the config file back as it was."""
        return self.inner.restore()


def _resume_target_missing(error: CliExitError) -> str | None:
    """The session id Claude Code said it could not find ("" if unnamed), or None."""
    texts = [error.stderr, error.detail]
    if RESUME_MISSING_TEXT in error.stdout:
        texts.extend(_result_errors(error.stdout))
    line = resume_missing_line(RESUME_MISSING_TEXT, *texts)
    if line is None:
        return None
    _, _, named = line.partition("session ID:")
    return named.strip()


def _result_errors(stdout: str) -> list[str]:
    # Only the result frame's own errors count: tool output quoting the phrase must not.
    found: list[str] = []
    for line in stdout.splitlines():
        if RESUME_MISSING_TEXT not in line:
            continue
        try:
            frame: Any = json.loads(line)
        except (ValueError, RecursionError):
            continue
        result = as_mapping(frame)
        if result is not None and result.get("type") == "result":
            found.extend(e for e in list_or_empty(result.get("errors")) if isinstance(e, str))
    return found
