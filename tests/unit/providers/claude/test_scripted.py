from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import CliExitError, FailureKind, SessionResumeError
from agentshim.core.events import AgentEvent, ToolCall, ToolKind, ToolResult
from agentshim.core.turn import OutputSchema, TurnRequest
from agentshim.core.usage import CostSource, TokenUsage
from agentshim.providers.claude import resume_failure_lines, scripted_lines
from agentshim.providers.claude.model_data import PRICING_TABLE
from agentshim.testing import (
    FakeExecutor,
    FakeRun,
    ScriptedTurn,
    scripted_resume_failure,
    scripted_turn,
)
from agentshim.testing.scripted import ToolFailure
from tests.unit.providers.fixtures import capture_names, load_capture

from ._captures import parse

BINARIES = {"claude": "/usr/bin/claude"}


def kinds(events: list[AgentEvent]) -> list[str]:
    return [type(e).__name__ for e in events]


def agent_for(run: FakeRun) -> CliAgent:
    return CliAgent(
        "claude", executor=FakeExecutor(run, binaries=BINARIES), env={"PATH": "/usr/bin"}
    )


def _result_fields(events: list[AgentEvent]) -> list[tuple[object, ...]]:
    return [
        (r.tool, r.stdout, r.stderr, r.exit_code, r.kind)
        for r in events
        if isinstance(r, ToolResult)
    ]


def _tool_result_frame(lines: Sequence[str]) -> dict[str, Any]:
    """The ``user`` frame answering the tool call, without the ids that differ per run."""
    (frame,) = [json.loads(line) for line in lines if json.loads(line)["type"] == "user"]
    block = dict(frame["message"]["content"][0])
    block.pop("tool_use_id")
    return {"block": block, "tool_use_result": frame["tool_use_result"], "keys": set(frame)}


def _recorded_keys() -> dict[tuple[str, str], set[str]]:
    keys: dict[tuple[str, str], set[str]] = defaultdict(set)
    for name in capture_names("claude"):
        for line in load_capture("claude", name).stdout_lines:
            frame = json.loads(line)
            keys[(frame["type"], frame.get("subtype", ""))].update(frame)
    return keys


