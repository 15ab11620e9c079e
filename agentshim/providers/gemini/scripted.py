"""Made-up Gemini CLI turns in the CLI's real stream-json format (modelled on 0.61.0 recordings)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from agentshim.core.scripting import (
    ScriptedRun,
    ScriptedTurn,
    ToolFailure,
    refuse_structured_output,
)
from agentshim.core.usage import TokenUsage

__all__ = ["SCRIPTED_MODEL", "resume_failure_lines", "scripted_lines"]

SCRIPTED_MODEL = "gemini-2.5-pro"
"""The model version a scripted turn's stats are keyed by."""

_TIMESTAMP = "2026-11-29T12:50:26.853Z"
_BANNER = (
    "Warning: 256-color support not detected. Using a terminal with at least 256-color "
    "support is recommended for a better visual experience.\n",
    "Ripgrep is not available. Falling back to GrepTool.\n",
)


def _line(frame: Mapping[str, Any]) -> str:
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":")) + "\n"


def _stats(usage: TokenUsage | None, tool_calls: int) -> dict[str, Any]:
    tokens = usage or TokenUsage()
    # The CLI's output_tokens excludes thinking; its total_tokens includes it.
    visible_output = tokens.output_tokens - tokens.reasoning_output_tokens
    entry = {
        "total_tokens": tokens.input_tokens + tokens.output_tokens,
        "input_tokens": tokens.input_tokens,
        "output_tokens": visible_output,
        "cached": tokens.cache_read_input_tokens,
        "input": tokens.input_tokens - tokens.cache_read_input_tokens,
    }
    return {**entry, "duration_ms": 99, "tool_calls": tool_calls, "models": {SCRIPTED_MODEL: entry}}


def _deltas(text: str) -> list[str]:
    # The CLI streams an answer as several deltas; split the way a recording does.
    if len(text) < 2:
        return [text] if text else []
    middle = len(text) // 3 or 1
    return [text[:middle], text[middle:]]


def _failed(output: str) -> bool:
    """Whether a scripted call's output is a ToolFailure."""
    return isinstance(output, ToolFailure)


def scripted_lines(script: ScriptedTurn) -> ScriptedRun:
    """Return what ``gemini --output-format stream-json`` prints for the turn ``script`` describes.

    ``tool_calls`` are ``(tool name, parameters, output)``, each answered with a successful
    ``tool_result``, or for an output that is an ``agentshim.testing.ToolFailure``
    one with ``status: "error"`` and an ``error`` object carrying its message (the CLI prints
    no exit code). The real CLI reports a shell command that exits nonzero as a success whose
    output is the command's; ``status: "error"`` is a tool that could not run (bad parameters,
    a path outside the workspace). Gemini reports no cache writes, so cache-write tokens in ``usage`` appear
    as plain input. A nonzero ``returncode`` ends the stream with ``result.status: "error"``,
    as the CLI does for every failure it exits nonzero on after starting.

    Raises:
        InvalidRequestError: ``structured_output`` was given; the Gemini CLI has no output schema.
    """
    refuse_structured_output(script, "the Gemini CLI", "gemini")
    sid = script.session_id or str(uuid.uuid4())
    out = [
        _line({"type": "init", "timestamp": _TIMESTAMP, "session_id": sid, "model": "auto"}),
        _line({"type": "message", "timestamp": _TIMESTAMP, "role": "user", "content": "prompt"}),
    ]
    stderr: list[str] = list(_BANNER)
    for index, (name, params, output) in enumerate(script.tool_calls):
        tool_id = f"{name}__{name}_1795956629857_{index}"
        out.append(
            _line(
                {
                    "type": "tool_use",
                    "timestamp": _TIMESTAMP,
                    "tool_name": name,
                    "tool_id": tool_id,
                    "parameters": dict(params),
                }
            )
        )
        answer: dict[str, Any] = {
            "type": "tool_result",
            "timestamp": _TIMESTAMP,
            "tool_id": tool_id,
        }
        if _failed(output):
            # The CLI prints no exit code, only one of its ToolErrorType names and the message.
            answer["status"] = "error"
            answer["output"] = str(output)
            answer["error"] = {"type": "execution_failed", "message": str(output)}
            stderr.append(f"Error executing tool {name}: {output}\n")
        else:
            answer["status"] = "success"
            answer["output"] = output
        out.append(_line(answer))
    for piece in _deltas(script.text):
        out.append(
            _line(
                {
                    "type": "message",
                    "timestamp": _TIMESTAMP,
                    "role": "assistant",
                    "content": piece,
                    "delta": True,
                }
            )
        )
    result: dict[str, Any] = {"type": "result", "timestamp": _TIMESTAMP}
    if script.returncode == 0:
        result["status"] = "success"
    else:
        message = f"scripted failure (exit {script.returncode})"
        result["status"] = "error"
        result["error"] = {"type": "unknown", "message": f"[API Error: {message}]"}
        stderr.append(f"Error when talking to Gemini API _ApiError: {message}\n")
    result["stats"] = _stats(script.usage, len(script.tool_calls))
    out.append(_line(result))
    return ScriptedRun(stdout=tuple(out), stderr=tuple(stderr), returncode=script.returncode)


def resume_failure_lines(*, session_id: str | None = None) -> ScriptedRun:
    """Return what the CLI prints when ``--resume`` names a session it does not have (exit 42)."""
    sid = session_id or "00000000-0000-4000-8000-000000000000"
    return ScriptedRun(
        stderr=(
            f'Error resuming session: Invalid session identifier "{sid}".\n',
            "  Searched for sessions in /home/user/.gemini/tmp/work/chats.\n",
            "  Use --list-sessions to see available sessions, then use --resume {number}, "
            "--resume {uuid}, or --resume latest.\n",
        ),
        returncode=42,
    )
