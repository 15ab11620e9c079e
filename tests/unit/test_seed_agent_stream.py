"""The agent-stream seed's protocol examples, in this library's shape.

The seed's ``applyProtocol``, ``userTurnLine`` and ``interruptLine`` are each provider's argv
and the Claude stream transport's lines here; the remaining examples (model ids, context
windows, titles, usage, line splitting, ``parseLines``) are in test_models.py,
test_titles.py, test_usage_summary.py and test_stored.py.
"""

from __future__ import annotations

import json

from agentshim.core.permissions import NativePermissions
from agentshim.core.provider import ArgvContext
from agentshim.providers.claude import ClaudeProvider
from agentshim.providers.claude.stream_argv import stream_argv
from agentshim.providers.claude.stream_protocol import control_request, user_message
from agentshim.providers.jsonl import JsonlProvider
from agentshim.transport.ndjson import encode_frame


def _words(argv: list[str]) -> str:
    return " ".join(argv)


def test_claude_json_adds_the_stream_json_output_and_verbose() -> None:
    # applyProtocol("claude -p", "claude-json") → "claude -p --output-format stream-json --verbose"
    argv = ClaudeProvider().build_argv(ArgvContext(binary_path="claude"))
    assert _words(argv).startswith("claude -p --output-format stream-json --verbose")


def test_claude_stream_also_takes_stream_json_input() -> None:
    # applyProtocol("claude -p", "claude-stream") → "... --verbose --input-format stream-json"
    argv = stream_argv(
        ClaudeProvider(), ArgvContext(binary_path="claude"), NativePermissions.bypass()
    )
    words = _words(argv)
    assert words.startswith("claude -p")
    for flags in ("--output-format stream-json", "--verbose", "--input-format stream-json"):
        assert flags in words


def test_a_jsonl_harness_command_is_left_untouched() -> None:
    # applyProtocol("my-agent", "jsonl") → "my-agent"
    assert JsonlProvider(binary="my-agent").build_argv(ArgvContext(binary_path="my-agent")) == [
        "my-agent"
    ]


def test_a_user_turn_is_one_newline_terminated_json_line() -> None:
    # userTurnLine("claude-stream", "Now add tests for it.")
    line = encode_frame(user_message("Now add tests for it."))
    assert line.endswith("\n")
    assert line.count("\n") == 1
    assert json.loads(line) == {
        "type": "user",
        "message": {"role": "user", "content": "Now add tests for it."},
    }


def test_an_interrupt_is_a_control_request_line() -> None:
    # interruptLine("claude-stream", requestId)
    line = encode_frame(control_request("req-1", "interrupt"))
    assert json.loads(line) == {
        "type": "control_request",
        "request_id": "req-1",
        "request": {"subtype": "interrupt"},
    }
