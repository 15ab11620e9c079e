from __future__ import annotations

from pathlib import Path

import pytest

from agentshim import CliAgent
from agentshim.core.errors import (
    InvalidRequestError,
    InvalidSessionIdError,
    ProviderCapabilityError,
)
from agentshim.core.provider import ArgvContext
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.providers.opencode import OpencodeProvider, scripted_lines
from agentshim.testing import FakeExecutor, FakeRun, ScriptedTurn

BIN = "/usr/bin/opencode"


def argv(provider: OpencodeProvider | None = None, **fields: object) -> list[str]:
    return (provider or OpencodeProvider()).build_argv(ArgvContext(binary_path=BIN, **fields))  # type: ignore[arg-type]


class TestArgv:
    def test_default(self) -> None:
        assert argv() == [BIN, "run", "--format", "json"]

    def test_session_then_model_then_extra(self) -> None:
        assert argv(
            resume_session_id="ses_dd8a6cd86ffeX01SZ77MV3sIeY",
            model="fake/fake-model",
            extra_args=("--agent", "build"),
        ) == [
            BIN,
            "run",
            "--format",
            "json",
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
            BIN,
            "run",
            "--format",
            "json",
            "--model",
            "anthropic/claude-sonnet-4-5",
            "--thinking",
            "--auto",
        ]

    def test_no_positional_message_and_no_separator(self) -> None:
        assert "--" not in argv(model="a/b")


class TestRefused:
    def test_invalid_session_id(self) -> None:
        with pytest.raises(InvalidSessionIdError):
            argv(resume_session_id="ses x")

    @pytest.mark.parametrize("model", ["-m", "--format", "a b"])
    def test_model_that_would_read_as_a_flag(self, model: str) -> None:
        with pytest.raises(InvalidRequestError, match="model"):
            argv(model=model)

    @pytest.mark.parametrize(
        ("fields", "named"),
        [
            ({"output_schema": OutputSchema({"type": "object"}, Path("/tmp"))}, "output_schema"),
            ({"reasoning_effort": "high"}, "reasoning_effort"),
        ],
    )
    def test_schema_and_reasoning_effort_are_refused_before_anything_runs(
        self, fields: dict[str, object], named: str
    ) -> None:
        fake = FakeExecutor(FakeRun(stdout=[]), binaries={"opencode": BIN})
        agent = CliAgent("opencode", executor=fake, env={"PATH": "/usr/bin"})
        with pytest.raises(ProviderCapabilityError, match=named):
            agent.run(TurnRequest("x", **fields))  # type: ignore[arg-type]
        assert fake.requests == []


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
        assert list(request.argv) == [BIN, "run", "--format", "json", "--model", "fake/fake-model"]

    def test_resumed_session_passes_session(self) -> None:
        run = scripted_lines(ScriptedTurn(text="again", session_id="ses_1"))
        fake = FakeExecutor(FakeRun(stdout=run.stdout), binaries={"opencode": BIN})
        agent = CliAgent("opencode", executor=fake, env={"PATH": "/usr/bin"})
        result = agent.start_session(session_id="ses_1").turn("go on")
        assert list(fake.requests[-1].argv) == [
            BIN,
            "run",
            "--format",
            "json",
            "--session",
            "ses_1",
        ]
        assert result.resumed
