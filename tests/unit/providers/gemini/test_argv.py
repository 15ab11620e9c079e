from __future__ import annotations

from pathlib import Path

import pytest

from agentshim import CliAgent
from agentshim.core.errors import (
    InvalidRequestError,
    InvalidSessionIdError,
    ProviderCapabilityError,
)
from agentshim.core.permissions import NativePermissions
from agentshim.core.provider import ArgvContext
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.providers.gemini import GeminiProvider, scripted_lines
from agentshim.testing import FakeExecutor, FakeRun, ScriptedTurn

BIN = "/usr/bin/gemini"


def argv(provider: GeminiProvider | None = None, **fields: object) -> list[str]:
    return (provider or GeminiProvider()).build_argv(ArgvContext(binary_path=BIN, **fields))  # type: ignore[arg-type]


class TestArgv:
    def test_default_is_stream_json_with_yolo(self) -> None:
        assert argv() == [BIN, "--output-format", "stream-json", "--yolo"]

    def test_model(self) -> None:
        assert argv(model="gemini-2.5-pro") == [
            BIN,
            "--output-format",
            "stream-json",
            "--model",
            "gemini-2.5-pro",
            "--yolo",
        ]

    def test_resume(self) -> None:
        assert argv(resume_session_id="0516902a-c752-4b12-ab4c-e4c301a72044") == [
            BIN,
            "--output-format",
            "stream-json",
            "--resume",
            "0516902a-c752-4b12-ab4c-e4c301a72044",
            "--yolo",
        ]

    def test_read_only_uses_plan_mode_instead_of_yolo(self) -> None:
        provider = GeminiProvider(permissions=NativePermissions.read_only())
        assert argv(provider) == [BIN, "--output-format", "stream-json", "--approval-mode", "plan"]

    def test_everything_in_order_extra_last(self) -> None:
        assert argv(
            model="gemini-2.5-flash",
            resume_session_id="abc-1",
            extra_args=("--debug", "--include-directories", "/tmp/x"),
        ) == [
            BIN,
            "--output-format",
            "stream-json",
            "--model",
            "gemini-2.5-flash",
            "--resume",
            "abc-1",
            "--yolo",
            "--debug",
            "--include-directories",
            "/tmp/x",
        ]

    def test_no_p_flag_the_prompt_is_on_stdin(self) -> None:
        assert "-p" not in argv()
        assert "--prompt" not in argv()


class TestRefused:
    def test_invalid_resume_id(self) -> None:
        with pytest.raises(InvalidSessionIdError):
            argv(resume_session_id="x; rm -rf /")

    @pytest.mark.parametrize("model", ["-p", "--yolo", "two words", ""])
    def test_model_that_would_read_as_a_flag(self, model: str) -> None:
        if model == "":
            assert "--model" not in argv(model=model)
            return
        with pytest.raises(InvalidRequestError, match="model"):
            argv(model=model)

    def test_workspace_write_has_no_gemini_mode(self) -> None:
        with pytest.raises(ProviderCapabilityError, match="workspace_write"):
            GeminiProvider(permissions=NativePermissions.workspace_write())

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
        fake = FakeExecutor(FakeRun(stdout=[]), binaries={"gemini": BIN})
        agent = CliAgent("gemini", executor=fake, env={"PATH": "/usr/bin"})
        with pytest.raises(ProviderCapabilityError, match=named):
            agent.run(TurnRequest("x", **fields))  # type: ignore[arg-type]
        assert fake.requests == []


class TestPromptOnStdinThroughTheAgent:
    def test_prompt_reaches_stdin_and_never_argv(self) -> None:
        run = scripted_lines(ScriptedTurn(text="hi", session_id="s-1"))
        fake = FakeExecutor(FakeRun(stdout=run.stdout), binaries={"gemini": BIN})
        agent = CliAgent("gemini", executor=fake, env={"PATH": "/usr/bin"}, model="gemini-2.5-pro")
        prompt = "SECRET-PROMPT-TEXT please"
        agent.run(TurnRequest(prompt, extra_args=("--debug",)))
        request = fake.requests[-1]
        assert request.stdin == prompt
        assert all("SECRET-PROMPT-TEXT" not in arg for arg in request.argv)
        assert list(request.argv) == [
            BIN,
            "--output-format",
            "stream-json",
            "--model",
            "gemini-2.5-pro",
            "--yolo",
            "--debug",
        ]

    def test_resumed_session_passes_resume(self) -> None:
        run = scripted_lines(ScriptedTurn(text="again", session_id="s-1"))
        fake = FakeExecutor(FakeRun(stdout=run.stdout), binaries={"gemini": BIN})
        agent = CliAgent("gemini", executor=fake, env={"PATH": "/usr/bin"})
        session = agent.start_session(session_id="s-1")
        result = session.turn("go on")
        assert list(fake.requests[-1].argv)[3:5] == ["--resume", "s-1"]
        assert result.resumed
