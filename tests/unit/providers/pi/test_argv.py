from __future__ import annotations

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.mcp import StdioMcpServer
from agentshim.core.turn import TurnRequest
from agentshim.providers.pi import PiProvider, scripted_lines
from agentshim.providers.pi.provider import THINKING_LEVELS
from agentshim.testing import FakeExecutor, FakeRun, ScriptedTurn
from tests.unit.providers.fixtures import argv_builder, load_capture

BINARY = "/usr/bin/pi"
BASE = [BINARY, "--print", "--mode", "json"]
SID = "01a2275a-1c2a-72ae-8ced-4a8fdca01c2e"


argv = argv_builder(PiProvider, BINARY)


class TestArgv:
    @pytest.mark.parametrize(
        ("fields", "added"),
        [
            ({}, []),
            ({"resume_session_id": "01a2275a"}, ["--session", "01a2275a"]),
            *(({"reasoning_effort": level}, ["--thinking", level]) for level in THINKING_LEVELS),
        ],
    )
    def test_each_option_alone(self, fields: dict[str, str], added: list[str]) -> None:
        # A partial session id is passed as given: Pi resolves it to the whole one.
        assert argv(**fields) == [*BASE, *added]

    def test_every_option_in_order(self) -> None:
        built = argv(
            PiProvider(provider="anthropic"),
            model="claude-sonnet-4-5",
            reasoning_effort="high",
            resume_session_id=SID,
            extra_args=("--no-context-files",),
        )
        assert built == [
            *BASE,
            "--provider",
            "anthropic",
            "--model",
            "claude-sonnet-4-5",
            "--thinking",
            "high",
            "--session",
            SID,
            "--no-context-files",
        ]

    def test_matches_the_recorded_invocation(self) -> None:
        recorded = load_capture("pi", "c_resume_full_id").argv
        built = argv(PiProvider(provider="fake"), model="claude-fake-1", resume_session_id=SID)
        assert built[1:] == list(recorded[1:])

    def test_unknown_thinking_level_is_refused(self) -> None:
        with pytest.raises(ProviderCapabilityError, match="thinking level"):
            argv(reasoning_effort="ultra")

    def test_mcp_servers_are_refused(self) -> None:
        with pytest.raises(ProviderCapabilityError, match="MCP"):
            PiProvider().install_mcp(None, [StdioMcpServer("s", "python3")])
        assert tuple(PiProvider().install_mcp(None, []).argv) == ()


class TestPromptOnStdin:
    def test_recordings_pass_the_prompt_on_stdin_only(self) -> None:
        capture = load_capture("pi", "a_plain_text")
        assert capture.stdin == "Say hello and tell me a secret word."
        assert not any(capture.stdin in arg for arg in capture.argv)

    def test_prompt_goes_to_stdin_never_argv(self) -> None:
        run = scripted_lines(ScriptedTurn(text="ok", session_id="s-1"))
        executor = FakeExecutor(
            FakeRun(run.stdout, run.stderr, run.returncode), binaries={"pi": BINARY}
        )
        agent = CliAgent(
            PiProvider(provider="anthropic"), executor=executor, env={"PATH": "/usr/bin"}
        )
        prompt = "-PROMPT-91c: starts with a dash --session x"
        agent.run(TurnRequest(prompt))
        (request,) = executor.requests
        assert request.stdin == prompt
        assert not any("PROMPT-91c" in arg for arg in request.argv)
        assert list(request.argv) == [*BASE, "--provider", "anthropic"]

    def test_env_defaults_are_added_where_the_caller_did_not_set_them(self) -> None:
        run = scripted_lines(ScriptedTurn(text="ok"))
        executor = FakeExecutor(FakeRun(run.stdout), binaries={"pi": BINARY})
        agent = CliAgent("pi", executor=executor, env={"PATH": "/usr/bin", "CI": "0"})
        agent.run("hi")
        env = executor.requests[0].env
        assert env["NO_COLOR"] == "1"
        assert env["CI"] == "0"
        assert dict(PiProvider.env_defaults) == {"NO_COLOR": "1", "CI": "1"}
