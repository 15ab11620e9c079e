from __future__ import annotations

import json
from typing import Any, cast

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.core import events as ev
from agentshim.core.errors import FailureKind
from agentshim.core.turn import ParsedTurn
from agentshim.core.usage import CostSource, TokenUsage
from agentshim.providers.opencode import OpencodeStreamParser
from tests.unit.providers.adversarial import json_values, never_raises
from tests.unit.providers.fixtures import capture_names, feed, load_capture, token_counts

SID = "ses_dd8a6cd86ffeX01SZ77MV3sIeY"
# The recorded API errors: the kind of failure each is, and a phrase of its message.
API_ERRORS = {
    "api_400_context_length": (FailureKind.CONTEXT_OVERFLOW, "context window"),
    "api_401": (FailureKind.AUTH, "Incorrect API key provided"),
    "api_500": (FailureKind.TRANSIENT, "fake error 500"),
}


def parse(
    stdout: list[str] | tuple[str, ...], stderr: list[str] | tuple[str, ...] = ()
) -> tuple[ParsedTurn, list[ev.AgentEvent]]:
    return feed(OpencodeStreamParser, stdout, stderr)


def frame(kind: str, **part: Any) -> str:
    return json.dumps({"type": kind, "timestamp": 1, "sessionID": SID, "part": part}) + "\n"


def step_finish(reason: str = "stop", cost: float | None = 0.0, **tokens: Any) -> str:
    base = {"total": 0, "input": 0, "output": 0, "reasoning": 0, "cache": {"write": 0, "read": 0}}
    part: dict[str, Any] = {"reason": reason, "type": "step-finish", "tokens": {**base, **tokens}}
    if cost is not None:
        part["cost"] = cost
    return frame("step_finish", **part)


def error(name: str, **data: Any) -> str:
    return (
        json.dumps(
            {
                "type": "error",
                "timestamp": 1,
                "sessionID": SID,
                "error": {"name": name, "data": data},
            }
        )
        + "\n"
    )


def tool(status: str, tool_name: str = "bash", call_id: str = "c1", **state: Any) -> str:
    return frame(
        "tool_use", type="tool", tool=tool_name, callID=call_id, state={"status": status, **state}
    )


