from __future__ import annotations

import json
from typing import Any

import pytest

from agentshim import CliAgent
from agentshim.core.errors import CliExitError, FailureKind, SessionResumeError
from agentshim.core.events import AgentEvent, Stderr, ToolKind, ToolResult
from agentshim.core.usage import TokenUsage
from agentshim.providers.gemini import GeminiStreamParser, resume_failure_lines, scripted_lines
from agentshim.testing import (
    FakeExecutor,
    FakeRun,
    ScriptedTurn,
    scripted_resume_failure,
    scripted_turn,
)
from agentshim.testing.scripted import ToolFailure
from tests.unit.providers.fixtures import load_capture

BIN = "/usr/bin/gemini"


def kinds(lines: tuple[str, ...] | list[str]) -> list[str]:
    """Event kinds in order, a run of streamed text counted once (delta sizes vary)."""
    events: list[AgentEvent] = []
    parser = GeminiStreamParser(events.append)
    for line in lines:
        parser.feed_stdout(line)
    parser.finish()
    names = [type(e).__name__ for e in events if not isinstance(e, Stderr)]
    return [n for i, n in enumerate(names) if i == 0 or n != names[i - 1] or n != "AssistantText"]


def frames(lines: tuple[str, ...]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


def agent(run: FakeRun) -> CliAgent:
    return CliAgent(
        "gemini", executor=FakeExecutor(run, binaries={"gemini": BIN}), env={"PATH": "/usr/bin"}
    )


class TestSameShapeAsRecordings:
    def test_plain_turn_parses_like_the_recording(self) -> None:
        scripted = scripted_lines(ScriptedTurn(text="Hello from the fake model.", session_id="s-1"))
        assert kinds(scripted.stdout) == kinds(load_capture("gemini", "plain").stdout_lines)

    def test_tool_turn_parses_like_the_recording(self) -> None:
        scripted = scripted_lines(
            ScriptedTurn(
                text="Done.",
                session_id="s-1",
                tool_calls=[("run_shell_command", {"command": "echo hello"}, "hello")],
            )
        )
        assert kinds(scripted.stdout) == kinds(
            load_capture("gemini", "tool_shell_yolo").stdout_lines
        )

    def test_failed_tool_turn_parses_like_the_recording(self) -> None:
        rec = load_capture("gemini", "tool_shell_failed")
        (recorded_frame,) = [f for f in frames(rec.stdout_lines) if f["type"] == "tool_result"]
        message = recorded_frame["error"]["message"]
        args = {"command": "ls", "dir_path": "/agentshim-missing-dir"}
        scripted = scripted_lines(
            ScriptedTurn(
                text="The tool failed.",
                session_id="s-1",
                tool_calls=[("run_shell_command", args, ToolFailure(message))],
            )
        )
        # The recording says "Running it." before the call; the scripted turn does not.
        recorded_kinds = kinds(rec.stdout_lines)
        assert recorded_kinds[1] == "AssistantText"
        assert kinds(scripted.stdout) == recorded_kinds[:1] + recorded_kinds[2:]
        (frame,) = [f for f in frames(scripted.stdout) if f["type"] == "tool_result"]
        assert set(frame) == set(recorded_frame)
        assert set(frame["error"]) == set(recorded_frame["error"])
        assert (frame["status"], frame["output"]) == ("error", recorded_frame["output"])
        assert f"Error executing tool run_shell_command: {message}\n" in rec.stderr_lines
        assert f"Error executing tool run_shell_command: {message}\n" in scripted.stderr

        def results(lines: tuple[str, ...]) -> list[tuple[object, ...]]:
            events: list[AgentEvent] = []
            parser = GeminiStreamParser(events.append)
            for line in lines:
                parser.feed_stdout(line)
            parser.finish()
            return [
                (e.tool, e.stdout, e.stderr, e.exit_code, e.kind)
                for e in events
                if isinstance(e, ToolResult)
            ]

        assert results(scripted.stdout) == results(rec.stdout_lines)
        assert results(scripted.stdout) == [("run_shell_command", "", message, 1, ToolKind.COMMAND)]

    def test_frames_carry_the_recorded_keys(self) -> None:
        scripted = frames(
            scripted_lines(
                ScriptedTurn(text="ok", tool_calls=[("glob", {"pattern": "*"}, "a")])
            ).stdout
        )
        recorded = {
            f["type"]: set(f)
            for f in frames(load_capture("gemini", "tool_shell_yolo").stdout_lines)
        }
        for frame in scripted:
            assert set(frame) == recorded[frame["type"]] or frame["type"] == "message"
        assert (
            scripted[-1]["stats"].keys()
            == frames(load_capture("gemini", "plain").stdout_lines)[-1]["stats"].keys()
        )

    def test_resume_failure_matches_the_recording(self) -> None:
        run = resume_failure_lines(session_id="00000000-0000-4000-8000-000000000000")
        rec = load_capture("gemini", "resume_missing")
        assert run.stdout == rec.stdout_lines == ()
        assert run.returncode == rec.exit_code == 42
        assert run.stderr[0] == rec.stderr_lines[0]


class TestRoundTrip:
    def test_text_session_and_usage(self) -> None:
        usage = TokenUsage(
            input_tokens=500,
            cache_read_input_tokens=200,
            output_tokens=90,
            reasoning_output_tokens=40,
            turns=1,
        )
        result = agent(scripted_turn("gemini", text="answer", session_id="sid", usage=usage)).run(
            "q"
        )
        assert (result.text, result.session_id) == ("answer", "sid")
        assert result.usage.tokens == usage

    def test_without_a_session_id_one_is_made_up(self) -> None:
        result = agent(scripted_turn("gemini", text="x")).run("q")
        assert result.session_id

    def test_structured_output_is_refused(self) -> None:
        with pytest.raises(ValueError, match="no native output schema"):
            scripted_lines(ScriptedTurn(structured_output={"a": 1}))

    @pytest.mark.parametrize(
        ("code", "kind"),
        [(244, FailureKind.TRANSIENT), (145, FailureKind.AUTH), (1, FailureKind.OTHER)],
    )
    def test_nonzero_returncode_fails_like_the_cli(self, code: int, kind: FailureKind) -> None:
        with pytest.raises(CliExitError) as caught:
            agent(scripted_turn("gemini", text="", returncode=code)).run("q")
        assert caught.value.returncode == code
        assert caught.value.kind is kind

    def test_resume_failure_through_a_session(self) -> None:
        session = agent(scripted_resume_failure("gemini", session_id="gone-1")).start_session(
            session_id="gone-1"
        )
        with pytest.raises(SessionResumeError) as caught:
            session.turn("q")
        assert caught.value.session_id == "gone-1"

    def test_resume_failure_on_a_fresh_turn_is_a_plain_exit_error(self) -> None:
        with pytest.raises(CliExitError) as caught:
            agent(scripted_resume_failure("gemini")).run("q")
        assert not isinstance(caught.value, SessionResumeError)
