"""What each recorded Pi 0.73.1 run (tests/fixtures/pi/) must parse to, and helpers."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from agentshim.core.errors import FailureKind
from agentshim.core.events import AgentEvent
from agentshim.core.provider import ParserContext
from agentshim.core.turn import ParsedTurn
from agentshim.providers.pi import PiStreamParser
from tests.unit.providers.fixtures import Capture, Expected, feed

# `pi --mode rpc`: not what PiProvider runs; pinned by TestRpcModeOutput, not EXPECTED.
RPC_MODE = "r_rpc_mode"
EXPECTED: dict[str, Expected] = {
    "a_plain_text": Expected(
        "Hello from the fake API. The secret word is PAPAYA.",
        "01a2275a-1c2a-72ae-8ced-4a8fdca01c2e",
        input_tokens=100,
        output_tokens=20,
    ),
    "b_tool_bash": Expected(
        "Done.", "01a2275a-2449-702f-a7ec-addc1ecbfb68", input_tokens=200, output_tokens=40
    ),
    "b2_tool_bash_failed": Expected(
        "The command failed.",
        "01a227f9-f00a-77e8-a919-31621bfcd677",
        input_tokens=720,
        output_tokens=42,
    ),
    "b3_tool_read_failed": Expected(
        "The tool failed.",
        "01a227fb-4c12-71cd-b25b-187bc5c99098",
        input_tokens=720,
        output_tokens=42,
    ),
    "c_resume_full_id": Expected(
        "You asked for a secret word; it was PAPAYA.",
        "01a2275a-1c2a-72ae-8ced-4a8fdca01c2e",
        input_tokens=100,
        output_tokens=20,
    ),
    "o_oai_plain_text": Expected(
        "Hello via chat completions.",
        "01a2275a-485c-7241-97c0-304d6daecce6",
        input_tokens=100,
        output_tokens=20,
    ),
    "probe": Expected(
        "Hello from fake.",
        "01a22759-d5d9-7255-aeea-d898811988a6",
        input_tokens=100,
        output_tokens=20,
    ),
    "d_resume_missing_nonuuid": Expected(
        "", None, FailureKind.OTHER, "No session found matching 'no-such-session'"
    ),
    "d_resume_missing_uuid": Expected(
        "",
        None,
        FailureKind.OTHER,
        "No session found matching '0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000'",
    ),
    "e1_http500": Expected(
        "", "01a2275a-6ae6-7714-b799-c2e68e919d53", FailureKind.TRANSIENT, "500 "
    ),
    "e1b_http500_fast_retry_settings": Expected(
        "", "01a2275d-e28f-726d-b0ce-5cc36d13e343", FailureKind.TRANSIENT, "Internal server error"
    ),
    "e2_http529": Expected(
        "", "01a2275a-bf82-7275-bc18-3db611dc7509", FailureKind.TRANSIENT, "529 "
    ),
    "e3_http401": Expected(
        "", "01a2275b-11df-7591-9bda-8641714468f5", FailureKind.AUTH, "invalid x-api-key"
    ),
    "e3b_http401_text_mode": Expected("", None, FailureKind.AUTH, "401 "),
    "e4_http400_too_long": Expected(
        "",
        "01a2275b-1a01-73e8-b389-b92f2ae9fdff",
        FailureKind.CONTEXT_OVERFLOW,
        "prompt is too long",
    ),
}


def parse(
    stdout: Sequence[str],
    stderr: Sequence[str] = (),
    *,
    resume: str | None = None,
    **options: Any,
) -> tuple[ParsedTurn, list[AgentEvent]]:
    def make(emit: Callable[[AgentEvent], None]) -> PiStreamParser:
        parser = PiStreamParser(emit, **options)
        parser.configure(ParserContext(resumed=resume is not None, requested_session_id=resume))
        return parser

    return feed(make, stdout, stderr)


def of_type(events: Sequence[AgentEvent], kind: type[Any]) -> list[Any]:
    return [e for e in events if isinstance(e, kind)]


def replay(capture: Capture) -> tuple[ParsedTurn, list[AgentEvent]]:
    """Parse a recorded run as the turn that ran it: resumed when it named a session."""
    return parse(capture.stdout_lines, capture.stderr_lines, resume=capture.flag_value("--session"))