class TestParsesLikeARecording:
    def test_text_turn_gives_the_same_events_as_a_recorded_one(self) -> None:
        recorded, recorded_events = parse(load_capture("claude", "a_plain_text").stdout_lines)
        run = scripted_lines(
            ScriptedTurn(text="Hello from the fake API. The secret word is PAPAYA.")
        )
        scripted, scripted_events = parse(run.stdout)
        assert kinds(scripted_events) == kinds(recorded_events)
        assert scripted.text == recorded.text
        assert scripted.usage is not None
        assert recorded.usage is not None
        assert scripted.usage.tokens == recorded.usage.tokens
        assert scripted.cost_usd == pytest.approx(recorded.cost_usd)
        assert scripted.context_tokens == recorded.context_tokens
        assert (scripted.error, scripted.error_kind) == (None, None)

    def test_tool_turn_gives_the_same_events_as_a_recorded_one(self) -> None:
        _, recorded_events = parse(load_capture("claude", "b_tool_bash").stdout_lines)
        call = ("Bash", {"command": "echo hello", "description": "Print hello"}, "hello")
        scripted, scripted_events = parse(
            scripted_lines(ScriptedTurn(text="Done.", tool_calls=[call])).stdout
        )
        # The recording opens with a sentence (after its call report) before the call; the
        # scripted turn does not.
        assert kinds(scripted_events) == [k for i, k in enumerate(kinds(recorded_events)) if i != 3]
        (tool_call,) = [e for e in scripted_events if isinstance(e, ToolCall)]
        (result,) = [e for e in scripted_events if isinstance(e, ToolResult)]
        assert (tool_call.tool, tool_call.args, tool_call.kind) == (
            "Bash",
            call[1],
            ToolKind.COMMAND,
        )
        assert (result.tool_id, result.stdout, result.exit_code) == (tool_call.tool_id, "hello", 0)
        assert scripted.text == "Done."

    @pytest.mark.parametrize(
        ("case", "call"),
        [
            (
                "b2_tool_bash_failed",
                (
                    "Bash",
                    {"command": "ls /agentshim-missing-dir"},
                    ToolFailure(
                        "ls: cannot access '/agentshim-missing-dir': No such file or directory",
                        exit_code=2,
                    ),
                ),
            ),
            (
                "b3_tool_read_failed",
                (
                    "Read",
                    {"file_path": "/agentshim-missing-dir/x.txt"},
                    ToolFailure(
                        "File does not exist. Note: your current working directory is "
                        "/home/user/work."
                    ),
                ),
            ),
        ],
    )
    def test_failed_tool_turn_gives_the_same_frames_and_events_as_a_recorded_one(
        self, case: str, call: tuple[str, dict[str, Any], str]
    ) -> None:
        recording = load_capture("claude", case)
        recorded, recorded_events = parse(recording.stdout_lines)
        run = scripted_lines(ScriptedTurn(text=recorded.text, tool_calls=[call]))
        scripted, scripted_events = parse(run.stdout)
        assert _tool_result_frame(run.stdout) == _tool_result_frame(recording.stdout_lines)
        # The recording opens with a sentence (after its call report) before the call; the
        # scripted turn does not.
        assert kinds(scripted_events) == [k for i, k in enumerate(kinds(recorded_events)) if i != 3]
        assert _result_fields(scripted_events) == _result_fields(recorded_events)
        (result,) = [e for e in scripted_events if isinstance(e, ToolResult)]
        assert result.failed
        assert result.stdout == ""
        assert call[2] in result.stderr
        assert (scripted.text, scripted.error) == (recorded.text, None)

    def test_schema_turn_parses_like_the_recorded_one(self) -> None:
        recorded, recorded_events = parse(
            load_capture("claude", "f_json_schema").stdout_lines, expect_structured=True
        )
        payload = {"name": "Alice", "age": 30}
        scripted, scripted_events = parse(
            scripted_lines(ScriptedTurn(structured_output=payload)).stdout, expect_structured=True
        )
        assert [k for k in kinds(scripted_events) if k != "Lifecycle"] == [
            k for k in kinds(recorded_events) if k != "Lifecycle"
        ]
        assert scripted.structured_output == recorded.structured_output == payload
        assert scripted.text == recorded.text

    def test_frames_use_only_fields_the_cli_prints(self) -> None:
        recorded = _recorded_keys()
        runs = [
            scripted_lines(ScriptedTurn(text="a", tool_calls=[("Read", {"file_path": "/x"}, "y")])),
            scripted_lines(
                ScriptedTurn(text="a", tool_calls=[("Bash", {"command": "x"}, ToolFailure("n"))])
            ),
            scripted_lines(ScriptedTurn(structured_output={"a": 1})),
            scripted_lines(ScriptedTurn(text="bad", returncode=1)),
            resume_failure_lines(session_id="abc"),
        ]
        for run in runs:
            for line in run.stdout:
                assert line.endswith("\n")
                frame = json.loads(line)
                key = (frame["type"], frame.get("subtype", ""))
                assert key in recorded, key
                assert set(frame) <= recorded[key] | {"structured_output", "errors"}


TOKEN_USAGES = st.builds(
    lambda uncached, read, write, write_1h_share, out, turns: TokenUsage(
        input_tokens=uncached + read + write,
        cache_read_input_tokens=read,
        cache_write_input_tokens=write,
        cache_write_1h_input_tokens=min(write, write_1h_share),
        output_tokens=out,
        turns=turns,
    ),
    st.integers(0, 10**7),
    st.integers(0, 10**7),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.integers(0, 50),
)


