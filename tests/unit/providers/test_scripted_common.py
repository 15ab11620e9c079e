"""What every provider's scripted turns promise, checked once over a per-provider table.

``agentshim.testing.scripted_turn`` prints what the provider's CLI prints; a user scripting a
turn relies on the text, session id and usage coming back, on a failing exit failing like the
CLI, and on a scripted resume failure reading like the recorded one. What a single provider's
scripted output adds (its frame shapes against its recordings) stays in its own test_scripted.py.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

import pytest

from agentshim import CliAgent
from agentshim.core.errors import CliExitError, FailureKind, InvalidRequestError, SessionResumeError
from agentshim.core.events import AgentEvent, ToolResult, UsageReport, UsageScope
from agentshim.core.provider import ParsedTurn
from agentshim.core.usage import CostSource, TokenUsage
from agentshim.providers import get_provider
from agentshim.testing import FakeExecutor, FakeRun, scripted_resume_failure, scripted_turn
from agentshim.testing.scripted import ToolFailure
from tests.unit.providers.fixtures import SCRIPTED_TOOL_FAILURES, feed, load_capture

ToolCallScript = tuple[str, dict[str, Any], str]
UUID_GONE = "00000000-0000-4000-8000-000000000000"
# Every field of a TokenUsage, each its own value: input 500, cache read 200, cache write 50
# (of which 1 h: 20), output 80, reasoning 30, one turn. Each CLI reports some of them.
ALL_FIELDS = TokenUsage(500, 200, 50, 20, 80, 30, 1)


def usage_without(*unreported: str) -> TokenUsage:
    return dataclasses.replace(ALL_FIELDS, **dict.fromkeys(unreported, 0))


@dataclass(frozen=True)
class ScriptedCase:
    """One provider, and what its CLI does that the checks below depend on."""

    provider: str
    usage: TokenUsage  # a usage with every field the CLI reports
    cost_source: CostSource
    report_scopes: tuple[UsageScope, ...]  # the usage reports of a turn without tools
    tools: tuple[ToolCallScript, ToolCallScript]  # two calls of tools the CLI has
    exits: tuple[tuple[int, FailureKind], ...]  # exit codes and their failure kinds
    resume: tuple[str, str]  # recorded resume of a missing conversation, and the id asked
    resume_stderr_lines: int | None = None  # how many stderr lines are the CLI's own (all)
    session_prefix: str = ""


def _shell_and(tool: str, args: dict[str, Any]) -> tuple[ToolCallScript, ToolCallScript]:
    return ("bash", {"command": "ls"}, "a\nb\n"), (tool, args, "A")


CASES = (
    ScriptedCase(
        "copilot",
        usage_without("cache_write_1h_input_tokens"),
        CostSource.UNKNOWN_MODEL,
        (UsageScope.CALL,),
        _shell_and("view", {"path": "/w/a"}),
        ((2, FailureKind.OTHER),),
        ("resume_missing", UUID_GONE),
    ),
    # Gemini prints the known sessions after its first stderr line; only that line is shared.
    ScriptedCase(
        "gemini",
        usage_without("cache_write_input_tokens", "cache_write_1h_input_tokens"),
        CostSource.UNKNOWN_MODEL,
        (UsageScope.TURN,),
        (
            ("run_shell_command", {"command": "ls"}, "a\nb\n"),
            ("read_file", {"file_path": "/w/a"}, "A"),
        ),
        ((244, FailureKind.TRANSIENT), (145, FailureKind.AUTH), (1, FailureKind.OTHER)),
        ("resume_missing", UUID_GONE),
        resume_stderr_lines=1,
    ),
    ScriptedCase(
        "opencode",
        usage_without("cache_write_1h_input_tokens"),
        CostSource.REPORTED,
        (UsageScope.CALL, UsageScope.TURN),
        _shell_and("read", {"filePath": "/w/a"}),
        ((1, FailureKind.OTHER),),
        ("resume_missing", "ses_gone"),
        session_prefix="ses_",
    ),
    ScriptedCase(
        "pi",
        ALL_FIELDS,
        CostSource.REPORTED,
        (UsageScope.CALL,),
        _shell_and("read", {"path": "/w/a"}),
        ((2, FailureKind.TRANSIENT),),
        ("d_resume_missing_uuid", "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"),
    ),
)

each_provider = pytest.mark.parametrize("case", CASES, ids=[c.provider for c in CASES])


def parse(provider: str, run: FakeRun) -> tuple[ParsedTurn, list[AgentEvent]]:
    """Parse ``run`` as ``provider``'s parser reads a turn without an output schema."""
    plugin = get_provider(provider)
    return feed(
        lambda emit: plugin.new_parser(emit, expect_structured=False), run.stdout, run.stderr
    )


def agent(case: ScriptedCase, run: FakeRun) -> CliAgent:
    binary = f"/usr/bin/{case.provider}"
    executor = FakeExecutor(run, binaries={case.provider: binary})
    return CliAgent(case.provider, executor=executor, env={"PATH": "/usr/bin"})


