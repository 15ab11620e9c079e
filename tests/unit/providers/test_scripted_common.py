"""What every provider's scripted turns promise, checked once over a per-provider table.

``agentshim.testing.scripted_turn`` prints what the provider's CLI prints; a user scripting a
turn relies on the text, session id and usage coming back, on a failing exit failing like the
CLI, and on a scripted resume failure reading like the recorded one. What a single provider's
scripted output adds (its frame shapes against its recordings) stays in its own test_scripted.py.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pytest

from agentshim import CliAgent
from agentshim.core.errors import CliExitError, FailureKind, SessionResumeError
from agentshim.core.events import AgentEvent, ToolResult, UsageReport, UsageScope
from agentshim.core.provider import StreamParser
from agentshim.core.usage import CostSource, TokenUsage
from agentshim.providers import copilot, gemini, opencode, pi
from agentshim.testing import (
    FakeExecutor,
    FakeRun,
    ScriptedRun,
    ScriptedTurn,
    scripted_resume_failure,
    scripted_turn,
)
from tests.unit.providers.fixtures import feed, load_capture

ToolCallScript = tuple[str, dict[str, Any], str]


@dataclass(frozen=True)
class ScriptedCase:
    """One provider's scripted output and what its CLI does that the checks depend on."""

    provider: str
    parser: Callable[[Callable[[AgentEvent], None]], StreamParser]
    script: Callable[[ScriptedTurn], ScriptedRun]
    resume_failure: Callable[..., ScriptedRun]
    # Every usage field the CLI reports (the others are always zero in its output).
    usage: TokenUsage
    cost_source: CostSource
    # The usage reports of a turn without tools (per model call, per turn).
    report_scopes: tuple[UsageScope, ...]
    # Two tool calls of tools the CLI has, as (name, arguments, output).
    tools: tuple[ToolCallScript, ToolCallScript]
    # Exit codes and the failure each one is classified as.
    exits: tuple[tuple[int, FailureKind], ...]
    # The recorded run of a resume of a missing conversation, and the id it asked for.
    resume_case: str
    resume_id: str
    # How many of the recorded resume failure's stderr lines are the CLI's own (None: all).
    resume_stderr_lines: int | None = None
    session_prefix: str = ""


CASES = (
    ScriptedCase(
        "copilot",
        copilot.CopilotStreamParser,
        copilot.scripted_lines,
        copilot.resume_failure_lines,
        TokenUsage(
            input_tokens=500,
            cache_read_input_tokens=200,
            cache_write_input_tokens=50,
            output_tokens=80,
            reasoning_output_tokens=30,
            turns=1,
        ),
        CostSource.UNKNOWN_MODEL,
        (UsageScope.CALL,),
        (("bash", {"command": "ls"}, "a\nb\n"), ("view", {"path": "/w/a"}, "contents")),
        ((2, FailureKind.OTHER),),
        "resume_missing",
        "00000000-0000-4000-8000-000000000000",
    ),
    ScriptedCase(
        "gemini",
        gemini.GeminiStreamParser,
        gemini.scripted_lines,
        gemini.resume_failure_lines,
        TokenUsage(
            input_tokens=500,
            cache_read_input_tokens=200,
            output_tokens=90,
            reasoning_output_tokens=40,
            turns=1,
        ),
        CostSource.UNKNOWN_MODEL,
        (UsageScope.TURN,),
        (
            ("run_shell_command", {"command": "ls"}, "a\nb\n"),
            ("read_file", {"file_path": "/w/a"}, "A"),
        ),
        ((244, FailureKind.TRANSIENT), (145, FailureKind.AUTH), (1, FailureKind.OTHER)),
        "resume_missing",
        "00000000-0000-4000-8000-000000000000",
        # Gemini prints the missing session's id list after its first line; only that line is
        # the same in a scripted failure.
        resume_stderr_lines=1,
    ),
    ScriptedCase(
        "opencode",
        opencode.OpencodeStreamParser,
        opencode.scripted_lines,
        opencode.resume_failure_lines,
        TokenUsage(
            input_tokens=500,
            cache_read_input_tokens=200,
            cache_write_input_tokens=50,
            output_tokens=90,
            reasoning_output_tokens=40,
            turns=1,
        ),
        CostSource.REPORTED,
        (UsageScope.CALL, UsageScope.TURN),
        (("bash", {"command": "ls"}, "a\nb\n"), ("read", {"filePath": "/w/a"}, "A")),
        ((1, FailureKind.OTHER),),
        "resume_missing",
        "ses_gone",
        session_prefix="ses_",
    ),
    ScriptedCase(
        "pi",
        pi.PiStreamParser,
        pi.scripted_lines,
        pi.resume_failure_lines,
        TokenUsage(
            input_tokens=500,
            cache_read_input_tokens=200,
            cache_write_input_tokens=50,
            cache_write_1h_input_tokens=20,
            output_tokens=80,
            reasoning_output_tokens=30,
            turns=1,
        ),
        CostSource.REPORTED,
        (UsageScope.CALL,),
        (("bash", {"command": "ls"}, "a\nb\n"), ("read", {"path": "/w/a"}, "A")),
        ((2, FailureKind.TRANSIENT),),
        "d_resume_missing_uuid",
        "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000",
    ),
)

