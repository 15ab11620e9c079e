"""What every provider's stream parser promises on hostile input, checked once for all of them.

A CLI may print anything: a broken or newer build, a line cut short by a killed process, plain
text where JSON was expected. Every parser must still finish the turn with a ParsedTurn whose
error and error kind agree. Each provider's own test_parser.py keeps what only its frames can
exercise (its frame types with odd payloads, Claude's cut line failing the turn).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.core.errors import FailureKind
from agentshim.core.events import AgentEvent, ProviderErrorReported, ToolCall, ToolResult
from agentshim.core.provider import StreamParser
from agentshim.providers import get_provider
from tests.unit.providers.adversarial import json_values, never_raises
from tests.unit.providers.fixtures import LS_MISSING_DIR, capture_names, feed, load_capture

NO_SUCH_FILE = "no such file or directory"
PROVIDERS = ("claude", "codex", "copilot", "gemini", "opencode", "pi")


def recorded_lines(provider: str) -> list[str]:
    """Every stdout line of every run recorded for ``provider``, its ``recorded/`` ones too."""
    names = [
        *capture_names(provider),
        *(f"recorded/{name}" for name in capture_names(provider, "recorded")),
    ]
    return [line for name in names for line in load_capture(provider, name).stdout_lines]


RECORDED = {provider: recorded_lines(provider) for provider in PROVIDERS}
each_provider = pytest.mark.parametrize("provider", PROVIDERS)


def parsers(provider: str) -> list[Callable[[Callable[[AgentEvent], None]], StreamParser]]:
    """The provider's parser as a turn with and a turn without an output schema gets it."""
    plugin = get_provider(provider)
    return [
        lambda emit: plugin.new_parser(emit, expect_structured=False),
        lambda emit: plugin.new_parser(emit, expect_structured=True),
    ]


def survives(provider: str, stdout: list[str], stderr: list[str] | tuple[str, ...] = ()) -> None:
    for make in parsers(provider):
        never_raises(make, stdout, stderr)


def test_every_provider_has_recordings() -> None:
    assert all(len(lines) > 10 for lines in RECORDED.values())


@each_provider
@settings(max_examples=150)
@given(st.lists(st.text(), max_size=10), st.lists(st.text(), max_size=3))
def test_arbitrary_text(provider: str, lines: list[str], stderr: list[str]) -> None:
    survives(provider, lines, stderr)


@each_provider
@settings(max_examples=150)
@given(st.lists(json_values(), max_size=8), st.booleans())
def test_arbitrary_json_values(provider: str, values: list[Any], newline: bool) -> None:
    survives(provider, [json.dumps(v) + ("\n" if newline else "") for v in values])


@each_provider
@settings(max_examples=150)
@given(st.data())
def test_recorded_lines_cut_short(provider: str, data: st.DataObject) -> None:
    """Cut lines, each possibly followed by a whole one (a killed CLI, then a newer turn)."""
    cut = st.tuples(st.sampled_from(RECORDED[provider]), st.integers(0, 4000), st.booleans())
    cuts = data.draw(st.lists(cut, min_size=1, max_size=8))
    stdout = [piece for line, at, whole in cuts for piece in (line[:at], *([line] * whole))]
    survives(provider, stdout, ["stray\n"])


# Recorded runs in which one tool call failed: (provider, run, tool, its stderr, its exit code,
# how the answer starts). The call fails; the turn does not.
FAILED_TOOLS = [
    # Copilot: a command exiting nonzero stays a success, with shellExecution's code; any other
    # tool fails with its message as the error.
    ("copilot", "tool_shell_failed", "bash", LS_MISSING_DIR, 2, "The command failed."),
    ("copilot", "tool_view_failed", "view", "Path does not exist", 1, "The tool failed."),
    # opencode: a command exiting nonzero "completed" (only metadata.exit says it failed); a
    # tool that could not run ends in status "error" with the message as its error.
    ("opencode", "tool_shell_failed", "bash", LS_MISSING_DIR, 2, "Running it.\nThe "),
    (
        "opencode",
        "tool_read_failed",
        "read",
        "File not found: /home/user/work/missing.txt",
        1,
        "Running it.\nThe ",
    ),
    # Pi: bash appends the command's exit code to its output; read names no code.
    (
        "pi",
        "b2_tool_bash_failed",
        "bash",
        f"{LS_MISSING_DIR}\n\nCommand exited with code 2",
        2,
        "The command failed.",
    ),
    (
        "pi",
        "b3_tool_read_failed",
        "read",
        f"ENOENT: {NO_SUCH_FILE}, access '/agentshim-missing-dir/x.txt'",
        1,
        "The tool failed.",
    ),
]


@pytest.mark.parametrize(("provider", "name", "tool", "stderr", "exit_code", "text"), FAILED_TOOLS)
def test_a_failed_tool_is_a_failed_result_not_a_failed_turn(
    provider: str, name: str, tool: str, stderr: str, exit_code: int, text: str
) -> None:
    plugin = get_provider(provider)
    turn, events = feed(
        lambda emit: plugin.new_parser(emit, expect_structured=False),
        load_capture(provider, name).stdout_lines,
    )
    (call,) = [e for e in events if isinstance(e, ToolCall)]
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert (result.tool_id, result.tool, result.stdout, result.stderr, result.exit_code) == (
        call.tool_id,
        tool,
        "",
        stderr,
        exit_code,
    )
    assert result.failed
    assert turn.error is None
    assert turn.text.startswith(text)


# Recorded runs whose model API call failed: the kind and a phrase of the error. The turn fails
# with that kind, on a conversation the CLI had named, and the CLI's fatal error says why.
API_ERRORS = [
    (provider, name, kind, says)
    for provider, says_by_case in (
        ("codex", ("context window", "Incorrect API key provided", "high demand")),
        ("gemini", ("exceeds the context window", "Incorrect API key", "fake error 500")),
        (
            "opencode",
            ("exceeds the context window", "Incorrect API key provided", "fake error 500"),
        ),
    )
    for (name, kind), says in zip(
        (
            ("api_400_context_length", FailureKind.CONTEXT_OVERFLOW),
            ("api_401", FailureKind.AUTH),
            ("api_500", FailureKind.TRANSIENT),
        ),
        says_by_case,
        strict=True,
    )
]


@pytest.mark.parametrize(("provider", "name", "kind", "says"), API_ERRORS)
def test_a_recorded_api_error_fails_the_turn_with_its_kind(
    provider: str, name: str, kind: FailureKind, says: str
) -> None:
    capture = load_capture(provider, name)
    plugin = get_provider(provider)
    turn, events = feed(
        lambda emit: plugin.new_parser(emit, expect_structured=False),
        capture.stdout_lines,
        capture.stderr_lines,
    )
    assert turn.error_kind is kind
    assert turn.error is not None
    assert says in turn.error
    assert turn.session_id is not None
    fatal = [e for e in events if isinstance(e, ProviderErrorReported) and e.fatal]
    assert any(says in e.message for e in fatal)
