from __future__ import annotations

import pytest

from agentshim import CliAgent
from agentshim.core.errors import (
    ProviderCapabilityError,
)
from agentshim.core.permissions import NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.providers.gemini import GeminiProvider, scripted_lines
from agentshim.testing import FakeExecutor, FakeRun, ScriptedTurn
from tests.unit.providers.fixtures import argv_builder

BIN = "/usr/bin/gemini"
BASE = [BIN, "--output-format", "stream-json"]


argv = argv_builder(GeminiProvider, BIN)


class TestArgv:
    def test_default_is_stream_json_with_yolo(self) -> None:
        assert argv() == [*BASE, "--yolo"]

    def test_model(self) -> None:
        assert argv(model="gemini-2.5-pro") == [
            *BASE,
            "--model",
            "gemini-2.5-pro",
            "--yolo",
        ]

    def test_resume(self) -> None:
        assert argv(resume_session_id="0516902a-c752-4b12-ab4c-e4c301a72044") == [
            *BASE,
            "--resume",
            "0516902a-c752-4b12-ab4c-e4c301a72044",
            "--yolo",
        ]

    def test_read_only_uses_plan_mode_instead_of_yolo(self) -> None:
        provider = GeminiProvider(permissions=NativePermissions.read_only())
        assert argv(provider) == [*BASE, "--approval-mode", "plan"]

    def test_everything_in_order_extra_last(self) -> None:
        assert argv(
            model="gemini-2.5-flash",
            resume_session_id="abc-1",
            extra_args=("--debug", "--include-directories", "/tmp/x"),
        ) == [
            *BASE,
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
    def test_an_empty_model_adds_no_model_flag(self) -> None:
        assert "--model" not in argv(model="")

    def test_workspace_write_has_no_gemini_mode(self) -> None:
        with pytest.raises(ProviderCapabilityError, match="workspace_write"):
            GeminiProvider(permissions=NativePermissions.workspace_write())


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
            *BASE,
            "--model",
            "gemini-2.5-pro",
            "--yolo",
            "--debug",
        ]
