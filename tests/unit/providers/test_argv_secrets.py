"""No secret an MCP server carries ever reaches a CLI's argv, which every local user can read.

Env values and HTTP header values go through a file only this user can read (Claude, Gemini,
opencode: the workspace config; Copilot: a private file named with ``@``) or through the CLI's
own environment by name (Codex: ``env_vars`` and ``env_http_headers``). Either way the server
must still get them; Pi has no MCP and refuses servers.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from agentshim import CliAgent, TurnRequest
from agentshim.core.errors import InvalidRequestError, ProviderCapabilityError
from agentshim.core.mcp import HttpMcpServer, McpServer, StdioMcpServer
from agentshim.execution.executor import CommandRequest
from agentshim.providers import get_plugin
from agentshim.testing import FakeExecutor, FakeRun, installed_mcp_servers, scripted_turn

ENV_SECRET = "env-secret-7f3a9c"
HEADER_SECRET = "Bearer header-secret-51d2e8"
URL_PASSWORD = "url-password-c0ffee"
URL_QUERY_KEY = "url-query-key-8d1b"
SECRETS = (ENV_SECRET, "header-secret-51d2e8")
WITH_MCP = ("claude", "codex", "copilot", "gemini", "opencode")
# Codex can only take a URL in argv, so it refuses these (see the test below).
URL_IN_A_FILE = ("claude", "copilot", "gemini", "opencode")


def _servers() -> tuple[McpServer, ...]:
    return (
        StdioMcpServer("gh", "/usr/bin/gh-mcp", ("--stdio",), env={"GH_MCP_TOKEN": ENV_SECRET}),
        HttpMcpServer("web", "https://mcp.example/x", headers={"Authorization": HEADER_SECRET}),
    )


def _run(
    provider: str, tmp_path: Path, servers: tuple[McpServer, ...], *, resume: bool = False
) -> list[tuple[CommandRequest, dict[str, dict[str, object]]]]:
    """Turns with ``servers``: each request, and the servers it installed, as the CLI saw them."""
    binary = get_plugin(provider).profile.binary
    seen: list[tuple[CommandRequest, dict[str, dict[str, object]]]] = []

    def serve(request: CommandRequest) -> FakeRun:
        seen.append((request, installed_mcp_servers(provider, request, tmp_path)))
        return scripted_turn(provider, text="ok", session_id="sess-1")

    executor = FakeExecutor(serve, binaries={binary: f"/usr/bin/{binary}"})
    agent = CliAgent(provider, executor=executor, env={"PATH": "/usr/bin"}, model="some-model")
    session = agent.start_session(cwd=str(tmp_path))
    request = TurnRequest("go", mcp_servers=servers, extra_args=("--extra",))
    session.turn(request)
    if resume:
        session.turn(request)
    return seen


@pytest.mark.parametrize("resume", [False, True], ids=["fresh", "resumed"])
@pytest.mark.parametrize("provider", WITH_MCP)
def test_no_env_or_header_value_is_ever_in_argv(
    provider: str, resume: bool, tmp_path: Path
) -> None:
    seen = _run(provider, tmp_path, _servers(), resume=resume)
    assert seen
    for request, _ in seen:
        for secret in SECRETS:
            assert not any(secret in arg for arg in request.argv), (secret, request.argv)


def _url_servers() -> tuple[McpServer, ...]:
    return (
        HttpMcpServer("userinfo", f"https://bot:{URL_PASSWORD}@mcp.example/v1"),
        HttpMcpServer("query", f"https://mcp.example/v1?api_key={URL_QUERY_KEY}"),
    )


@pytest.mark.parametrize("provider", URL_IN_A_FILE)
def test_credentials_in_a_url_are_never_in_argv(provider: str, tmp_path: Path) -> None:
    ((request, servers),) = _run(provider, tmp_path, _url_servers())
    for secret in (URL_PASSWORD, URL_QUERY_KEY):
        assert not any(secret in arg for arg in request.argv), (secret, request.argv)
    assert URL_PASSWORD in str(servers["userinfo"]["url"])
    assert URL_QUERY_KEY in str(servers["query"]["url"])


@pytest.mark.parametrize("server", _url_servers(), ids=lambda s: s.name)
def test_codex_refuses_a_url_with_credentials_and_names_the_header_way(
    server: McpServer,
) -> None:
    executor = FakeExecutor([], binaries={"codex": "/usr/bin/codex"})
    agent = CliAgent("codex", executor=executor, env={"PATH": "/usr/bin"})
    with pytest.raises(ProviderCapabilityError, match="header") as caught:
        agent.run(TurnRequest("go", mcp_servers=(server,)))
    assert URL_PASSWORD not in str(caught.value)
    assert URL_QUERY_KEY not in str(caught.value)
    assert executor.requests == []


def test_codex_still_takes_a_url_without_credentials(tmp_path: Path) -> None:
    seen: list[dict[str, dict[str, object]]] = []

    def serve(request: CommandRequest) -> FakeRun:
        seen.append(installed_mcp_servers("codex", request, tmp_path))
        return scripted_turn("codex", text="ok", session_id="sess-1")

    executor = FakeExecutor(serve, binaries={"codex": "/usr/bin/codex"})
    agent = CliAgent("codex", executor=executor, env={"PATH": "/usr/bin"})
    agent.run(TurnRequest("go", mcp_servers=(HttpMcpServer("plain", "https://mcp.example/v1"),)))
    assert seen == [{"plain": {"url": "https://mcp.example/v1", "transport": "http"}}]


@pytest.mark.parametrize(
    ("build", "secret"),
    [
        (lambda v: StdioMcpServer("gh", "/bin/gh", env={"TOKEN": v}), "tok-\0-5ecret"),
        (lambda v: StdioMcpServer("gh", "/bin/gh", env={"TOKEN": v}), "tok-\ud800-5ecret"),
        (lambda v: HttpMcpServer("w", "https://h/", headers={"Authorization": v}), "b\0-5ecret"),
        (
            lambda v: HttpMcpServer("w", "https://h/", headers={"Authorization": v}),
            "b-\udfff-5ecret",
        ),
    ],
    ids=["env-nul", "env-surrogate", "header-nul", "header-surrogate"],
)
def test_a_refused_value_is_named_by_its_key_never_shown(
    build: Callable[[str], McpServer], secret: str
) -> None:
    with pytest.raises(InvalidRequestError) as caught:
        build(secret)
    message = str(caught.value)
    assert "5ecret" not in message
    assert "TOKEN" in message or "Authorization" in message


def test_an_env_of_the_wrong_type_is_refused_without_its_values() -> None:
    with pytest.raises(InvalidRequestError) as caught:
        StdioMcpServer("gh", "/bin/gh", env=[("TOKEN", "tok-5ecret")])  # type: ignore[arg-type]
    assert "5ecret" not in str(caught.value)


def test_copilot_refuses_a_lone_surrogate_before_anything_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    executor = FakeExecutor([], binaries={"copilot": "/usr/bin/copilot"})
    agent = CliAgent("copilot", executor=executor, env={"PATH": "/usr/bin"})
    with pytest.raises(InvalidRequestError):
        agent.run(
            TurnRequest("go", mcp_servers=(StdioMcpServer("gh", "/bin/gh", env={"T": "t\ud800"}),))
        )
    assert list(tmp_path.iterdir()) == []
    assert executor.requests == []


@pytest.mark.parametrize("provider", WITH_MCP)
def test_the_servers_still_get_their_env_values(provider: str, tmp_path: Path) -> None:
    ((_, servers),) = _run(provider, tmp_path, _servers())
    assert servers["gh"]["env"] == {"GH_MCP_TOKEN": ENV_SECRET}


def test_codex_gets_the_values_in_its_own_environment(tmp_path: Path) -> None:
    ((request, _),) = _run("codex", tmp_path, _servers())
    assert request.env["GH_MCP_TOKEN"] == ENV_SECRET
    assert HEADER_SECRET in request.env.values()


def test_copilots_private_file_is_gone_after_the_turn(tmp_path: Path) -> None:
    ((request, _),) = _run("copilot", tmp_path, _servers())
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
