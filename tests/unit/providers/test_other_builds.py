"""Turns of CLI builds other than the pinned ones, replayed through CliAgent.

Each case under ``tests/fixtures/<provider>/builds/`` is a pinned recording changed to the
shape another build of the same CLI prints (its ``meta.json`` names the recording under
``based_on`` and says what differs). Fed through ``CliAgent`` with a ``FakeExecutor``, each
must read the way a user on that build needs: the answer, the usage the stream reported (or
an honest "unknown"), the model, the failure's kind.
"""

from __future__ import annotations

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import CliExitError, FailureKind
from agentshim.core.events import ToolCall, ToolResult, UsageReport, UsageScope
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.core.usage import CostSource, TokenUsage
from agentshim.testing import FakeExecutor, RecordingEventHandler
from tests.unit.providers.fixtures import capture_names, load_capture

PROVIDERS = ("claude", "codex", "gemini", "opencode", "copilot", "pi")


def _turn(provider: str, case: str) -> tuple[TurnResult, RecordingEventHandler]:
    capture = load_capture(provider, f"builds/{case}")
    events = RecordingEventHandler()
    executor = FakeExecutor([capture.fake_run()])
    agent = CliAgent(provider, env={"PATH": "/usr/bin"}, executor=executor, event_handlers=events)
    return agent.start_session().turn(TurnRequest(prompt=capture.stdin)), events


def _failure(provider: str, case: str) -> CliExitError:
    with pytest.raises(CliExitError) as caught:
        _turn(provider, case)
    return caught.value


def _paired(events: RecordingEventHandler) -> list[tuple[str | None, str | None]]:
    calls = [c.tool_id for c in events.of_type(ToolCall)]
    results = [r.tool_id for r in events.of_type(ToolResult)]
    return list(zip(calls, results, strict=True))


def test_every_build_case_has_a_test() -> None:
    cases = {p: capture_names(p, "builds") for p in PROVIDERS}
    assert cases == {
        "claude": ["auth_error_without_result"],
        "codex": [],
        "gemini": ["error_without_severity", "stats_total_tokens_only"],
        "opencode": ["step_finish_without_reason"],
        "copilot": ["message_output_tokens"],
        "pi": [],
    }


def test_opencode_last_step_without_a_reason_is_the_stop() -> None:
    result, events = _turn("opencode", "step_finish_without_reason")
    assert result.text == "Done."
    assert result.exit_code == 0
    assert result.usage.increment_known
    assert result.usage.tokens == TokenUsage(
        input_tokens=11390 + 31 + 11412,
        cache_read_input_tokens=11412,
        output_tokens=22 + 6,
        turns=1,
    )
    assert result.cost_usd == pytest.approx(0.00131 + 0.00042)
    assert result.usage.cost_source is CostSource.REPORTED
    assert result.context_tokens == 31 + 11412
    assert _paired(events) == [("call_4963b31882244c92", "call_4963b31882244c92")]
    reports = events.of_type(UsageReport)
    turn = [r for r in reports if r.scope is UsageScope.TURN]
    calls = [r for r in reports if r.scope is UsageScope.CALL]
    assert sum((r.usage.tokens for r in turn), TokenUsage()) == result.usage.tokens
    # One call report per step, which together hold the turn's tokens (the turn counts once).
    assert len(calls) == 2
    summed = sum((r.usage.tokens for r in calls), TokenUsage())
    assert summed.input_tokens == result.usage.tokens.input_tokens
    assert summed.output_tokens == result.usage.tokens.output_tokens


def test_gemini_stats_with_only_a_total_are_unknown_not_output() -> None:
    result, events = _turn("gemini", "stats_total_tokens_only")
    assert result.text == "Done."
    assert not result.usage.increment_known
    assert result.usage.tokens.input_tokens == 0
    assert result.usage.tokens.output_tokens == 0
    assert result.usage.tokens.reasoning_output_tokens == 0
    assert result.usage.raw["total_tokens"] == 8731
    assert result.cost_usd is None
    assert result.usage.cost_source is CostSource.NOT_REPORTED
    # stats.models is absent: the model the init line named is the turn's.
    assert result.usage.model == "gemini-2.5-flash"
    assert len(_paired(events)) == 1


def test_gemini_error_frame_without_severity_is_classified_by_its_text() -> None:
    error = _failure("gemini", "error_without_severity")
    assert error.kind is FailureKind.AUTH
    assert "API key not valid" in error.detail
    assert error.returncode == 1


def test_copilot_message_output_tokens_and_tools_updated_model_are_kept() -> None:
    result, events = _turn("copilot", "message_output_tokens")
    assert result.text == "Done."
    assert result.usage.tokens == TokenUsage(output_tokens=38 + 5, turns=1)
    # No input count came: the usage says it is not the whole breakdown.
    assert not result.usage.increment_known
    assert result.usage.model == "claude-sonnet-4.5"
    assert result.cost_usd is None
    assert [r.usage for r in events.of_type(UsageReport)] == [result.usage]
    assert _paired(events) == [("call_f487928bb3c84e08", "call_f487928bb3c84e08")]


def test_claude_assistant_error_without_result_keeps_its_kind() -> None:
    error = _failure("claude", "auth_error_without_result")
    assert error.kind is FailureKind.AUTH
    assert "authentication_failed" in error.detail
    assert "Invalid API key" in error.detail
