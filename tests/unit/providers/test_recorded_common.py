"""Recorded runs of the CLIs whose expectations share one shape, replayed the same way for each.

Every recording under tests/fixtures/<provider>/ has an expected answer, conversation id and,
for a failed run, a failure kind and a phrase of its message (the provider's ``_captures``
table). Each run is replayed through the provider's parser and through a ``CliAgent`` turn,
which is what a user sees. What only one CLI prints (Copilot's retries, Pi's compaction) stays
in that provider's tests.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pytest

from agentshim.core.errors import CliExitError, SessionResumeError
from agentshim.core.events import (
    AgentEvent,
    Lifecycle,
    ProviderErrorReported,
    RawOutput,
    SessionStarted,
    ToolCall,
    ToolResult,
    UsageReport,
)
from agentshim.core.provider import ParsedTurn
from agentshim.core.usage import CostSource
from agentshim.testing import RecordingEventHandler
from tests.unit.providers.copilot import _captures as copilot
from tests.unit.providers.fixtures import (
    Capture,
    Expected,
    capture_names,
    fake_agent,
    flag_value,
    load_capture,
)
from tests.unit.providers.pi import _captures as pi


@dataclass(frozen=True)
class Recordings:
    """One provider's recordings, and what its CLI does with every turn."""

    provider: str
    expected: Mapping[str, Expected]
    replay: Callable[[Capture], tuple[ParsedTurn, list[AgentEvent]]]
    resume_flag: str
    # Reported usage: whether the CLI counts tokens, where the cost comes from, what it is.
    usage_known: bool
    cost_source: CostSource
    cost_usd: float | None
    one_usage_report: bool  # one for the turn, else one for each model call
    tool_case: str  # a run calling bash to echo hello
    resume_lost: tuple[str, ...]  # the runs asked to resume a conversation that is gone
    not_expected: tuple[str, ...] = ()  # recordings of something the provider does not run
    env: Mapping[str, str] = field(default_factory=dict[str, str])  # what every turn is given
    # Failed runs in which the CLI reports no error event (only its exit and stderr).
    unreported_failures: tuple[str, ...] = ()


PROVIDERS = (
    Recordings(
        "copilot",
        copilot.EXPECTED,
        copilot.replay,
        "--resume",
        usage_known=False,
        cost_source=CostSource.NOT_REPORTED,
        cost_usd=None,
        one_usage_report=True,
        tool_case="tool_shell",
        resume_lost=("resume_missing",),
    ),
    Recordings(
        "pi",
        pi.EXPECTED,
        pi.replay,
        "--session",
        usage_known=True,
        cost_source=CostSource.REPORTED,
        cost_usd=0.0,
        one_usage_report=False,
        tool_case="b_tool_bash",
        resume_lost=("d_resume_missing_nonuuid", "d_resume_missing_uuid"),
        not_expected=(pi.RPC_MODE,),
        env={"NO_COLOR": "1", "CI": "1"},
        unreported_failures=("e3b_http401_text_mode",),
    ),
)
BY_NAME = {recordings.provider: recordings for recordings in PROVIDERS}
RUNS = [(r.provider, name) for r in PROVIDERS for name in sorted(r.expected)]
SUCCESSES = [(p, n) for p, n in RUNS if BY_NAME[p].expected[n].kind is None]
FAILURES = [
    (p, n)
    for p, n in RUNS
    if BY_NAME[p].expected[n].kind is not None and n not in BY_NAME[p].resume_lost
]
each_provider = pytest.mark.parametrize(
    "recordings", PROVIDERS, ids=[r.provider for r in PROVIDERS]
)


@each_provider
def test_every_recording_has_an_expectation(recordings: Recordings) -> None:
    expected = set(recordings.expected) | set(recordings.not_expected)
    assert set(capture_names(recordings.provider)) == expected


@pytest.mark.parametrize(("provider", "name"), RUNS)
def test_text_session_and_failure_parsed(provider: str, name: str) -> None:
    recordings, expected = BY_NAME[provider], BY_NAME[provider].expected[name]
    parsed, events = recordings.replay(load_capture(provider, name))
    assert parsed.text == expected.text
    assert parsed.session_id == expected.session_id
    assert parsed.error_kind is expected.kind
    if expected.kind is None:
        assert parsed.error is None
    else:
        assert parsed.error is not None
        assert expected.error_says in parsed.error
    assert [e for e in events if isinstance(e, RawOutput)] == []
    assert not [e for e in events if isinstance(e, Lifecycle) and "unknown" in e.kind]


@pytest.mark.parametrize(("provider", "name"), SUCCESSES)
def test_successful_turn_through_the_agent(provider: str, name: str) -> None:
    recordings, expected = BY_NAME[provider], BY_NAME[provider].expected[name]
    capture = load_capture(provider, name)
    resumed_id = capture.flag_value(recordings.resume_flag)
    recorder = RecordingEventHandler()
    agent, executor = fake_agent(provider, capture.fake_run(), recorder)
    session = agent.start_session(session_id=resumed_id)

    prompt = capture.stdin or "hello"
    result = session.turn(prompt)

    assert result.text == expected.text
    assert result.session_id == expected.session_id == session.session_id
    assert result.resumed is (resumed_id is not None)
    assert result.exit_code == 0
    assert result.usage.increment_known is recordings.usage_known
    assert result.usage.tokens.input_tokens == expected.input_tokens
    assert result.usage.tokens.output_tokens == expected.output_tokens
    assert result.usage.cost_source is recordings.cost_source
    assert result.cost_usd == recordings.cost_usd
    assert recorder.of_type(SessionStarted) == [SessionStarted(expected.session_id or "")]
    reports = recorder.of_type(UsageReport)
    assert len(reports) == 1 if recordings.one_usage_report else reports
    (request,) = executor.requests
    assert flag_value(request.argv, recordings.resume_flag) == resumed_id
    assert request.stdin == prompt
    assert {name: request.env.get(name) for name in recordings.env} == recordings.env


@each_provider
def test_tool_events_reach_the_handler(recordings: Recordings) -> None:
    recorder = RecordingEventHandler()
    capture = load_capture(recordings.provider, recordings.tool_case)
    agent, _ = fake_agent(recordings.provider, capture.fake_run(), recorder)
    agent.run(capture.stdin or "run echo hello")
    (call,) = recorder.of_type(ToolCall)
    (result,) = recorder.of_type(ToolResult)
    assert (call.tool, result.stdout, result.exit_code) == ("bash", "hello\n", 0)


@pytest.mark.parametrize(("provider", "name"), FAILURES)
def test_failed_turn_raises_with_its_kind(provider: str, name: str) -> None:
    recordings, expected = BY_NAME[provider], BY_NAME[provider].expected[name]
    capture = load_capture(provider, name)
    recorder = RecordingEventHandler()
    agent, _ = fake_agent(provider, capture.fake_run(), recorder)
    session = agent.start_session()
    with pytest.raises(CliExitError) as caught:
        session.turn(capture.stdin or "hello")
    error = caught.value
    assert not isinstance(error, SessionResumeError)
    assert error.kind is expected.kind
    assert expected.error_says in error.detail
    assert error.returncode == capture.exit_code
    assert session.session_id == expected.session_id
    assert recorder.of_type(ProviderErrorReported) or name in recordings.unreported_failures