each_provider = pytest.mark.parametrize("case", CASES, ids=[c.provider for c in CASES])


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
        script = ScriptedTurn(text="x", usage=case.usage, tool_calls=calls)
        turn, events = feed(case.parser, case.script(script).stdout)
        assert turn.usage is not None
        assert turn.usage.increment_known
        assert turn.usage.tokens == case.usage
        assert turn.usage.cost_source is case.cost_source
        if not calls:
            scopes = [e.scope for e in events if isinstance(e, UsageReport)]
            assert scopes == list(case.report_scopes)


@each_provider
def test_several_tool_calls_pair_up(case: ScriptedCase) -> None:
    script = ScriptedTurn(text="done", tool_calls=list(case.tools))
    _, events = feed(case.parser, case.script(script).stdout)
    results = [e for e in events if isinstance(e, ToolResult)]
    assert [(r.tool, r.stdout, r.exit_code) for r in results] == [
        (name, output, 0) for name, _, output in case.tools
    ]


@each_provider
def test_a_fresh_session_id_is_made_when_none_is_given(case: ScriptedCase) -> None:
    first, _ = feed(case.parser, case.script(ScriptedTurn(text="x")).stdout)
    second, _ = feed(case.parser, case.script(ScriptedTurn(text="x")).stdout)
    assert first.session_id is not None
    assert second.session_id is not None
    assert first.session_id.startswith(case.session_prefix)
    assert len(first.session_id) > len(case.session_prefix)
    assert first.session_id != second.session_id
    through_the_agent = agent(case, scripted_turn(case.provider, text="x")).run("q")
    assert through_the_agent.session_id


@each_provider
def test_structured_output_is_refused(case: ScriptedCase) -> None:
    with pytest.raises(ValueError, match="no native output schema"):
        case.script(ScriptedTurn(text="{}", structured_output={"a": 1}))


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
    run = case.resume_failure(session_id=case.resume_id)
    recorded = load_capture(case.provider, case.resume_case)
    assert (run.stdout, run.returncode) == (recorded.stdout_lines, recorded.exit_code)
    lines = case.resume_stderr_lines
    assert run.stderr[:lines] == recorded.stderr_lines[:lines]


@each_provider
def test_resume_failure_through_a_session_is_a_resume_error(case: ScriptedCase) -> None:
    run = scripted_resume_failure(case.provider, session_id=case.resume_id)
    session = agent(case, run).start_session(session_id=case.resume_id)
    with pytest.raises(SessionResumeError) as caught:
        session.turn("q")
    assert caught.value.session_id == case.resume_id


@each_provider
def test_resume_failure_on_a_fresh_turn_is_a_plain_exit_error(case: ScriptedCase) -> None:
    with pytest.raises(CliExitError) as caught:
        agent(case, scripted_resume_failure(case.provider)).run("q")
    assert not isinstance(caught.value, SessionResumeError)
