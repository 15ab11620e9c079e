"""The conformance scenarios: what the scripted server answers and what a turn must yield.

Shared by ``tests/live`` (run through ``CliAgent``) and ``scripts/record_fixtures.py`` (run
through the provider's own argv builder, output written as fixtures). Every scenario works
for every CLI: the shell tool call adapts to the tool the CLI offers, error cases script
headers that keep the CLIs' own retries short, and the usage each answer reports is scripted
so a correct parser reports exactly ``expected_usage``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentshim.core.errors import FailureKind
from agentshim.doctor.model_server import (
    HttpError,
    Match,
    Message,
    Rule,
    StructuredOutput,
    Text,
    ToolCall,
    Usage,
)

#: Headers on scripted 5xx answers: opencode and the Anthropic SDK wait this long between
#: retries instead of their multi-second backoff.
FAST_RETRY_HEADERS = {"retry-after-ms": "50"}

#: A conversation id no CLI has: a well-formed UUID (opencode's form is ``ses_...``).
MISSING_SESSION_UUID = "0badc0de-0000-4000-8000-00000000beef"
MISSING_SESSION_OPENCODE = "ses_0badc0de0000400080000000be"

STRUCTURED_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
STRUCTURED_VALUE: dict[str, Any] = {"name": "Alice", "age": 30}

#: Unicode and several lines, printed by the shell tool.
UNICODE_LINES = ("café ✓ naïve", "zweite Zeile — ok", "日本語テキスト 🚀")
UNICODE_COMMAND = "; ".join(f"echo '{line}'" for line in UNICODE_LINES)

#: About 200 deltas: many, yet small enough for Pi, whose every delta line repeats the whole
#: message so far, to record in a few hundred kilobytes.
LONG_TEXT = " ".join(f"word{i:04d}" for i in range(160))

#: CLIs that print no token counts: a turn's usage is unknown, not the scripted counts.
#: Copilot CLI's result carries premium requests and durations only.
PROVIDERS_WITHOUT_TOKEN_COUNTS = frozenset({"copilot"})

#: CLIs whose stream carries no exit code for a shell command: Gemini CLI reports a command
#: that exits nonzero as a success (``status: "success"``), its error message as the output,
#: so agentshim reports exit code 0 and the message on stdout.
PROVIDERS_WITHOUT_SHELL_EXIT_CODES = frozenset({"gemini"})


def total(*usages: Usage) -> Usage:
    """The usage of several model calls added up, as a turn should report it."""
    return Usage(
        input=sum(u.input for u in usages),
        output=sum(u.output for u in usages),
        cache_read=sum(u.cache_read for u in usages),
        cache_write=sum(u.cache_write for u in usages),
        reasoning=sum(u.reasoning for u in usages),
    )


@dataclass(frozen=True)
class ToolExpectation:
    """A shell call the turn must report, and text its result must contain.

    A CLI may wrap the command (Codex reports ``/bin/bash -lc "..."``), so the call is found
    by ``marker``, a part of the command that survives any quoting. ``exit_code`` is the
    command's own: a result with a nonzero one is ``failed`` and carries ``output`` on stderr
    (stdout empty), one that succeeded carries it on stdout. A CLI of
    ``PROVIDERS_WITHOUT_SHELL_EXIT_CODES`` reports every command as a success.
    """

    command: str
    output: str
    marker: str
    exit_code: int = 0


@dataclass(frozen=True)
class Scenario:
    """One turn: its prompt, the server's script, and what the turn must produce.

    ``resume`` is ``"previous"`` when the turn resumes the conversation of ``setup`` (run
    first, in the same session), ``"missing"`` when it resumes an id the CLI never had.
    ``failure`` is set for turns that must fail with a CliExitError of that kind
    (``resume_failure``: a SessionResumeError).
    """

    name: str
    prompt: str
    rules: tuple[Rule, ...]
    text: str | None = None
    usage: Usage | None = None
    tools: tuple[ToolExpectation, ...] = ()
    failure: FailureKind | None = None
    resume_failure: bool = False
    resume: str | None = None
    setup: Scenario | None = None
    schema: dict[str, Any] | None = None
    structured: Any | None = None
    description: str = ""
    main_requests_at_least: int = 1


def call_then_answer(first: Message, answer: Text) -> tuple[Rule, ...]:
    """A script for a turn of two model calls: the first is answered ``first`` (its tool
    calls, perhaps after some words), the one that brings the calls' results ``answer``."""
    return (
        Rule(match=Match(last_input_is_tool_result=False), respond=first),
        Rule(match=Match(last_input_is_tool_result=True), respond=answer),
    )


