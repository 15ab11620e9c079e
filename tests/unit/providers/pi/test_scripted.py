from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import FailureKind
from agentshim.core.events import (
    AgentEvent,
    AssistantText,
    Lifecycle,
    ToolCall,
    ToolResult,
    UsageReport,
)
from agentshim.core.usage import TokenUsage
from agentshim.providers.pi import scripted_lines
from agentshim.testing import (
    FakeExecutor,
    FakeRun,
    ScriptedTurn,
)
from agentshim.testing.scripted import ToolFailure
from tests.unit.providers.fixtures import SCRIPTED_TOOL_FAILURES, assert_parses_alike, load_capture

from ._captures import EXPECTED, parse


def normalized(events: list[AgentEvent]) -> list[AgentEvent]:
    """Events with the values a scripted turn cannot share with a recording made equal.

    A scripted turn is what Pi 1.x prints; Pi 0.73's recordings lack only its settle.
    """
    out: list[AgentEvent] = []
    for event in events:
        if event == Lifecycle("agent_settled", ""):
            continue
        if isinstance(event, ToolResult | ToolCall):
            event = dataclasses.replace(event, tool_id="id")
            if isinstance(event, ToolResult):
                event = dataclasses.replace(event, duration_s=None)
        elif isinstance(event, UsageReport):
            event = UsageReport(
                dataclasses.replace(event.usage, raw={}, model=None), event.cost_usd
            )
        out.append(event)
    return out


def agent_for(run: FakeRun) -> CliAgent:
    return CliAgent(
        "pi", executor=FakeExecutor(run, binaries={"pi": "/usr/bin/pi"}), env={"PATH": "/usr/bin"}
    )


class TestScriptedParsesLikeRecorded:
    def test_plain_turn(self) -> None:
        expected = EXPECTED["a_plain_text"]
        recorded, recorded_events = parse(load_capture("pi", "a_plain_text").stdout_lines)
        run = scripted_lines(
            ScriptedTurn(
                text=expected.text,
                session_id=expected.session_id,
                usage=TokenUsage(input_tokens=100, output_tokens=20),
            )
        )
        scripted, scripted_events = parse(run.stdout)
        assert normalized(scripted_events) == normalized(recorded_events)
        assert_parses_alike(scripted, recorded)
        assert recorded.cost_usd == 0.0

    def test_tool_turn(self) -> None:
        recorded, recorded_events = parse(load_capture("pi", "b_tool_bash").stdout_lines)
        run = scripted_lines(
            ScriptedTurn(
                text="Done.",
                session_id=recorded.session_id,
                tool_calls=[("bash", {"command": "echo hello"}, "hello\n")],
                usage=TokenUsage(input_tokens=100, output_tokens=20),
            )
        )
        scripted, scripted_events = parse(run.stdout)

        def shape(events: list[AgentEvent]) -> list[Any]:
            # The recorded model also said "I'll run echo." before its tool call; a scripted
            # tool request carries no text, so only the answer's text is compared.
            return [
                e if not isinstance(e, UsageReport) else UsageReport
                for e in normalized(events)
                if not isinstance(e, AssistantText) or e.text == "Done."
            ]

        assert shape(scripted_events) == shape(recorded_events)
        assert scripted.text == recorded.text == "Done."

    @pytest.mark.parametrize(("case", "tool", "args", "failure"), SCRIPTED_TOOL_FAILURES["pi"])
    def test_failed_tool_turn_prints_the_recorded_tool_frames(
        self, case: str, tool: str, args: dict[str, Any], failure: ToolFailure
    ) -> None:
        capture = load_capture("pi", case)
        run = scripted_lines(ScriptedTurn(text="x", tool_calls=[(tool, args, failure)]))

        def ends(lines: tuple[str, ...]) -> list[dict[str, Any]]:
            frames = [json.loads(line) for line in lines]
            found = [f for f in frames if f["type"] == "tool_execution_end"]
            found += [
                f["message"]
                for f in frames
                if f["type"] == "message_end" and f["message"]["role"] == "toolResult"
            ]
            for frame in found:
                frame.pop("toolCallId")
                frame.pop("timestamp", None)
                frame.pop("args", None)
                frame.pop("details", None)
                frame.pop("durationMs", None)  # how long the recorded tool ran
                frame.get("result", {}).pop("details", None)
            return found

        assert ends(run.stdout) == ends(capture.stdout_lines)

    def test_failed_turn_fails_like_a_recorded_one(self) -> None:
        run = scripted_lines(ScriptedTurn(session_id="s-9", returncode=1))
        scripted, scripted_events = parse(run.stdout)
        _, recorded_events = parse(load_capture("pi", "recorded-1.6.0/rec_http_401").stdout_lines)
        assert [type(e) for e in scripted_events] == [type(e) for e in recorded_events]
        assert scripted.error == "500 scripted failure (exit 1)"
        assert scripted.error_kind is FailureKind.TRANSIENT
        assert run.returncode == 1
