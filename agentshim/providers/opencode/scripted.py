"""Made-up opencode turns in the CLI's real ``run --format json`` format (1.18.33 recordings)."""

from __future__ import annotations

import json
import secrets
import string
from collections.abc import Mapping
from typing import Any

from agentshim.core.scripting import (
    ScriptedRun,
    ScriptedTurn,
    ToolFailure,
    refuse_structured_output,
)
from agentshim.core.usage import TokenUsage

from .events import SHELL_TOOL

__all__ = ["resume_failure_lines", "scripted_lines"]

_TIMESTAMP = 1795956479682
_ID_CHARS = string.ascii_letters + string.digits


def _id(prefix: str) -> str:
    return prefix + "".join(secrets.choice(_ID_CHARS) for _ in range(26))


def _line(frame: Mapping[str, Any]) -> str:
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":")) + "\n"


def _tokens(usage: TokenUsage | None) -> dict[str, Any]:
    tokens = usage or TokenUsage()
    # opencode reports cache tokens and reasoning apart from input and output.
    uncached = (
        tokens.input_tokens - tokens.cache_read_input_tokens - tokens.cache_write_input_tokens
    )
    visible = tokens.output_tokens - tokens.reasoning_output_tokens
    return {
        "total": tokens.input_tokens + tokens.output_tokens,
        "input": uncached,
        "output": visible,
        "reasoning": tokens.reasoning_output_tokens,
        "cache": {"write": tokens.cache_write_input_tokens, "read": tokens.cache_read_input_tokens},
    }


class _Frames:
    """Builds one session's frames with the ids and envelope opencode puts on every line."""

    def __init__(self, session_id: str) -> None:
        self.session_id = session_id
        self.lines: list[str] = []
        self.message_id = _id("msg_")

    def emit(self, kind: str, part: dict[str, Any]) -> None:
        part = {
            "id": _id("prt_"),
            "messageID": self.message_id,
            "sessionID": self.session_id,
            **part,
        }
        self.lines.append(
            _line(
                {"type": kind, "timestamp": _TIMESTAMP, "sessionID": self.session_id, "part": part}
            )
        )

    def step(self, reason: str, tokens: dict[str, Any]) -> None:
        self.emit(
            "step_finish", {"reason": reason, "type": "step-finish", "tokens": tokens, "cost": 0}
        )
        self.message_id = _id("msg_")


def _state(name: str, params: Mapping[str, Any], output: str) -> dict[str, Any]:

    timing = {"start": _TIMESTAMP - 200, "end": _TIMESTAMP - 50}
    if isinstance(output, ToolFailure) and name != SHELL_TOOL:
        # As recorded: a tool that fails has no output, only the error text.
        return {"status": "error", "input": dict(params), "error": str(output), "time": timing}
    # A shell command that exits nonzero still "completed"; its exit code says it failed.
    exit_code = output.exit_code if isinstance(output, ToolFailure) else 0
    return {
        "status": "completed",
        "input": dict(params),
        "output": str(output),
        "metadata": {"output": str(output), "exit": exit_code, "truncated": False},
        "title": name,
        "time": timing,
    }


def scripted_lines(script: ScriptedTurn) -> ScriptedRun:
    """Return what ``opencode run --format json`` prints for the turn ``script`` describes.

    ``tool_calls`` are ``(tool name, parameters, output)``. An output that is an
    ``agentshim.testing.ToolFailure`` fails the call as the CLI prints it: a ``bash``
    call ``completed`` with the failure's exit code in ``metadata.exit``, any other tool
    ``status: "error"`` with the message as its ``error``.

    Tool calls run in a first step (ending ``reason: "tool-calls"``), the answer in a last one
    (``reason: "stop"``) that carries all of ``usage``; cost is reported as 0, as opencode does
    for a model without a price. A nonzero ``returncode`` replaces the last step with an
    ``error`` frame, as the CLI prints for a failed request.

    Raises:
        InvalidRequestError: ``structured_output`` was given; opencode has no output schema.
    """
    refuse_structured_output(script, "opencode", "opencode")
    frames = _Frames(script.session_id or _id("ses_"))
    zero = _tokens(None)
    if script.tool_calls:
        frames.emit("step_start", {"type": "step-start"})
        for name, params, output in script.tool_calls:
            frames.emit(
                "tool_use",
                {
                    "type": "tool",
                    "tool": name,
                    "callID": _id("call_"),
                    "state": _state(name, params, output),
                },
            )
        frames.step("tool-calls", zero)
    if script.returncode != 0:
        error = {
            "name": "UnknownError",
            "data": {"message": f"scripted failure (exit {script.returncode})"},
        }
        frames.lines.append(
            _line(
                {
                    "type": "error",
                    "timestamp": _TIMESTAMP,
                    "sessionID": frames.session_id,
                    "error": error,
                }
            )
        )
        return ScriptedRun(stdout=tuple(frames.lines), stderr=(), returncode=script.returncode)
    frames.emit("step_start", {"type": "step-start"})
    if script.text:
        frames.emit(
            "text",
            {
                "type": "text",
                "text": script.text,
                "time": {"start": _TIMESTAMP - 40, "end": _TIMESTAMP},
            },
        )
    frames.step("stop", _tokens(script.usage))
    return ScriptedRun(stdout=tuple(frames.lines), stderr=(), returncode=0)


def resume_failure_lines(*, session_id: str | None = None) -> ScriptedRun:
    """Return what opencode prints when ``--session`` names a session it does not have.

    The CLI does not repeat the id; ``session_id`` is accepted for the common signature.
    """
    del session_id
    return ScriptedRun(stderr=("\x1b[91m\x1b[1mError: \x1b[0mSession not found\n",), returncode=1)
