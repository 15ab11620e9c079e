"""Made-up Pi turns in the CLI's real ``--mode json`` format, as Pi 1.x prints it.

Modelled on the 1.6.0 recordings (``tests/fixtures/pi/recorded-1.6.0/``): updates carry the
message's running usage and the delta only, ``agent_end`` says ``willRetry`` and the run ends
with ``agent_settled``; bash results carry ``structuredContent`` with the exit code. The parser
reads 0.73.1's shape too, so the turns stand for both lines.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

from agentshim.core.scripting import (
    ScriptedRun,
    ScriptedTurn,
    ToolFailure,
    refuse_structured_output,
)
from agentshim.core.usage import TokenUsage

from .events import SHELL_TOOL

__all__ = ["SCRIPTED_MODEL", "SCRIPTED_PROVIDER", "resume_failure_lines", "scripted_lines"]

SCRIPTED_PROVIDER = "anthropic"
SCRIPTED_MODEL = "claude-sonnet-4-5"
"""The provider and model a scripted turn's assistant messages name."""

_TIMESTAMP = "2026-11-29T12:49:06.603Z"
_MILLIS = 1795956546668


def _line(frame: Mapping[str, Any]) -> str:
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":")) + "\n"


def _usage(tokens: TokenUsage | None) -> dict[str, Any]:
    usage = tokens or TokenUsage()
    uncached = usage.uncached_input_tokens
    total = usage.input_tokens + usage.output_tokens
    counts: dict[str, Any] = {
        "input": uncached,
        "output": usage.output_tokens,
        "cacheRead": usage.cache_read_input_tokens,
        "cacheWrite": usage.cache_write_input_tokens,
        "totalTokens": total,
        "cost": {
            "input": 0,
            "output": 0,
            "cacheRead": 0,
            "cacheWrite": 0,
            "total": 0,
            "totalFromProvider": False,
        },
        "cacheWrite1h": usage.cache_write_1h_input_tokens,
    }
    if usage.reasoning_output_tokens:
        # Pi 1.x reports it where the provider does, as a part of output.
        counts["reasoning"] = usage.reasoning_output_tokens
    return counts


_RAW_STOPS = {"stop": "end_turn", "toolUse": "tool_use"}
"""The API's own stop reason Pi 1.x adds to a finished call (``rawStopReason``)."""


def _assistant(
    content: list[dict[str, Any]],
    usage: TokenUsage | None,
    stop: str,
    error: str | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content,
        "api": "anthropic-messages",
        "provider": SCRIPTED_PROVIDER,
        "model": SCRIPTED_MODEL,
        "usage": _usage(usage),
        "stopReason": stop,
        "timestamp": _MILLIS,
    }
    if error is not None:
        message["errorMessage"] = error
    raw = _RAW_STOPS.get(stop)
    if raw is not None:
        message.update(rawStopReason=raw, durationMs=0, thinkingLevel="off")
    return message


def _pending() -> dict[str, Any]:
    """The assistant ``message_start`` of a call in flight: no content, no usage yet."""
    return _assistant([], None, "pending")


def _update(event: dict[str, Any], message: dict[str, Any]) -> str:
    # Pi 1.x: the message's running usage, then the update with its delta only.
    return _line(
        {"type": "message_update", "usage": message["usage"], "assistantMessageEvent": event}
    )


def _deltas(text: str) -> list[str]:
    # The recordings stream a message in chunks of eight characters.
    return [text[i : i + 8] for i in range(0, len(text), 8)]