def of(events: list[ev.AgentEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def turn_reports(events: list[ev.AgentEvent]) -> list[ev.UsageReport]:
    """The turn's own usage reports (each step's call report comes before them)."""
    return [e for e in events if isinstance(e, ev.UsageReport) and e.scope is ev.UsageScope.TURN]


def call_reports(events: list[ev.AgentEvent]) -> list[ev.UsageReport]:
    return [e for e in events if isinstance(e, ev.UsageReport) and e.scope is ev.UsageScope.CALL]


class TestRecordedStreams:
    def test_every_recording_is_covered(self) -> None:
        assert capture_names("opencode") == [
            "api_400_context_length",
            "api_401",
            "api_500",
            "plain",
            "plain_printlogs",
            "resume_missing",
            "tool_read_failed",
            "tool_shell",
            "tool_shell_failed",
        ]

    @pytest.mark.parametrize("name", ["plain", "plain_printlogs"])
    def test_plain(self, name: str) -> None:
        rec = load_capture("opencode", name)
        turn, events = parse(rec.stdout_lines, rec.stderr_lines)
        assert turn.text == "Hello from the fake model."
        assert turn.session_id is not None
        assert turn.session_id.startswith("ses_")
        assert turn.error is None
        assert turn.usage is not None
        assert turn.usage.tokens == TokenUsage(input_tokens=100, output_tokens=10, turns=1)
        assert turn.cost_usd == 0.0
        assert turn.usage.cost_source is CostSource.REPORTED
        # The last call's prompt: input only, not the output it produced.
        assert turn.context_tokens == 100
        assert of(events, ev.SessionStarted) == [ev.SessionStarted(turn.session_id)]
        assert len(of(events, ev.Stderr)) == len(rec.stderr_lines)

    def test_tool_shell(self) -> None:
        turn, events = parse(load_capture("opencode", "tool_shell").stdout_lines)
        (call,) = of(events, ev.ToolCall)
        (res,) = of(events, ev.ToolResult)
        assert (call.tool, call.tool_id, call.kind) == (
            "bash",
            "call_4963b31882244c92",
            ev.ToolKind.COMMAND,
        )
        assert call.args == {"command": "echo hello", "description": "Run echo hello"}
        assert (res.tool_id, res.stdout, res.exit_code, res.failed) == (
            call.tool_id,
            "hello\n",
            0,
            False,
        )
        assert res.duration_s == pytest.approx(0.159)
        assert turn.text == "Done."
        assert turn.error is None
        # Two steps (tool-calls, then stop), each 100 in / 10 out: summed, the turn counted once.
        assert turn.usage is not None
        assert turn.usage.tokens == TokenUsage(input_tokens=200, output_tokens=20, turns=1)
        # One report when the turn ends, for both steps.
        reports = turn_reports(events)
        assert [r.usage.tokens for r in reports] == [turn.usage.tokens]
        assert [e.detail for e in of(events, ev.Lifecycle) if e.kind == "step_finished"] == [
            "tool-calls",
            "stop",
        ]

    @pytest.mark.parametrize("name", API_ERRORS)
    def test_an_api_error_has_no_usage_and_every_error_line_is_fatal(self, name: str) -> None:
        lines = load_capture("opencode", name).stdout_lines
        turn, events = parse(lines)
        assert turn.usage is None
        errors = of(events, ev.ProviderErrorReported)
        assert len(errors) == len(lines)
        assert all(e.fatal for e in errors)

    @pytest.mark.parametrize("name", API_ERRORS)
    def test_an_error_after_a_stop_fails_the_turn_with_its_kind(self, name: str) -> None:
        kind, needle = API_ERRORS[name]
        stdout = [
            *load_capture("opencode", "plain").stdout_lines,
            *load_capture("opencode", name).stdout_lines,
        ]
        turn, events = parse(stdout)
        assert turn.error_kind is kind
        assert turn.error is not None
        assert needle in turn.error
        # What the model said and used before the error is still reported.
        assert turn.text == "Hello from the fake model."
        assert turn.usage is not None
        assert turn.usage.tokens == TokenUsage(input_tokens=100, output_tokens=10, turns=1)
        assert of(events, ev.ProviderErrorReported)[-1].fatal

    @pytest.mark.parametrize("name", ["plain", "tool_shell"])
    def test_a_repeated_step_finish_is_counted_once(self, name: str) -> None:
        lines = load_capture("opencode", name).stdout_lines
        once, once_events = parse(lines)
        repeated = [line for line in lines for _ in range(2 if "step_finish" in line else 1)]
        twice, twice_events = parse(repeated)
        assert twice.error is None
        assert twice.usage == once.usage
        assert twice.cost_usd == once.cost_usd
        assert of(twice_events, ev.UsageReport) == of(once_events, ev.UsageReport)
        assert of(twice_events, ev.Lifecycle) == of(once_events, ev.Lifecycle)

    def test_resume_missing(self) -> None:
        rec = load_capture("opencode", "resume_missing")
        turn, events = parse(rec.stdout_lines, rec.stderr_lines)
        assert turn.error is not None
        assert "Error: Session not found" in turn.error
        assert turn.error_kind is FailureKind.OTHER
        assert turn.session_id is None
        assert [e.text for e in of(events, ev.Stderr)] == [
            "\x1b[91m\x1b[1mError: \x1b[0mSession not found"
        ]


class TestFrames:
    def test_a_last_step_without_a_reason_is_the_stop(self) -> None:
        unsaid = frame("step_finish", id="p2", tokens={"input": 4, "output": 1}, cost=0.1)
        turn, _ = parse([error("APIError", message="x", statusCode=500), unsaid])
        assert (turn.error, turn.error_kind) == (None, None)
        assert turn.usage is not None
        assert turn.usage.tokens == TokenUsage(input_tokens=4, output_tokens=1, turns=1)

    def test_a_step_without_a_reason_followed_by_another_step_is_not_the_stop(self) -> None:
        unsaid = frame("step_finish", id="p1", tokens={"input": 4, "output": 1})
        turn, _ = parse([unsaid, frame("step_start", type="step-start")])
        assert turn.error is not None
        assert turn.error_kind is FailureKind.OTHER
        turn, _ = parse([unsaid, step_finish("length")])
        assert turn.error is not None

    def test_an_error_after_a_step_without_a_reason_fails_the_turn(self) -> None:
        unsaid = frame("step_finish", id="p1", tokens={"input": 4, "output": 1})
        turn, _ = parse([unsaid, error("ProviderAuthError", message="no key")])
        assert (turn.error, turn.error_kind) == ("no key", FailureKind.AUTH)

    def test_tokens_without_input_or_output_are_unknown(self) -> None:
        counted = frame("step_finish", id="p1", reason="tool-calls", tokens={"input": 3})
        totals_only = frame("step_finish", id="p2", reason="stop", tokens={"total": 90}, cost=0.2)
        turn, events = parse([counted, totals_only])
        assert turn.usage is not None
        assert not turn.usage.increment_known
        assert turn.usage.tokens == TokenUsage(input_tokens=3, turns=1)
        assert turn.cost_usd == pytest.approx(0.2)
        assert [r.usage.increment_known for r in turn_reports(events)] == [False]

    def test_texts_join_with_newline_and_reasoning_is_separate(self) -> None:
        turn, events = parse(
            [
                frame("step_start", type="step-start"),
                frame("reasoning", type="reasoning", text="thinking hard"),
                frame("text", type="text", text="First."),
                frame("text", type="text", text="Second."),
                step_finish(),
            ]
        )
        assert turn.text == "First.\nSecond."
        assert [e.text for e in of(events, ev.Reasoning)] == ["thinking hard"]
        assert [(e.text, e.delta) for e in of(events, ev.AssistantText)] == [
            ("First.", False),
            ("Second.", False),
        ]

    def test_tool_calls_step_is_not_the_end(self) -> None:
        turn, _ = parse(
            [frame("step_start"), tool("completed", output="x"), step_finish("tool-calls")]
        )
        assert turn.error is not None
        assert "tool-calls" in turn.error
        assert turn.error_kind is FailureKind.OTHER

    def test_a_length_finish_is_not_a_success(self) -> None:
        turn, _ = parse([frame("text", text="trunc"), step_finish("length")])
        assert turn.error is not None
        assert "'length'" in turn.error

    def test_cache_and_reasoning_fold_in_and_costs_sum(self) -> None:
        turn, events = parse(
            [
                step_finish(
                    "tool-calls",
                    cost=0.25,
                    input=10,
                    output=5,
                    reasoning=3,
                    cache={"read": 40, "write": 7},
                ),
                step_finish(
                    "stop",
                    cost=0.5,
                    input=20,
                    output=8,
                    reasoning=0,
                    cache={"read": 60, "write": 0},
                ),
            ]
        )
        assert token_counts(turn) == {
            "input_tokens": 137,
            "cache_read_input_tokens": 100,
            "cache_write_input_tokens": 7,
            "output_tokens": 16,
            "reasoning_output_tokens": 3,
            "turns": 1,
        }
        assert turn.cost_usd == pytest.approx(0.75)
        assert [r.cost_usd for r in turn_reports(events)] == [pytest.approx(0.75)]
        assert turn.context_tokens == 80

    def test_steps_of_a_stream_that_ended_early_are_still_reported(self) -> None:
        turn, events = parse([step_finish("tool-calls", cost=0.1, input=5, output=1)])
        assert turn.error is not None
        assert turn.usage is not None
        assert turn.usage.tokens == TokenUsage(input_tokens=5, output_tokens=1, turns=1)
        assert [r.usage for r in turn_reports(events)] == [turn.usage]

    def test_reports_after_a_stop_add_up_to_the_turn(self) -> None:
        turn, events = parse(
            [
                step_finish("stop", cost=0.5, input=10, output=2),
                step_finish("stop", cost=0.25, input=3, output=1),
            ]
        )
        reports = turn_reports(events)
        assert len(reports) == 2
        assert turn.usage is not None
        assert sum((r.usage.tokens for r in reports), TokenUsage()) == turn.usage.tokens
        assert sum(r.cost_usd for r in reports) == pytest.approx(turn.cost_usd)

    def test_no_cost_field_is_not_reported(self) -> None:
        turn, _ = parse([step_finish(cost=None, input=1, output=1)])
        assert turn.cost_usd is None
        assert turn.usage is not None
        assert turn.usage.cost_source is CostSource.NOT_REPORTED

    @pytest.mark.parametrize(
        ("status", "state", "stdout", "stderr", "code"),
        [
            ("completed", {"output": "boom\n", "metadata": {"exit": 2}}, "", "boom\n", 2),
            ("error", {"error": "File not found"}, "", "File not found", 1),
            ("completed", {"output": "ok", "metadata": {"exit": 0}}, "ok", "", 0),
        ],
    )
    def test_tool_outcomes(
        self, status: str, state: dict[str, Any], stdout: str, stderr: str, code: int
    ) -> None:
        _, events = parse([tool(status, **state), step_finish()])
        (res,) = of(events, ev.ToolResult)
        assert (res.stdout, res.stderr, res.exit_code) == (stdout, stderr, code)

    @pytest.mark.parametrize("status", [[], ["completed"], {}, {"a": 1}, 5, None])
    def test_a_status_that_is_not_text_gives_a_call_without_a_result(self, status: Any) -> None:
        turn, events = parse([tool(status), frame("text", text="after"), step_finish()])
        assert [(c.tool, c.tool_id) for c in of(events, ev.ToolCall)] == [("bash", "c1")]
        assert of(events, ev.ToolResult) == []
        assert turn.error is None
        assert turn.text == "after"

    @pytest.mark.parametrize(
        "time", [{"start": 0, "end": 10**400}, {"start": 5, "end": 1}, {"start": [], "end": {}}]
    )
    def test_a_tool_time_that_is_no_duration_gives_none(self, time: Any) -> None:
        _, events = parse([tool("completed", output="x", time=time), step_finish()])
        (res,) = of(events, ev.ToolResult)
        assert (res.stdout, res.duration_s) == ("x", None)

    def test_a_running_call_then_its_completion_gives_one_call(self) -> None:
        _, events = parse([tool("running"), tool("completed", output="x"), step_finish()])
        assert len(of(events, ev.ToolCall)) == 1
        assert len(of(events, ev.ToolResult)) == 1

    def test_todowrite_becomes_a_plan(self) -> None:
        todos = [{"content": "write tests", "status": "pending", "priority": "high"}]
        _, events = parse(
            [tool("completed", "todowrite", "t1", input={"todos": todos}, output="[]")]
        )
        assert of(events, ev.Plan) == [ev.Plan((ev.PlanItem("write tests", "pending"),), "t1")]

    @pytest.mark.parametrize(
        ("frame_text", "kind"),
        [
            (
                error("APIError", message="Rate limit reached", statusCode=429, isRetryable=True),
                FailureKind.TRANSIENT,
            ),
            (
                error(
                    "APIError",
                    message="You exceeded your current quota, please check your plan and billing details.",
                    statusCode=429,
                ),
                FailureKind.USAGE_LIMIT,
            ),
            (
                error("APIError", message="weird", statusCode=418, isRetryable=True),
                FailureKind.TRANSIENT,
            ),
            (
                error("APIError", message="Forbidden", statusCode=403, isRetryable=False),
                FailureKind.AUTH,
            ),
            (error("ProviderAuthError", message="no key"), FailureKind.AUTH),
            (error("UnknownError", message="something odd"), FailureKind.OTHER),
        ],
    )
    def test_error_classification(self, frame_text: str, kind: FailureKind) -> None:
        turn, _ = parse([frame_text])
        assert turn.error_kind is kind

    def test_a_context_overflow_wins_over_a_later_error(self) -> None:
        turn, _ = parse(
            [
                error("ContextOverflowError", message="too big"),
                error("APIError", message="summary failed", statusCode=500, isRetryable=True),
            ]
        )
        assert turn.error_kind is FailureKind.CONTEXT_OVERFLOW
        assert turn.error == "too big"

    def test_only_errors_after_the_last_stop_decide_the_turn(self) -> None:
        overflow = error("ContextOverflowError", message="too big")
        auth = error("ProviderAuthError", message="no key")
        turn, _ = parse([overflow, step_finish(), auth])
        assert (turn.error, turn.error_kind) == ("no key", FailureKind.AUTH)
        turn, _ = parse([step_finish(), auth, frame("text", text="ok"), step_finish()])
        assert (turn.error, turn.error_kind, turn.text) == (None, None, "ok")

    def test_step_finishes_with_different_ids_are_all_counted(self) -> None:
        first = frame("step_finish", id="prt_1", reason="tool-calls", tokens={"input": 3}, cost=0.5)
        second = frame("step_finish", id="prt_2", reason="stop", tokens={"input": 4}, cost=0.25)
        turn, _ = parse([first, second, second])
        assert turn.usage is not None
        assert turn.usage.tokens == TokenUsage(input_tokens=7, turns=1)
        assert turn.cost_usd == pytest.approx(0.75)

    def test_error_followed_by_a_stop_is_a_success(self) -> None:
        turn, _ = parse(
            [
                error("APIError", message="x", statusCode=500),
                frame("text", text="ok"),
                step_finish(),
            ]
        )
        assert turn.error is None
        assert turn.text == "ok"

    def test_non_json_and_unknown_frames(self) -> None:
        turn, events = parse(["plain text\n", "42\n", frame("mystery"), step_finish()])
        assert [e.text for e in of(events, ev.RawOutput)] == ["plain text", "42"]
        assert of(events, ev.Lifecycle)[0].kind == "unknown_frame:mystery"
        assert turn.error is None


JSON_VALUES = json_values(max_leaves=8)
frame_types = st.sampled_from(
    ["step_start", "text", "reasoning", "tool_use", "step_finish", "error"]
)
part_fields = st.sampled_from(
    ["text", "tool", "callID", "state", "reason", "tokens", "cost", "type"]
)
RECORDINGS = [
    *capture_names("opencode"),
    *(f"recorded/{n}" for n in capture_names("opencode", "recorded")),
]
# Values of the wrong shape: unhashable ones (a set lookup raises TypeError) and an integer
# too large for a float.
WRONG_SHAPES: list[Any] = [[], [1], {}, {"a": 1}, 10**400]


def field_paths(value: Any, prefix: tuple[str | int, ...] = ()) -> list[tuple[str | int, ...]]:
    """Every key or index path inside a JSON value, the value's own (empty) path excluded."""
    children: list[tuple[str | int, Any]] = []
    if isinstance(value, dict):
        children = list(cast("dict[str, Any]", value).items())
    elif isinstance(value, list):
        children = list(enumerate(cast("list[Any]", value)))
    paths: list[tuple[str | int, ...]] = []
    for key, child in children:
        paths.append((*prefix, key))
        paths.extend(field_paths(child, (*prefix, key)))
    return paths


def with_field(frame_value: Any, path: tuple[str | int, ...], new: Any) -> Any:
    copied = json.loads(json.dumps(frame_value))
    target = copied
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = new
    return copied


class TestAdversarial:
    @settings(max_examples=100)
    @given(
        st.lists(
            st.tuples(
                frame_types,
                st.dictionaries(part_fields, JSON_VALUES, max_size=4),
                st.none() | st.integers() | st.text(max_size=8),
                st.none() | st.dictionaries(st.sampled_from(["name", "data"]), JSON_VALUES),
            ),
            max_size=6,
        )
    )
    def test_frames_with_wrong_field_types(
        self, frames: list[tuple[str, dict[str, Any], Any, Any]]
    ) -> None:
        lines = [
            json.dumps({"type": kind, "sessionID": sid, "part": part, "error": err})
            for kind, part, sid, err in frames
        ]
        never_raises(OpencodeStreamParser, lines)

    @pytest.mark.parametrize(
        "name", [n for n in RECORDINGS if load_capture("opencode", n).stdout_lines]
    )
    def test_every_field_of_a_recording_of_the_wrong_shape(self, name: str) -> None:
        rec = load_capture("opencode", name)
        lines = list(rec.stdout_lines)
        for index, line in enumerate(lines):
            original = json.loads(line)
            for path in field_paths(original):
                for value in WRONG_SHAPES:
                    changed = json.dumps(with_field(original, path, value))
                    stdout = [*lines[:index], changed, *lines[index + 1 :]]
                    never_raises(OpencodeStreamParser, stdout, rec.stderr_lines)