class TestRoundTrip:
    @settings(max_examples=100)
    @given(TOKEN_USAGES)
    def test_usage_parses_back_exactly(self, usage: TokenUsage) -> None:
        turn, _ = parse(scripted_lines(ScriptedTurn(text="x", usage=usage)).stdout)
        assert turn.usage is not None
        assert turn.usage.tokens == usage
        assert turn.usage.cost_source is CostSource.REPORTED
        assert turn.cost_usd == pytest.approx(PRICING_TABLE.cost("claude-opus-4-8", usage))

    @settings(max_examples=100)
    @given(st.text(min_size=1), st.lists(st.tuples(st.text(min_size=1), st.text()), max_size=3))
    def test_text_and_tool_output_survive(self, text: str, calls: list[tuple[str, str]]) -> None:
        tool_calls = [(name, {"arg": output}, output) for name, output in calls]
        turn, events = parse(scripted_lines(ScriptedTurn(text=text, tool_calls=tool_calls)).stdout)
        assert turn.text == text
        assert [(c.tool, c.args) for c in events if isinstance(c, ToolCall)] == [
            (name, args) for name, args, _ in tool_calls
        ]
        assert [r.stdout for r in events if isinstance(r, ToolResult)] == [
            o for _, _, o in tool_calls
        ]

    def test_session_id_is_kept_or_made_up_deterministically(self) -> None:
        assert (
            parse(scripted_lines(ScriptedTurn(session_id="sess-1")).stdout)[0].session_id
            == "sess-1"
        )
        made_up = parse(scripted_lines(ScriptedTurn(text="t")).stdout)[0].session_id
        assert made_up is not None
        assert made_up == parse(scripted_lines(ScriptedTurn(text="t")).stdout)[0].session_id

    def test_unencodable_structured_output_is_refused(self) -> None:
        with pytest.raises(ValueError, match="structured_output"):
            scripted_lines(ScriptedTurn(structured_output={"when": object()}))

    def test_non_object_payload_is_still_the_structured_output(self) -> None:
        turn, _ = parse(
            scripted_lines(ScriptedTurn(structured_output=[1, 2])).stdout, expect_structured=True
        )
        assert turn.structured_output == [1, 2]


class TestThroughTheAgent:
    def test_scripted_turn_runs_through_cli_agent(self, tmp_path: Any) -> None:
        run = scripted_turn(
            "claude",
            text="done",
            session_id="s-1",
            usage=TokenUsage(input_tokens=50, output_tokens=5, turns=1),
            tool_calls=[("Edit", {"file_path": "/a"}, "ok")],
        )
        result = agent_for(run).run("edit it")
        assert (result.text, result.session_id) == ("done", "s-1")
        assert result.usage.tokens == TokenUsage(input_tokens=50, output_tokens=5, turns=1)

    def test_structured_output_through_cli_agent(self, tmp_path: Any) -> None:
        run = scripted_turn("claude", structured_output={"ok": True})
        schema = OutputSchema(
            {"type": "object", "properties": {"ok": {"type": "boolean"}}}, tmp_path
        )
        result = agent_for(run).run(TurnRequest("answer", output_schema=schema))
        assert result.structured_output == {"ok": True}

    def test_nonzero_returncode_fails_the_turn(self) -> None:
        with pytest.raises(CliExitError) as info:
            agent_for(scripted_turn("claude", text="it broke", returncode=1)).run("go")
        assert not isinstance(info.value, SessionResumeError)
        assert info.value.kind is FailureKind.OTHER
        assert info.value.detail == "it broke"

    def test_resume_failure_is_a_session_resume_error(self) -> None:
        agent = agent_for(scripted_resume_failure("claude", session_id="ignored-in-text"))
        session = agent.start_session(session_id="0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966")
        with pytest.raises(SessionResumeError) as info:
            session.turn("continue")
        assert info.value.session_id == "0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966"
        assert session.session_id == "0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966"

    def test_resume_failure_matches_the_recording(self) -> None:
        recorded = load_capture("claude", "d_resume_missing_uuid")
        session_id = "1c37e53a-67c2-4843-942e-8dc057b7f6aa"
        run = resume_failure_lines(session_id=session_id)
        assert run.returncode == recorded.exit_code
        assert run.stderr == recorded.stderr_lines
        scripted_turn_, scripted_events = parse(run.stdout, run.stderr)
        recorded_turn, recorded_events = parse(recorded.stdout_lines, recorded.stderr_lines)
        assert kinds(scripted_events) == kinds(recorded_events)
        assert (scripted_turn_.error, scripted_turn_.error_kind, scripted_turn_.session_id) == (
            recorded_turn.error,
            recorded_turn.error_kind,
            recorded_turn.session_id,
        )
