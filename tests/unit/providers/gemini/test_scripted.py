from __future__ import annotations

import json
from typing import Any

import pytest

from agentshim.core.events import Stderr
from agentshim.providers.gemini import GeminiStreamParser, scripted_lines
from agentshim.testing import ScriptedTurn
from agentshim.testing.scripted import ToolFailure
from tests.unit.providers.fixtures import feed, load_capture


def kinds(lines: tuple[str, ...] | list[str]) -> list[str]:
    """Event kinds in order, a run of streamed text counted once (delta sizes vary)."""
    _, events = feed(GeminiStreamParser, lines)
    names = [type(e).__name__ for e in events if not isinstance(e, Stderr)]
    return [n for i, n in enumerate(names) if i == 0 or n != names[i - 1] or n != "AssistantText"]


def frames(lines: tuple[str, ...]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


# Recorded runs, and the scripted turn that answers the same way.
LIKE_RECORDINGS = {
    "plain": ScriptedTurn(text="Hello from the fake model.", session_id="s-1"),
    "tool_shell_yolo": ScriptedTurn(
        text="Done.",
        session_id="s-1",
        tool_calls=[("run_shell_command", {"command": "echo hello"}, "hello")],
    ),
}


class TestSameShapeAsRecordings:
    @pytest.mark.parametrize("name", LIKE_RECORDINGS)
    def test_a_scripted_turn_parses_like_the_recording(self, name: str) -> None:
        scripted = scripted_lines(LIKE_RECORDINGS[name])
        assert kinds(scripted.stdout) == kinds(load_capture("gemini", name).stdout_lines)

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
