"""No secret an MCP server carries ever reaches a CLI's argv, which every local user can read.

Env values and HTTP header values go through a file only this user can read (Claude, Gemini,
opencode: the workspace config; Copilot: a private file named with ``@``) or through the CLI's
own environment by name (Codex: ``env_vars`` and ``env_http_headers``). Either way the server
must still get them; Pi has no MCP and refuses servers.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from agentshim import CliAgent, TurnRequest
from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.mcp import HttpMcpServer, McpServer, StdioMcpServer
from agentshim.execution.executor import CommandRequest
from agentshim.providers import get_plugin
from agentshim.testing import FakeExecutor, FakeRun, installed_mcp_servers, scripted_turn

ENV_SECRET = "env-secret-7f3a9c"
HEADER_SECRET = "Bearer header-secret-51d2e8"
SECRETS = (ENV_SECRET, "header-secret-51d2e8")
WITH_MCP = ("claude", "codex", "copilot", "gemini", "opencode")


def _servers() -> tuple[McpServer, ...]:
    return (
        StdioMcpServer("gh", "/usr/bin/gh-mcp", ("--stdio",), env={"GH_MCP_TOKEN": ENV_SECRET}),
        HttpMcpServer("web", "https://mcp.example/x", headers={"Authorization": HEADER_SECRET}),
    )


def _run(
    provider: str, tmp_path: Path, *, resume: bool
) -> list[tuple[CommandRequest, dict[str, dict[str, object]]]]:
    binary = get_plugin(provider).profile.binary
    seen: list[tuple[CommandRequest, dict[str, dict[str, object]]]] = []

    def serve(request: CommandRequest) -> FakeRun:
        seen.append((request, installed_mcp_servers(provider, request, tmp_path)))
        return scripted_turn(provider, text="ok", session_id="sess-1")

    executor = FakeExecutor(serve, binaries={binary: f"/usr/bin/{binary}"})
    agent = CliAgent(provider, executor=executor, env={"PATH": "/usr/bin"}, model="some-model")
    session = agent.start_session(cwd=str(tmp_path))
    request = TurnRequest("go", mcp_servers=_servers(), extra_args=("--extra",))
    session.turn(request)
    if resume:
        session.turn(request)
    return seen


@pytest.mark.parametrize("resume", [False, True], ids=["fresh", "resumed"])
@pytest.mark.parametrize("provider", WITH_MCP)
def test_no_env_or_header_value_is_ever_in_argv(
    provider: str, resume: bool, tmp_path: Path
) -> None:
    seen = _run(provider, tmp_path, resume=resume)
    assert seen
    for request, _ in seen:
        for secret in SECRETS:
            assert not any(secret in arg for arg in request.argv), (secret, request.argv)


@pytest.mark.parametrize("provider", WITH_MCP)
def test_the_servers_still_get_their_env_values(provider: str, tmp_path: Path) -> None:
    ((_, servers),) = _run(provider, tmp_path, resume=False)
    assert servers["gh"]["env"] == {"GH_MCP_TOKEN": ENV_SECRET}


def test_codex_gets_the_values_in_its_own_environment(tmp_path: Path) -> None:
    ((request, _),) = _run("codex", tmp_path, resume=False)
    assert request.env["GH_MCP_TOKEN"] == ENV_SECRET
    assert HEADER_SECRET in request.env.values()


def test_copilots_private_file_is_gone_after_the_turn(tmp_path: Path) -> None:
    ((request, _),) = _run("copilot", tmp_path, resume=False)
    (named,) = [arg for arg in request.argv if arg.startswith("@")]
    assert not Path(named[1:]).exists()


def test_a_variable_the_cli_env_sets_otherwise_is_refused_before_anything_runs() -> None:
    executor = FakeExecutor([], binaries={"codex": "/usr/bin/codex"})
    agent = CliAgent("codex", executor=executor, env={"PATH": "/usr/bin", "GH_MCP_TOKEN": "x"})
    with pytest.raises(ProviderCapabilityError, match="GH_MCP_TOKEN"):
        agent.run(TurnRequest("go", mcp_servers=_servers()[:1]))
    assert executor.requests == []


def test_pi_refuses_servers_rather_than_dropping_them() -> None:
    executor = FakeExecutor([], binaries={"pi": "/usr/bin/pi"})
    agent = CliAgent("pi", executor=executor, env={"PATH": "/usr/bin"})
    with pytest.raises(ProviderCapabilityError, match="MCP"):
        agent.run(TurnRequest("go", mcp_servers=_servers()))
    assert executor.requests == []