def _turn_by_turn(*answers: Text) -> tuple[Rule, ...]:
    """The script of a conversation: its n-th turn's model call is answered ``answers[n]``."""
    return tuple(Rule(match=Match(assistant_turns=n), respond=a) for n, a in enumerate(answers))


def _fails(
    name: str,
    description: str,
    answer: HttpError,
    failure: FailureKind,
    match: Match | None = None,
) -> Scenario:
    """A hello turn whose model calls (those ``match`` accepts) are all answered ``answer``:
    the turn fails with ``failure``."""
    return Scenario(
        name=name,
        description=description,
        prompt="Say hello.",
        rules=(Rule(match=Match() if match is None else match, respond=answer),),
        failure=failure,
    )


#: What a CLI says before its shell call in the scenarios that script some words first.
RUNNING = (Text("Running it."),)


def _shell_turn(
    name: str,
    description: str,
    prompt: str,
    tools: tuple[ToolExpectation, ...],
    usages: tuple[Usage, Usage],
    answer: str,
    preface: tuple[Text, ...] = (),
) -> Scenario:
    """A turn of two model calls: the first says ``preface`` and runs each of ``tools``'
    commands in the shell tool, the second (given their results) answers ``answer``.
    ``usages`` are the two calls' usage."""
    first, final = usages
    calls = tuple(ToolCall(command=expected.command) for expected in tools)
    return Scenario(
        name=name,
        description=description,
        prompt=prompt,
        rules=call_then_answer(Message((*preface, *calls), usage=first), Text(answer, usage=final)),
        text=answer,
        usage=total(first, final),
        tools=tools,
        main_requests_at_least=2,
    )


_PLAIN_TEXT = "Hello from the scripted model. The fruit is PAPAYA."
_PLAIN_USAGE = Usage(input=1200, output=40, cache_read=1000)
PLAIN = Scenario(
    name="plain_answer",
    description="a plain text answer",
    prompt="Say hello and name a fruit.",
    rules=_turn_by_turn(Text(_PLAIN_TEXT, usage=_PLAIN_USAGE)),
    text=_PLAIN_TEXT,
    usage=_PLAIN_USAGE,
)

SHELL_TOOL = _shell_turn(
    "shell_tool",
    "a shell tool call, then an answer",
    "Run the echo command, then report.",
    (ToolExpectation("echo agentshim-tool-ok", "agentshim-tool-ok", "agentshim-tool-ok"),),
    (Usage(input=300, output=30), Usage(input=420, output=12)),
    "The command printed agentshim-tool-ok.",
    RUNNING,
)

_NOTED = Text("Noted: MANGOSTEEN.", usage=Usage(input=200, output=20))
_RECALLED = Text("You asked me to remember MANGOSTEEN.", usage=Usage(input=260, output=16))
_REMEMBER = Scenario(
    name="resume_setup",
    description="the turn the resume scenario continues",
    prompt="Remember the word MANGOSTEEN.",
    rules=(),
    text=_NOTED.text,
    usage=_NOTED.usage,
)
RESUME = Scenario(
    name="resume",
    description="a second turn that resumes the first one's conversation",
    prompt="Which word did I ask you to remember?",
    rules=_turn_by_turn(_NOTED, _RECALLED),
    text=_RECALLED.text,
    usage=_RECALLED.usage,
    resume="previous",
    setup=_REMEMBER,
)

RESUME_MISSING = Scenario(
    name="resume_missing",
    description="resuming a conversation the CLI does not have",
    prompt="Continue where we left off.",
    rules=(Rule(respond=Text("This conversation should not have run.")),),
    failure=FailureKind.OTHER,
    resume_failure=True,
    resume="missing",
    main_requests_at_least=0,
)

HTTP_500 = _fails(
    "http_500",
    "every model call answers HTTP 500 until the CLI's retries run out",
    HttpError(500, headers=FAST_RETRY_HEADERS),
    FailureKind.TRANSIENT,
)