def scripted_lines(script: ScriptedTurn) -> ScriptedRun:
    """Return what ``pi --print --mode json`` prints for the turn ``script`` describes.

    ``tool_calls`` are ``(tool name, arguments, output)``, all requested by a first assistant
    message and run; an output that is an ``agentshim.testing.ToolFailure`` fails the
    call (``isError: true``; for ``bash`` the text ends "Command exited with code N" and
    ``structuredContent.exit_code`` is N, as the CLI prints it). The answer ``text`` is the
    second message, which carries all of ``usage`` (reasoning as ``usage.reasoning``, 1-hour
    cache writes as ``usage.cacheWrite1h``; the reported cost is 0, as for a model with no
    price configured). A nonzero ``returncode`` makes the answer a failed model call
    (``stopReason: "error"``), as Pi prints it, and exits with that code (Pi itself exits 0).

    Raises:
        InvalidRequestError: ``structured_output`` was given; Pi has no output schema.
    """
    refuse_structured_output(script, "Pi", "pi")
    sid = script.session_id or str(uuid.uuid4())
    user = {"role": "user", "content": [{"type": "text", "text": "prompt"}], "timestamp": _MILLIS}
    out = [
        _line(
            {
                "type": "session",
                "version": 3,
                "id": sid,
                "timestamp": _TIMESTAMP,
                "cwd": "/home/user/work",
            }
        ),
        _line({"type": "agent_start"}),
        _line({"type": "turn_start"}),
        _line({"type": "message_start", "message": user}),
        _line({"type": "message_end", "message": user}),
    ]
    messages: list[dict[str, Any]] = [user]
    if script.tool_calls:
        messages += _tool_turn(out, script.tool_calls)
        out.append(_line({"type": "turn_start"}))
    if script.returncode == 0:
        final = _answer(out, script.text, script.usage)
    else:
        final = _assistant([], None, "error", f"500 scripted failure (exit {script.returncode})")
        out.append(_line({"type": "message_start", "message": final}))
        out.append(_line({"type": "message_end", "message": final}))
    out.append(_line({"type": "turn_end", "message": final, "toolResults": []}))
    out.append(_line({"type": "agent_end", "messages": [*messages, final], "willRetry": False}))
    out.append(_line({"type": "agent_settled", "aborted": False}))
    return ScriptedRun(stdout=tuple(out), stderr=(), returncode=script.returncode)


def _tool_turn(
    out: list[str], tool_calls: Sequence[tuple[str, Mapping[str, Any], str]]
) -> list[dict[str, Any]]:
    calls = [
        {"type": "toolCall", "id": f"toolu_{index:024x}", "name": name, "arguments": dict(args)}
        for index, (name, args, _) in enumerate(tool_calls)
    ]
    request = _assistant(calls, None, "toolUse")
    out.append(_line({"type": "message_start", "message": _pending()}))
    for index, call in enumerate(calls):
        out.append(_update({"type": "toolcall_start", "contentIndex": index}, request))
        out.append(
            _update({"type": "toolcall_end", "contentIndex": index, "toolCall": call}, request)
        )
    out.append(_line({"type": "message_end", "message": request}))
    results: list[dict[str, Any]] = []
    for call, (name, _, output) in zip(calls, tool_calls, strict=True):
        ids = {"toolCallId": call["id"], "toolName": call["name"], "args": call["arguments"]}
        exit_code = _exit_code(output)
        text = str(output)
        if exit_code and name == SHELL_TOOL:
            # As recorded: bash appends the exit code to the command's output.
            text = f"{text}\n\nCommand exited with code {exit_code}"
        partial = {"content": [{"type": "text", "text": str(output)}]}
        body: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
        failed = exit_code != 0
        if name == SHELL_TOOL:
            body["structuredContent"] = {
                "output": str(output),
                "truncated": False,
                "exit_code": exit_code,
                "wall_time_seconds": 0,
            }
            if failed:
                body["isError"] = True
        ended = {
            "toolCallId": call["id"],
            "toolName": call["name"],
            "result": body,
            "isError": failed,
            "durationMs": 0,
        }
        out.append(_line({"type": "tool_execution_start", **ids}))
        out.append(_line({"type": "tool_execution_update", **ids, "partialResult": partial}))
        out.append(_line({"type": "tool_execution_end", **ended}))
        result = {
            "role": "toolResult",
            "toolCallId": call["id"],
            "toolName": call["name"],
            "content": body["content"],
            "isError": failed,
            "timestamp": _MILLIS,
        }
        out.append(_line({"type": "message_start", "message": result}))
        out.append(_line({"type": "message_end", "message": result}))
        results.append(result)
    out.append(_line({"type": "turn_end", "message": request, "toolResults": results}))
    return [request, *results]


def _exit_code(output: str) -> int:
    """The exit code a scripted call's output stands for: a ToolFailure's, else 0."""
    return output.exit_code if isinstance(output, ToolFailure) else 0


def _answer(out: list[str], text: str, usage: TokenUsage | None) -> dict[str, Any]:
    final = _assistant([{"type": "text", "text": text}] if text else [], usage, "stop")
    out.append(_line({"type": "message_start", "message": _pending()}))
    if text:
        out.append(_update({"type": "text_start", "contentIndex": 0}, final))
        for piece in _deltas(text):
            out.append(_update({"type": "text_delta", "contentIndex": 0, "delta": piece}, final))
        out.append(_update({"type": "text_end", "contentIndex": 0, "content": text}, final))
    out.append(_line({"type": "message_end", "message": final}))
    return final


def resume_failure_lines(*, session_id: str | None = None) -> ScriptedRun:
    """Return what Pi prints when ``--session`` names a session it does not have (exit 1)."""
    sid = session_id or "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000"
    return ScriptedRun(stderr=(f"No session found matching '{sid}'\n",), returncode=1)
