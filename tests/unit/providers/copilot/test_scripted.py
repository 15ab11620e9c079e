from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import FailureKind
from agentshim.core.events import AgentEvent, SessionStarted, ToolResult, UsageReport
from agentshim.providers.copilot import scripted_lines
from agentshim.testing import (
    FakeExecutor,
    FakeRun,
    ScriptedTurn,
)
from agentshim.testing.scripted import ToolFailure
from tests.unit.providers.fixtures import SCRIPTED_TOOL_FAILURES, assert_parses_alike, load_capture

from ._captures import EXPECTED, parse

RECORDED_SID = EXPECTED["tool_shell"].session_id or ""


def normalized(events: list[AgentEvent]) -> list[AgentEvent]:
    """Events with the values a scripted turn cannot share with a recording made equal."""
    out: list[AgentEvent] = []
    for event in events:
        if isinstance(event, ToolResult):
            event = dataclasses.replace(event, tool_id="id", duration_s=None)
        elif isinstance(event, UsageReport):
            event = UsageReport(
                dataclasses.replace(event.usage, raw={}, model=None), event.cost_usd
            )
        elif hasattr(event, "tool_id"):
            event = dataclasses.replace(event, tool_id="id")  # type: ignore[type-var]
        out.append(event)
    return out


def agent_for(run: FakeRun) -> CliAgent:
    return CliAgent(
        "copilot",
        executor=FakeExecutor(run, binaries={"copilot": "/usr/bin/copilot"}),
        env={"PATH": "/usr/bin"},
    )


class TestScriptedParsesLikeRecorded:
    def test_plain_turn(self) -> None:
        recorded, recorded_events = parse(load_capture("copilot", "plain").stdout_lines)
        run = scripted_lines(
            ScriptedTurn(text="Hello from the fake model.", session_id=recorded.session_id)
        )
        scripted, scripted_events = parse(run.stdout)
        assert normalized(scripted_events) == normalized(recorded_events)
        assert_parses_alike(scripted, recorded)
        assert recorded.usage is not None
        assert recorded.usage.increment_known is False

    def test_tool_turn(self) -> None:
        recorded, recorded_events = parse(load_capture("copilot", "tool_shell").stdout_lines)
        run = scripted_lines(
            ScriptedTurn(
                text="Done.",
                session_id=RECORDED_SID,
                tool_calls=[
                    ("bash", {"command": "echo hello", "description": "Run echo hello"}, "hello\n")
                ],
            )
        )
        scripted, scripted_events = parse(run.stdout)
        assert normalized(scripted_events) == normalized(recorded_events)
        assert scripted.text == recorded.text == "Done."

    @pytest.mark.parametrize(("case", "tool", "args", "failure"), SCRIPTED_TOOL_FAILURES["copilot"])
    def test_failed_tool_turn_prints_the_recorded_completion(
        self, case: str, tool: str, args: dict[str, Any], failure: ToolFailure
    ) -> None:
        capture = load_capture("copilot", case)
        run = scripted_lines(ScriptedTurn(text="x", tool_calls=[(tool, args, failure)]))

        def completion(lines: tuple[str, ...]) -> dict[str, Any]:
            (frame,) = [
                json.loads(line)
                for line in lines
                if json.loads(line)["type"] == "tool.execution_complete"
            ]
            return frame["data"]

        ours, theirs = completion(run.stdout), completion(capture.stdout_lines)
        assert set(ours) <= set(theirs)
        for key in ("shellExecution", "success", "result", "error"):
            assert ours.get(key) == theirs.get(key), key

    def test_failed_turn_fails_like_a_recorded_one(self) -> None:
        run = scripted_lines(ScriptedTurn(text="", session_id="s-9", returncode=1))
        parsed, _ = parse(run.stdout)
        recorded, _ = parse(load_capture("copilot", "api_500").stdout_lines)
        assert parsed.error == "scripted failure (exit 1)"
        assert parsed.error_kind is FailureKind.OTHER
        assert (parsed.session_id, run.returncode) == ("s-9", 1)
        assert recorded.error is not None


class TestScriptedOptions:
    def test_no_usage_means_unknown(self) -> None:
        parsed, _ = parse(scripted_lines(ScriptedTurn(text="x")).stdout)
        assert parsed.usage is not None
        assert not parsed.usage.increment_known

    def test_session_started_comes_with_the_result_line(self) -> None:
        _, events = parse(scripted_lines(ScriptedTurn(text="x", session_id="s")).stdout)
        assert events[-2:-1] == [SessionStarted("s")]