HTTP_401 = _fails(
    "http_401",
    "the model API rejects the key (HTTP 401)",
    HttpError(401, headers=FAST_RETRY_HEADERS),
    FailureKind.AUTH,
)

CONTEXT_OVERFLOW = _fails(
    "context_overflow",
    "HTTP 400 prompt too long, also for the CLI's own compaction attempts",
    HttpError.context_overflow(),
    FailureKind.CONTEXT_OVERFLOW,
    Match(kind=None),
)

STRUCTURED = Scenario(
    name="structured_output",
    description="an answer constrained to a JSON schema",
    prompt="Extract the person: Alice is 30 years old.",
    rules=(
        Rule(
            match=Match(schema_requested=True),
            respond=StructuredOutput(STRUCTURED_VALUE, usage=Usage(input=150, output=15)),
        ),
        # Claude Code answers its StructuredOutput tool's result; nothing more is needed.
        Rule(match=Match(last_input_is_tool_result=True), respond=Text("Done.")),
    ),
    schema=STRUCTURED_SCHEMA,
    structured=STRUCTURED_VALUE,
)

_LONG_USAGE = Usage(input=500, output=1800, cache_read=300)
LONG_ANSWER = Scenario(
    name="long_answer",
    description="a long answer streamed as hundreds of small deltas",
    prompt="Write a long answer.",
    rules=(Rule(respond=Text(LONG_TEXT, chunk_size=8, usage=_LONG_USAGE)),),
    text=LONG_TEXT,
    usage=_LONG_USAGE,
)

UNICODE_TOOL = _shell_turn(
    "unicode_tool_output",
    "a shell call printing unicode over several lines",
    "Print the unicode lines.",
    (ToolExpectation(UNICODE_COMMAND, "\n".join(UNICODE_LINES), "zweite Zeile"),),
    (Usage(input=310, output=31), Usage(input=450, output=14)),
    "Fertig ✓ — 完了.",
)

TWO_TOOLS = _shell_turn(
    "two_tool_calls",
    "two shell calls in one model answer",
    "Run both commands.",
    (
        ToolExpectation("echo first-call-output", "first-call-output", "first-call-output"),
        ToolExpectation("echo second-call-output", "second-call-output", "second-call-output"),
    ),
    (Usage(input=330, output=44), Usage(input=520, output=10)),
    "Both commands ran.",
)

#: A command that exits 2 with its message on stderr (GNU ls: 2 is "serious trouble").
MISSING_DIR_COMMAND = "ls /agentshim-missing-dir"

# The CLIs report the failed command differently; agentshim's ToolResult for each:
#   claude    Bash tool_result is_error, content "Exit code 2\n<stderr>": exit 2, failed
#   codex     command_execution status "failed", exit_code 2: exit 2, failed
#   gemini    run_shell_command status "success", no exit code: exit 0, message on stdout
#   opencode  bash status "completed" with metadata.exit 2: exit 2, failed
#   copilot   bash success true with shellExecution.exitCode 2: exit 2, failed
#   pi        bash isError, "Command exited with code 2" in the text: exit 2, failed
# In every case the turn itself succeeds: a failed tool is something the model answers.
FAILED_TOOL = _shell_turn(
    "failed_tool_call",
    "a shell call whose command exits 2, then an answer",
    "List the missing directory, then report.",
    (
        ToolExpectation(
            MISSING_DIR_COMMAND,
            "cannot access '/agentshim-missing-dir'",
            "agentshim-missing-dir",
            exit_code=2,
        ),
    ),
    (Usage(input=340, output=28), Usage(input=470, output=18)),
    "The directory does not exist.",
    RUNNING,
)

#: Every scenario, in the order they are recorded and run.
SCENARIOS: tuple[Scenario, ...] = (
    PLAIN,
    SHELL_TOOL,
    RESUME,
    RESUME_MISSING,
    HTTP_500,
    HTTP_401,
    CONTEXT_OVERFLOW,
    STRUCTURED,
    LONG_ANSWER,
    UNICODE_TOOL,
    TWO_TOOLS,
    FAILED_TOOL,
)

BY_NAME = {scenario.name: scenario for scenario in SCENARIOS}


def missing_session_id(provider: str) -> str:
    """An id in the provider's own form that names no conversation."""
    return MISSING_SESSION_OPENCODE if provider == "opencode" else MISSING_SESSION_UUID
