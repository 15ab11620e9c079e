from __future__ import annotations

import json
from typing import Any

import pytest

from agentshim.core.events import Stderr
from agentshim.providers.opencode import OpencodeStreamParser, scripted_lines
from agentshim.testing import ScriptedTurn
from agentshim.testing.scripted import ToolFailure
from tests.unit.providers.fixtures import SCRIPTED_TOOL_FAILURES, feed, load_capture


def kinds(lines: tuple[str, ...] | list[str]) -> list[str]:
    _, events = feed(OpencodeStreamParser, lines)
    return [type(e).__name__ for e in events if not isinstance(e, Stderr)]


def frames(lines: tuple[str, ...]) -> list[dict[str, Any]]:
    return [json.loads(line) for line in lines]


class TestSameShapeAsRecordings:
    def test_plain_turn_parses_like_the_recording(self) -> None:
        assert kinds(scripted_lines(ScriptedTurn(text="hi", session_id="ses_1")).stdout) == kinds(
            load_capture("opencode", "plain").stdout_lines
        )

    def test_tool_turn_parses_like_the_recording(self) -> None:
        scripted = scripted_lines(
            ScriptedTurn(
                text="Done.",
                session_id="ses_1",
                tool_calls=[("bash", {"command": "echo hello"}, "hello\n")],
            )
        )
        assert kinds(scripted.stdout) == kinds(load_capture("opencode", "tool_shell").stdout_lines)

    def test_frames_carry_the_recorded_keys(self) -> None:
        scripted = frames(
            scripted_lines(
                ScriptedTurn(text="ok", tool_calls=[("bash", {"command": "x"}, "y")])
            ).stdout
        )
        recorded = frames(load_capture("opencode", "tool_shell").stdout_lines)
        assert [f["type"] for f in scripted] == [f["type"] for f in recorded]
        for mine, theirs in zip(scripted, recorded, strict=True):
            assert set(mine) == set(theirs)
            assert set(mine["part"]) == set(theirs["part"])
            if mine["type"] == "tool_use":
                assert set(mine["part"]["state"]) == set(theirs["part"]["state"])

    @pytest.mark.parametrize(
        ("case", "tool", "args", "failure"), SCRIPTED_TOOL_FAILURES["opencode"]
    )
    def test_failed_tool_turn_parses_like_the_recording(
        self, case: str, tool: str, args: dict[str, Any], failure: ToolFailure
    ) -> None:
        rec = load_capture("opencode", case)
        scripted = scripted_lines(
            ScriptedTurn(text="The tool failed.", tool_calls=[(tool, args, failure)])
        )

        def state(lines: tuple[str, ...]) -> dict[str, Any]:
            (frame,) = [f for f in frames(lines) if f["type"] == "tool_use"]
            # The time differs per run; opencode titles a shell call with its command.
            return {k: v for k, v in frame["part"]["state"].items() if k not in ("time", "title")}

        assert state(scripted.stdout) == state(rec.stdout_lines)
        # The recording says "Running it." before the call; the scripted turn does not.
        recorded_kinds = kinds(rec.stdout_lines)
        recorded_kinds.remove("AssistantText")
        assert kinds(scripted.stdout) == recorded_kinds
