"""What each recorded Copilot CLI 1.0.102 run (tests/fixtures/copilot/) must parse to, and helpers."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from agentshim.core.errors import FailureKind
from agentshim.core.events import AgentEvent
from agentshim.core.turn import ParsedTurn
from agentshim.providers.copilot import CopilotStreamParser
from tests.unit.providers.fixtures import Capture, Expected, feed

EXPECTED: dict[str, Expected] = {
    "plain": Expected("Hello from the fake model.", "bf10cca5-bc27-4b95-9fbc-d84a381b9b3b"),
    "resume": Expected("Hello from the fake model.", "d8d67461-6201-4285-8233-9e4dda0071e1"),
    "tool_shell": Expected("Done.", "d8d67461-6201-4285-8233-9e4dda0071e1"),
    "tool_shell_failed": Expected("The command failed.", "e477012f-1b14-4cd0-8adc-e4027d79fee0"),
    "tool_view_failed": Expected("The tool failed.", "df5acabe-e91d-42f0-b82b-99fb8c0a2cf8"),
    "api_401": Expected(
        "", "fda33b4a-bc28-4c4d-b986-e2206b38fe96", FailureKind.AUTH, "Authentication failed"
    ),
    "api_400_context_length": Expected(
        "",
        "0fdbd5b5-0fa3-4b7c-b3ea-c39f8f7e711c",
        FailureKind.CONTEXT_OVERFLOW,
        "rejected the prompt as too long",
    ),
    "api_500": Expected(
        "", "3dc602e3-49a7-4441-b668-15574236af59", FailureKind.TRANSIENT, "retried 5 times"
    ),
    "stdin_prompt_connection_refused": Expected(
        "",
        "0813f49e-b780-4fc3-a9fc-8f11549673db",
        FailureKind.TRANSIENT,
        "Could not connect to local model provider",
    ),
    "resume_missing": Expected("", None, FailureKind.OTHER, "No session, task, or name matched"),
}


def parse(
    stdout: Sequence[str], stderr: Sequence[str] = (), **options: Any
) -> tuple[ParsedTurn, list[AgentEvent]]:
    return feed(lambda emit: CopilotStreamParser(emit, **options), stdout, stderr)


def of_type(events: Sequence[AgentEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def replay(capture: Capture) -> tuple[ParsedTurn, list[AgentEvent]]:
    return parse(capture.stdout_lines, capture.stderr_lines)