@each_provider
def test_text_session_and_usage_come_back_through_the_agent(case: ScriptedCase) -> None:
    run = scripted_turn(
        case.provider,
        text="answer",
        session_id="sid-1",
        usage=case.usage,
        tool_calls=[case.tools[0]],
    )
    result = agent(case, run).run("q")
    assert (result.text, result.session_id) == ("answer", "sid-1")
    assert result.usage.tokens == case.usage


@each_provider
def test_usage_parses_back_known_with_and_without_tool_calls(case: ScriptedCase) -> None:
    for calls in ([], [case.tools[1]]):
        run = scripted_turn(case.provider, text="x", usage=case.usage, tool_calls=calls)
        turn, events = parse(case.provider, run)
        assert turn.usage is not None
        assert turn.usage.increment_known
        assert turn.usage.tokens == case.usage
        assert turn.usage.cost_source is case.cost_source
        if not calls:
            scopes = [e.scope for e in events if isinstance(e, UsageReport)]
            assert scopes == list(case.report_scopes)


@each_provider
def test_several_tool_calls_pair_up(case: ScriptedCase) -> None:
    _, events = parse(
        case.provider, scripted_turn(case.provider, text="done", tool_calls=case.tools)
    )
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(r.tool, r.stdout, r.exit_code) for r in results] == [
        (name, output, 0) for name, _, output in case.tools
    ]


@each_provider
def test_a_fresh_session_id_is_made_when_none_is_given(case: ScriptedCase) -> None:
    first, _ = parse(case.provider, scripted_turn(case.provider, text="x"))
    second, _ = parse(case.provider, scripted_turn(case.provider, text="x"))
    assert first.session_id is not None
    assert second.session_id is not None
    assert first.session_id.startswith(case.session_prefix)
    assert len(first.session_id) > len(case.session_prefix)
    assert first.session_id != second.session_id
    through_the_agent = agent(case, scripted_turn(case.provider, text="x")).run("q")
    assert through_the_agent.session_id


@each_provider
def test_structured_output_is_refused(case: ScriptedCase) -> None:
    with pytest.raises(InvalidRequestError, match="no native output schema"):
        scripted_turn(case.provider, text="{}", structured_output={"a": 1})


@each_provider
def test_a_nonzero_exit_fails_like_the_cli(case: ScriptedCase) -> None:
    for code, kind in case.exits:
        run = scripted_turn(case.provider, text="", session_id="s-9", returncode=code)
        assert run.returncode == code
        with pytest.raises(CliExitError) as caught:
            agent(case, run).run("q")
        assert caught.value.returncode == code
        assert caught.value.kind is kind
        assert f"scripted failure (exit {code})" in caught.value.detail


@each_provider
def test_resume_failure_matches_the_recording(case: ScriptedCase) -> None:
    case_name, session_id = case.resume
    run = scripted_resume_failure(case.provider, session_id=session_id)
    recorded = load_capture(case.provider, case_name)
    assert (run.stdout, run.returncode) == (recorded.stdout_lines, recorded.exit_code)
    lines = case.resume_stderr_lines
    assert run.stderr[:lines] == recorded.stderr_lines[:lines]


@each_provider
def test_resume_failure_through_a_session_is_a_resume_error(case: ScriptedCase) -> None:
    _, session_id = case.resume
    run = scripted_resume_failure(case.provider, session_id=session_id)
    session = agent(case, run).start_session(session_id=session_id)
    with pytest.raises(SessionResumeError) as caught:
        session.turn("q")
    assert caught.value.session_id == session_id


@each_provider
def test_resume_failure_on_a_fresh_turn_is_a_plain_exit_error(case: ScriptedCase) -> None:
    with pytest.raises(CliExitError) as caught:
        agent(case, scripted_resume_failure(case.provider)).run("q")
    assert not isinstance(caught.value, SessionResumeError)


def _tool_results(events: list[AgentEvent]) -> list[ToolResult]:
    """Each tool result, but for its call id and timing (they differ run to run)."""
    return [
        dataclasses.replace(e, tool_id="id", duration_s=None)
        for e in events
        if isinstance(e, ToolResult)
    ]


@pytest.mark.parametrize(
    ("provider", "name", "tool", "args", "failure"),
    [(p, *row) for p, rows in SCRIPTED_TOOL_FAILURES.items() for row in rows],
)
def test_a_scripted_failed_tool_call_parses_like_the_recorded_one(
    provider: str, name: str, tool: str, args: dict[str, Any], failure: ToolFailure
) -> None:
    capture = load_capture(provider, name)
    recorded, recorded_events = parse(provider, capture.fake_run())
    run = scripted_turn(
        provider,
        text=recorded.text,
        session_id=recorded.session_id,
        tool_calls=[(tool, args, failure)],
    )
    scripted, scripted_events = parse(provider, run)
    assert _tool_results(scripted_events) == _tool_results(recorded_events)
    (result,) = _tool_results(scripted_events)
    assert (result.tool, result.stdout, result.exit_code, result.failed) == (
        tool,
        "",
        failure.exit_code,
        True,
    )
    assert str(failure) in result.stderr
    assert (scripted.text, scripted.session_id, scripted.error) == (
        recorded.text,
        recorded.session_id,
        None,
    )
