from __future__ import annotations

from agentshim import CliAgent
from agentshim.core.turn import TurnRequest
from agentshim.providers.opencode import OpencodeProvider, scripted_lines
from agentshim.testing import FakeExecutor, FakeRun, ScriptedTurn
from tests.unit.providers.fixtures import argv_builder

BIN = "/usr/bin/opencode"
BASE = [BIN, "run", "--format", "json"]


argv = argv_builder(OpencodeProvider, BIN)


class TestArgv:
    def test_default(self) -> None:
        assert argv() == [*BASE]

    def test_session_then_model_then_extra(self) -> None:
        assert argv(
            resume_session_id="ses_dd8a6cd86ffeX01SZ77MV3sIeY",
            model="fake/fake-model",
            extra_args=("--agent", "build"),
        ) == [
            *BASE,
            "--session",
            "ses_dd8a6cd86ffeX01SZ77MV3sIeY",
            "--model",
            "fake/fake-model",
            "--agent",
            "build",
        ]

    def test_options(self) -> None:
        provider = OpencodeProvider(thinking=True, auto_approve=True)
        assert argv(provider, model="anthropic/claude-sonnet-4-5") == [
            *BASE,
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--thinking",
            "--auto",
        ]

    def test_no_positional_message_and_no_separator(self) -> None:
        assert "--" not in argv(model="a/b")


class TestPromptOnStdinThroughTheAgent:
    def test_prompt_reaches_stdin_and_never_argv(self) -> None:
        run = scripted_lines(ScriptedTurn(text="hi", session_id="ses_1"))
        fake = FakeExecutor(FakeRun(stdout=run.stdout), binaries={"opencode": BIN})
        agent = CliAgent(
            "opencode", executor=fake, env={"PATH": "/usr/bin"}, model="fake/fake-model"
        )
        prompt = "SECRET-PROMPT-TEXT please"
        agent.run(TurnRequest(prompt))
        request = fake.requests[-1]
        assert request.stdin == prompt
        assert all("SECRET-PROMPT-TEXT" not in arg for arg in request.argv)
        assert list(request.argv) == [*BASE, "--model", "fake/fake-model"]
