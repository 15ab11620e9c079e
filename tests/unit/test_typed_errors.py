"""Every configuration value refuses bad input with a typed error a caller can catch.

Each case builds a value (or calls a public function) with one bad argument. The error must
be an AgentShimError, so ``except AgentShimError`` catches everything agentshim raises, and a
ValueError, so code written against the old bare ValueError keeps working; its ``field`` and
message must name what was wrong.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest

from agentshim.agent import Agent
from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import AgentShimError, InvalidRequestError
from agentshim.core.mcp import HttpMcpServer, StdioMcpServer
from agentshim.core.models import ModelSpec, ModelTable, api_model_id
from agentshim.core.permissions import ApprovalPolicy, NativeMode, NativePermissions
from agentshim.core.pricing import ModelPricing, PricingTable
from agentshim.core.profile import (
    McpMechanism,
    ProviderProfile,
    RenewalBudget,
)
from agentshim.core.retry import RetryPolicy
from agentshim.core.session_policy import SessionPolicy
from agentshim.execution.confinement import PathMap
from agentshim.execution.docker import DockerExecConfinement
from agentshim.mcp.install import install_json_config
from agentshim.providers.claude import ClaudeHook, ClaudeProvider, SandboxConfig
from agentshim.providers.claude.sandbox import confine_reads_hook
from agentshim.providers.codex import CodexSandboxConfig, CodexSandboxMode, parse_sandbox
from agentshim.providers.codex.rules import read_rules
from agentshim.session import Session
from agentshim.state.checkpoints import Checkpoint, validate_checkpoint_key
from agentshim.testing.checkpoints import FakeCheckpointStore
from agentshim.testing.conversation import FakeTransport

BYPASS = NativePermissions.bypass()
DENY = ApprovalPolicy.DENY


def _docker() -> DockerExecConfinement:
    return DockerExecConfinement("box", docker="/usr/bin/docker", host_env={"PATH": "/usr/bin"})


def _profile_with_a_config_file_but_no_path() -> ProviderProfile:
    return ProviderProfile(
        name="x",
        display_name="X",
        binary="x",
        supports_resume=True,
        mcp=McpMechanism.CONFIG_FILE,
    )


def _session_with_a_store_but_no_key() -> Session:
    spec = ConversationSpec(permissions=BYPASS, approvals=DENY)
    return Session(FakeTransport(), spec, checkpoints=FakeCheckpointStore())


# (field the error names, a call that raises it). Kept as one flat table so a new value type
# is one line here.
CASES: list[tuple[str, Callable[[], object]]] = [
    # Codex's sandbox and rules file.
    ("CodexSandboxConfig.mode", lambda: CodexSandboxConfig("read-only")),  # type: ignore[arg-type]
    ("CodexSandboxConfig.approval_policy", lambda: CodexSandboxConfig(approval_policy="always")),
    ("CodexSandboxConfig.writable_roots", lambda: CodexSandboxConfig(writable_roots=("rel",))),
    (
        "CodexSandboxConfig.network_access",
        lambda: CodexSandboxConfig(CodexSandboxMode.READ_ONLY, network_access=True),
    ),
    ("CodexSandboxConfig.excluded_commands", lambda: CodexSandboxConfig(excluded_commands=((),))),
    (
        "excluded_commands",
        lambda: CodexSandboxConfig.from_permissions(BYPASS, excluded_commands=[["ls"]]),
    ),
    ("argv", lambda: parse_sandbox(["codex", "exec", "-"])),
    ("text", lambda: read_rules('prefix_rule(pattern=[ls], decision="allow")\n')),
    # Claude Code's provider, hooks and sandbox.
    ("ClaudeProvider.permission_mode", lambda: ClaudeProvider(permission_mode="yolo")),
    ("ClaudeProvider.hooks", lambda: ClaudeProvider(hooks=["not a hook"])),  # type: ignore[list-item]
    ("ClaudeProvider.sandbox", lambda: ClaudeProvider(sandbox="on")),  # type: ignore[arg-type]
    ("ClaudeHook.event", lambda: ClaudeHook("preToolUse", ("/bin/true",))),
    ("ClaudeHook.command", lambda: ClaudeHook("Stop", "/bin/echo hi")),
    ("ClaudeHook.matcher", lambda: ClaudeHook("Stop", ("/bin/true",), matcher="a\0b")),
    ("ClaudeHook.timeout", lambda: ClaudeHook("Stop", ("/bin/true",), timeout=0)),
    ("SandboxConfig.allow_write", lambda: SandboxConfig(allow_write="/w")),
    (
        "SandboxConfig.confine_native_reads_to",
        lambda: SandboxConfig(confine_native_reads_to=["rel"]),
    ),
    ("SandboxConfig.extra", lambda: SandboxConfig(extra={"x": object()})),
    ("roots", lambda: confine_reads_hook([])),
    # Confinement.
    ("PathMap.mounts", lambda: PathMap({"rel": "/w"})),
    ("host_path", lambda: PathMap({"/work": "/w"}).to_agent("/elsewhere")),
    ("agent_path", lambda: PathMap({"/work": "/w"}).to_host("w/x")),
    ("env_names", lambda: _docker().wrap(["x"], None, ["KEY=value"])),
    ("host_path", lambda: _docker().agent_path("rel")),
    # MCP servers.
    ("StdioMcpServer.name", lambda: StdioMcpServer("has space", "cmd")),
    ("StdioMcpServer.command", lambda: StdioMcpServer("s", "bin/server")),
    ("StdioMcpServer.args", lambda: StdioMcpServer("s", "cmd", args="--one")),
    ("StdioMcpServer.env", lambda: StdioMcpServer("s", "cmd", env={"A=B": "x"})),
    ("StdioMcpServer.tool_timeout", lambda: StdioMcpServer("s", "cmd", tool_timeout=0)),
    ("HttpMcpServer.url", lambda: HttpMcpServer("r", "ftp://host/x")),
    ("HttpMcpServer.transport", lambda: HttpMcpServer("r", "https://h/", "ws")),  # type: ignore[arg-type]
    ("HttpMcpServer.headers", lambda: HttpMcpServer("r", "https://h/", headers={"X": "a\nb"})),
    ("key_path", lambda: install_json_config("/nonexistent/c.json", (), {})),
    # Core value types.
    (
        "NativePermissions.writable_roots",
        lambda: NativePermissions(NativeMode.READ_ONLY, ("/tmp",)),
    ),
    ("NativePermissions.writable_roots", lambda: NativePermissions.workspace_write(["rel"])),
    ("RenewalBudget.max_turns", lambda: RenewalBudget(max_turns=0)),
    ("ProviderProfile.mcp_config_file", _profile_with_a_config_file_but_no_path),
    ("ModelSpec.id", lambda: ModelSpec("")),
    ("ModelSpec.context_window", lambda: ModelSpec("m", -1)),
    ("ModelTable.models", lambda: ModelTable(("m",))),  # type: ignore[arg-type]
    ("model_id", lambda: api_model_id(None)),  # type: ignore[arg-type]
    ("ModelPricing.input_per_mtok", lambda: ModelPricing(-1.0, 1.0)),
    ("PricingTable.prices", lambda: PricingTable("v", "d", {"m": 1.0})),  # type: ignore[dict-item]
    # Checkpoints and the session policy.
    ("checkpoint_key", lambda: validate_checkpoint_key("../up")),
    ("Checkpoint.session_id", lambda: Checkpoint("id with spaces")),
    ("Checkpoint.turns", lambda: Checkpoint("c", turns=-1)),
    ("data", lambda: Checkpoint.from_dict({"version": 99})),
    ("RetryPolicy.delays", lambda: RetryPolicy(delays=(30, -1))),
    ("RetryPolicy.jitter", lambda: RetryPolicy(jitter=1.0)),
    ("RetryPolicy.max_hint", lambda: RetryPolicy(max_hint=-5)),
    ("retry", lambda: RetryPolicy().delay(-1)),
    ("SessionPolicy.idle_release_after", lambda: SessionPolicy(idle_release_after=-1)),
    # Agent and Session.
    (
        "Agent.permissions",
        lambda: Agent(FakeTransport(), permissions="bypass", approvals=DENY),
    ),  # type: ignore[arg-type]
    ("Agent.approvals", lambda: Agent(FakeTransport(), permissions=BYPASS, approvals="deny")),  # type: ignore[arg-type]
    ("provider", lambda: Agent(42, permissions=BYPASS, approvals=DENY)),  # type: ignore[arg-type]
    (
        "env",
        lambda: Agent(FakeTransport(), permissions=BYPASS, approvals=DENY, env={"PATH": "/bin"}),
    ),
    ("checkpoint_key", _session_with_a_store_but_no_key),
]


@pytest.mark.parametrize(
    ("field", "build"), CASES, ids=[f"{n}-{field}" for n, (field, _) in enumerate(CASES)]
)
def test_bad_input_is_a_typed_error_that_names_the_field(
    field: str, build: Callable[[], object]
) -> None:
    with pytest.raises(AgentShimError) as caught:
        build()
    error = caught.value
    assert isinstance(error, InvalidRequestError)
    assert isinstance(error, ValueError)
    assert error.field == field
    assert error.problem
    # The message is what a caller reads: it names the parameter (the last part of the field).
    assert field.rsplit(".", 1)[-1] in str(error)
