from __future__ import annotations

import pytest

from agentshim import Agent, ApprovalPolicy, CliAgent, NativePermissions
from agentshim.core.errors import CliExitError, ProviderCapabilityError
from agentshim.core.mcp import StdioMcpServer
from agentshim.providers.catalog import ProviderCatalog
from agentshim.providers.jsonl import JsonlProvider, harness_plugin, scripted_lines
from agentshim.testing import FakeExecutor, FakeRun, ScriptedTurn


def _fake(run: FakeRun) -> FakeExecutor:
    return FakeExecutor([run], binaries={"my-agent": "/usr/bin/my-agent"})


def test_a_cli_agent_runs_the_named_command_with_the_prompt_on_stdin() -> None:
    fake = _fake(FakeRun(stdout=['{"type":"message","text":"Done."}\n']))
    agent = CliAgent(JsonlProvider(binary="my-agent"), executor=fake, env={"PATH": "/usr/bin"})
    result = agent.run("fix it")
    assert result.text == "Done."
    assert fake.requests[-1].argv[0] == "/usr/bin/my-agent"
    assert fake.requests[-1].stdin == "fix it"


def test_an_agent_names_it_through_a_catalog() -> None:
    script = scripted_lines(ScriptedTurn(text="hi", session_id="h-9"))
    fake = _fake(FakeRun(stdout=list(script.stdout)))
    agent = Agent(
        "jsonl",
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        executor=fake,
        env={"PATH": "/usr/bin"},
        catalog=ProviderCatalog({"jsonl": harness_plugin("my-agent")}),
    )
    result = agent.start_session().turn("hello").result
    assert (result.text, result.session_id) == ("hi", "h-9")


def test_a_failed_harness_fails_the_turn() -> None:
    fake = _fake(FakeRun(stdout=[], stderr=["boom\n"], returncode=3))
    agent = CliAgent(JsonlProvider(binary="my-agent"), executor=fake, env={"PATH": "/usr/bin"})
    with pytest.raises(CliExitError):
        agent.run("x")


def test_mcp_servers_are_refused() -> None:
    with pytest.raises(ProviderCapabilityError, match="MCP"):
        JsonlProvider().install_mcp(None, [StdioMcpServer("s", "/bin/s")])
