"""What each recorded Claude Code run must parse to."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentshim.core.errors import FailureKind
from agentshim.core.usage import TokenUsage


@dataclass(frozen=True)
class Expected:
    text: str
    session_id: str | None
    tokens: TokenUsage | None
    cost: float | None
    kind: FailureKind | None = None
    error_has: str = ""
    structured: Any = None
    context_tokens: int | None = None


def _tokens(inp: int, out: int, turns: int) -> TokenUsage:
    return TokenUsage(input_tokens=inp, output_tokens=out, turns=turns)


ZERO_1 = _tokens(0, 0, 1)
API_500 = "API Error: 500 Internal server error."
API_529 = "API Error: 529 Overloaded."

EXPECTED: dict[str, Expected] = {
    "a_plain_text": Expected(
        "Hello from the fake API. The secret word is PAPAYA.",
        "0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966",
        _tokens(100, 20, 1),
        0.001,
        context_tokens=100,
    ),
    "b_tool_bash": Expected(
        "Done.",
        "080a6a65-480a-4d27-853f-064fd2b09ac8",
        _tokens(200, 40, 2),
        0.002,
        context_tokens=100,
    ),
    "b2_tool_bash_failed": Expected(
        "The command failed.",
        "03a0e4d4-05d3-4bda-bcdd-09b7efea9b12",
        _tokens(720, 42, 2),
        0.00465,
        context_tokens=420,
    ),
    "b3_tool_read_failed": Expected(
        "The tool failed.",
        "5647d1f0-9c37-4f7f-9d76-13c736411348",
        _tokens(720, 42, 2),
        0.00465,
        context_tokens=420,
    ),
    "c_resume": Expected(
        "You asked for a secret word; it was PAPAYA.",
        "0d4c7ef7-79e2-46a9-bc62-e1de6f4c1966",
        _tokens(100, 20, 1),
        0.001,
        context_tokens=100,
    ),
    "d_resume_missing_nonuuid": Expected(
        "",
        "38a391e3-bdee-4d55-a396-b2126d48094f",
        _tokens(0, 0, 0),
        0.0,
        FailureKind.OTHER,
        "--resume requires a valid session ID",
    ),
    "d_resume_missing_uuid": Expected(
        "",
        "1c37e53a-67c2-4843-942e-8dc057b7f6aa",
        _tokens(0, 0, 0),
        0.0,
        FailureKind.OTHER,
        "No conversation found with session ID: 1c37e53a-67c2-4843-942e-8dc057b7f6aa",
    ),
    "e1_http500": Expected(
        API_500, "41470584-c504-49a0-9805-b2c7f91cc4c5", ZERO_1, 0.0, FailureKind.TRANSIENT, API_500
    ),
    "e2_http529": Expected(
        API_529, "3de3b210-e910-41f5-af50-cca2b62fe996", ZERO_1, 0.0, FailureKind.TRANSIENT, API_529
    ),
    "e3_http401": Expected(
        "Invalid API key · Fix external API key",
        "995fb9d6-70f4-4b16-9e18-8caf97d7f756",
        ZERO_1,
        0.0,
        FailureKind.AUTH,
        "Invalid API key",
    ),
    "e4_http400_too_long": Expected(
        "Prompt is too long",
        "816c3587-688e-4bfe-909a-1cf196d4d05c",
        ZERO_1,
        0.0,
        FailureKind.CONTEXT_OVERFLOW,
        "Prompt is too long",
    ),
    "e6_sse_midstream_error": Expected(
        API_529,
        "dc5b60aa-beca-4554-a863-0de07bacb1cd",
        _tokens(200, 2, 1),
        0.001575,
        FailureKind.TRANSIENT,
        API_529,
    ),
    "f_json_schema": Expected(
        '{"name":"Alice","age":30}',
        "5a3399b4-6ec5-41be-b1ce-e9e2a8f42089",
        _tokens(100, 20, 2),
        0.001,
        structured={"name": "Alice", "age": 30},
        context_tokens=100,
    ),
    "f_json_schema_no_tool_call": Expected(
        "Alice, 30.",
        "0f3dd7dc-3a04-4981-a16a-b942eded6dcb",
        _tokens(200, 40, 2),
        0.002,
        FailureKind.SCHEMA,
        "no structured output",
        context_tokens=100,
    ),
    "g_stream_json_input": Expected(
        "Reply after interrupt.",
        "0e7dee4a-7046-44a2-aa3d-edb9ef2417cd",
        _tokens(100, 20, 1),
        0.003,
        context_tokens=100,
    ),
    "h_no_verbose": Expected(
        "", None, None, None, FailureKind.OTHER, "--output-format=stream-json requires --verbose"
    ),
    "h_output_json": Expected(
        "Hello in json mode.", "ca80d8c5-9e9b-4d13-9c96-3d9caae7d8f1", _tokens(100, 20, 1), 0.001
    ),
    "h_root_no_sandbox_permission_mode_flag": Expected(
        "", None, None, None, FailureKind.OTHER, "cannot be used with root/sudo privileges"
    ),
    "h_root_without_is_sandbox": Expected(
        "", None, None, None, FailureKind.OTHER, "cannot be used with root/sudo privileges"
    ),
    "probe": Expected(
        "Hello from fake.",
        "e2fc4804-158f-4f4d-831b-f39adb90ec15",
        _tokens(100, 20, 1),
        0.001,
        context_tokens=100,
    ),
}
