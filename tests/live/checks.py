"""What a turn of a scenario must have produced: shared by the live tests and the replays.

Each check takes what a caller of agentshim sees (the TurnResult or the raised error, and
the events the turn emitted) and the scenario, and fails with a message that names the
difference.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from agentshim.core.errors import AgentShimError, CliExitError, SessionResumeError
from agentshim.core.events import (
    AgentEvent,
    AssistantText,
    SessionStarted,
    ToolCall,
    ToolKind,
    ToolResult,
)
from agentshim.core.turn import TurnResult
from agentshim.doctor.model_server import Usage

from . import scenarios as sc


def check_usage(result: TurnResult, expected: Usage | None, *, reports_tokens: bool) -> None:
    """The turn's usage is what the server scripted (or unknown, for a CLI with no counts)."""
    tokens = result.usage.tokens
    got = (
        tokens.input_tokens,
        tokens.cache_read_input_tokens,
        tokens.cache_write_input_tokens,
        tokens.output_tokens,
        tokens.reasoning_output_tokens,
    )
    if not reports_tokens:
        assert not result.usage.increment_known, "usage claims to be known"
        assert got == (0, 0, 0, 0, 0)
        return
    assert expected is not None
    want = (
        expected.input,
        expected.cache_read,
        expected.cache_write,
        expected.output,
        expected.reasoning,
    )
    assert result.usage.increment_known, f"usage unknown: {result.usage}"
    assert got == want, (
        "usage (input, cache_read, cache_write, output, reasoning) differs from what the "
        f"server scripted: got {got}, scripted {want}; raw={dict(result.usage.raw)}"
    )


def check_session(events: Sequence[AgentEvent], result: TurnResult) -> None:
    """The result names the session the stream announced."""
    started = [e.session_id for e in events if isinstance(e, SessionStarted)]
    assert result.session_id, "the turn reported no session id"
    assert started, "no SessionStarted event"
    assert result.session_id == started[-1]


def check_tools(
    events: Sequence[AgentEvent], expected: Sequence[sc.ToolExpectation], *, provider: str
) -> None:
    """Each expected shell call was reported, with a result of the same id and its output.

    The result has the command's exit code, and its output where ``ToolResult`` promises it:
    on stdout for a success, on stderr (stdout empty) for a failure. A CLI that reports no
    exit codes (``PROVIDERS_WITHOUT_SHELL_EXIT_CODES``) yields a success whatever the code.
    """
    calls = [e for e in events if isinstance(e, ToolCall) and e.kind is ToolKind.COMMAND]
    results = {e.tool_id: e for e in events if isinstance(e, ToolResult)}
    position = {id(e): index for index, e in enumerate(events)}
    assert len(calls) == len(expected), f"command tool calls: {calls}"
    ids = [call.tool_id for call in calls]
    assert len(set(ids)) == len(ids), f"tool ids are not distinct: {ids}"
    for expectation in expected:
        call = next((c for c in calls if mentions(c.args, expectation.marker)), None)
        assert call is not None, f"no tool call runs {expectation.command!r}: {calls}"
        result = results.get(call.tool_id)
        assert result is not None, f"no result for tool call {call}"
        assert result.kind is ToolKind.COMMAND
        assert position[id(call)] < position[id(result)], "a tool result came before its call"
        exit_code = expectation.exit_code
        if provider in sc.PROVIDERS_WITHOUT_SHELL_EXIT_CODES:
            exit_code = 0
        if exit_code == 0:
            assert result.exit_code in (0, None), f"a successful command reported {result}"
            assert not result.failed
            assert expectation.output in result.stdout, (
                f"tool output {result.stdout!r} lacks {expectation.output!r}"
            )
        else:
            assert result.exit_code == exit_code, f"exit code {exit_code} expected: {result}"
            assert result.failed, f"a command exiting {exit_code} is not failed: {result}"
            assert result.stdout == "", f"a failed result has stdout: {result}"
            assert expectation.output in result.stderr, (
                f"tool stderr {result.stderr!r} lacks {expectation.output!r}"
            )


def assistant_messages(events: Sequence[AgentEvent]) -> list[str]:
    """The assistant messages the events carry: a whole message, or a run of delta pieces.

    ``AssistantText`` promises that a parser emits either the pieces of a message (``delta``)
    or the whole of it, so joining a run of pieces rebuilds the message.
    """
    messages: list[str] = []
    pieces: list[str] | None = None
    for event in events:
        if isinstance(event, AssistantText) and event.delta:
            if pieces is None:
                pieces = []
                messages.append("")
            pieces.append(event.text)
            messages[-1] = "".join(pieces)
            continue
        pieces = None
        if isinstance(event, AssistantText):
            messages.append(event.text)
    return messages


def check_text_events(events: Sequence[AgentEvent], final_text: str) -> None:
    """The streamed text events rebuild the final answer as its own message."""
    messages = assistant_messages(events)
    assert messages, "no AssistantText events"
    assert messages[-1] == final_text, (
        f"the last assistant message rebuilt from the events is {messages[-1]!r}, not the "
        f"answer {final_text!r}; all messages: {[m[:60] for m in messages]}"
    )


def check_answer(
    events: Sequence[AgentEvent],
    scenario: sc.Scenario,
    result: TurnResult,
    *,
    reports_tokens: bool,
    provider: str | None = None,
) -> None:
    """A successful turn: text, session, usage and tool calls as scripted.

    ``provider`` defaults to the one the turn's usage names.
    """
    assert scenario.text is not None
    if scenario.tools:
        # Without a terminal result frame the text blocks of the turn are joined.
        assert result.text.endswith(scenario.text), result.text
    else:
        assert result.text == scenario.text
    assert result.exit_code == 0
    assert not result.interrupted
    check_session(events, result)
    check_usage(result, scenario.usage, reports_tokens=reports_tokens)
    check_tools(events, scenario.tools, provider=provider or result.usage.provider)
    check_text_events(events, scenario.text)


def check_failure(error: AgentShimError, scenario: sc.Scenario) -> None:
    """A failed turn: a CliExitError of the scenario's kind (SessionResumeError for a lost one)."""
    assert isinstance(error, CliExitError), repr(error)
    assert error.kind is scenario.failure, f"{error.kind} for: {error}"
    if scenario.resume_failure:
        assert isinstance(error, SessionResumeError), repr(error)
    else:
        assert not isinstance(error, SessionResumeError), repr(error)
    assert error.message


def mentions(args: Mapping[str, Any] | str | None, text: str) -> bool:
    """Whether any string in a tool call's arguments (or a list of them joined) has ``text``."""

    def strings(value: Any) -> Iterator[str]:
        if isinstance(value, str):
            yield value
        elif isinstance(value, Mapping):
            for item in value.values():  # pyright: ignore[reportUnknownVariableType]
                yield from strings(item)
        elif isinstance(value, list | tuple):
            parts = list(value)  # pyright: ignore[reportUnknownArgumentType]
            yield " ".join(str(p) for p in parts)
            for item in parts:
                yield from strings(item)

    return any(text in candidate for candidate in strings(args))
