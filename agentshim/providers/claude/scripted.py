"""Made-up Claude Code turns in the CLI's real stream-json format, for tests.

The frames copy the shape Claude Code 2.1.197 prints (see tests/fixtures/claude/): a
``system/init`` frame, one ``assistant`` frame per content block, a ``user`` frame per tool
result, and the ``result`` frame with usage, ``modelUsage`` and ``total_cost_usd``. A scripted
turn parses exactly like a recorded one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from agentshim.core.errors import InvalidRequestError
from agentshim.core.scripting import ScriptedRun, ScriptedTurn, ToolFailure
from agentshim.core.usage import TokenUsage

from .events import SHELL_TOOL, STRUCTURED_OUTPUT_TOOL
from .model_data import DEFAULT_MODEL, MODEL_TABLE, PRICING_TABLE
from .provider import RESUME_MISSING_TEXT

__all__ = ["CLI_VERSION", "resume_failure_lines", "scripted_lines"]

CLI_VERSION = "2.1.197"
"""The Claude Code version whose output these frames copy."""

_NAMESPACE = uuid.UUID("6f1c3a52-8d0e-4b7a-9c21-5e4d3b2a1f00")
_DEFAULT_USAGE = TokenUsage(input_tokens=100, output_tokens=20)
_TOOLS = (
    "Task",
    "Bash",
    "Edit",
    "NotebookEdit",
    "Read",
    "Skill",
    "TaskCreate",
    "TaskGet",
    "TaskList",
    "TaskUpdate",
    "WebFetch",
    "WebSearch",
    "Write",
)
_STRUCTURED_ACK = "Structured output provided successfully"


def _line(frame: Mapping[str, Any]) -> str:
    return json.dumps(frame, separators=(",", ":"), ensure_ascii=False) + "\n"


def _uuid(*parts: object) -> str:
    return str(uuid.uuid5(_NAMESPACE, "\x1f".join(str(p) for p in parts)))


def _raw_usage(usage: TokenUsage) -> dict[str, Any]:
    write_1h = usage.cache_write_1h_input_tokens
    return {
        "input_tokens": usage.uncached_input_tokens,
        "cache_creation_input_tokens": usage.cache_write_input_tokens,
        "cache_read_input_tokens": usage.cache_read_input_tokens,
        "output_tokens": usage.output_tokens,
        "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
        "service_tier": "standard",
        "cache_creation": {
            "ephemeral_1h_input_tokens": write_1h,
            "ephemeral_5m_input_tokens": usage.cache_write_input_tokens - write_1h,
        },
        "inference_geo": "",
        "iterations": [],
        "speed": "standard",
    }


class _Turn:
    """Builds the frames of one scripted turn, numbering messages and tool ids as it goes."""

    def __init__(self, session_id: str, usage: TokenUsage) -> None:
        self.session_id = session_id
        self.usage = usage
        self.lines: list[str] = []
        self._count = 0

    def _next(self, prefix: str) -> str:
        self._count += 1
        return f"{prefix}_scripted_{self._count}_{_uuid(self.session_id, self._count)[:8]}"

    def init(self) -> None:
        self.lines.append(
            _line(
                {
                    "type": "system",
                    "subtype": "init",
                    "cwd": "/home/user/work",
                    "session_id": self.session_id,
                    "tools": list(_TOOLS),
                    "mcp_servers": [],
                    "model": DEFAULT_MODEL,
                    "permissionMode": "bypassPermissions",
                    "slash_commands": [],
                    "apiKeySource": "ANTHROPIC_API_KEY",
                    "claude_code_version": CLI_VERSION,
                    "output_style": "default",
                    "agents": ["general-purpose"],
                    "skills": [],
                    "plugins": [],
                    "uuid": _uuid(self.session_id, "init"),
                    "fast_mode_state": "off",
                }
            )
        )

    def assistant(self, block: Mapping[str, Any]) -> None:
        message_id = self._next("msg")
        usage = self.usage
        self.lines.append(
            _line(
                {
                    "type": "assistant",
                    "message": {
                        "id": message_id,
                        "type": "message",
                        "role": "assistant",
                        "model": DEFAULT_MODEL,
                        "content": [dict(block)],
                        "stop_reason": None,
                        "stop_sequence": None,
                        "usage": {
                            "input_tokens": usage.uncached_input_tokens,
                            "output_tokens": 1 if usage.output_tokens else 0,
                            "cache_creation_input_tokens": usage.cache_write_input_tokens,
                            "cache_read_input_tokens": usage.cache_read_input_tokens,
                        },
                        "context_management": None,
                    },
                    "parent_tool_use_id": None,
                    "session_id": self.session_id,
                    "uuid": _uuid(message_id),
                    "request_id": f"req_{message_id}",
                }
            )
        )

    def tool_call(self, name: str, args: Mapping[str, Any], output: str, exit_code: int) -> None:
        tool_id = self._next("toolu")
        self.assistant({"type": "tool_use", "id": tool_id, "name": name, "input": dict(args)})
        if exit_code == 0:
            block: dict[str, Any] = {
                "tool_use_id": tool_id,
                "type": "tool_result",
                "content": output,
                "is_error": False,
            }
            answer: object = {"stdout": output, "stderr": "", "interrupted": False}
        else:
            # As recorded: a failed Bash call leads with its exit code, and the frame's
            # tool_use_result is the block's text behind "Error: " rather than an object.
            content = output.rstrip("\n")
            if name == SHELL_TOOL:
                content = f"Exit code {exit_code}\n{content}"
            block = {
                "type": "tool_result",
                "content": content,
                "is_error": True,
                "tool_use_id": tool_id,
            }
            answer = f"Error: {content}"
        self.lines.append(
            _line(
                {
                    "type": "user",
                    "message": {"role": "user", "content": [block]},
                    "parent_tool_use_id": None,
                    "session_id": self.session_id,
                    "uuid": _uuid(tool_id, "result"),
                    "timestamp": "2026-11-29T12:00:00.000Z",
                    "tool_use_result": answer,
                }
            )
        )

    def result(self, frame: Mapping[str, Any]) -> None:
        usage = self.usage
        cost = PRICING_TABLE.cost(DEFAULT_MODEL, usage) or 0.0
        spec = MODEL_TABLE.get(DEFAULT_MODEL)
        self.lines.append(
            _line(
                {
                    "type": "result",
                    **frame,
                    "duration_ms": 120,
                    "duration_api_ms": 40,
                    "num_turns": usage.turns,
                    "stop_reason": "end_turn",
                    "session_id": self.session_id,
                    "total_cost_usd": cost,
                    "usage": _raw_usage(usage),
                    "modelUsage": {
                        DEFAULT_MODEL: {
                            "inputTokens": usage.uncached_input_tokens,
                            "outputTokens": usage.output_tokens,
                            "cacheReadInputTokens": usage.cache_read_input_tokens,
                            "cacheCreationInputTokens": usage.cache_write_input_tokens,
                            "webSearchRequests": 0,
                            "costUSD": cost,
                            "contextWindow": spec.context_window if spec else None,
                            "maxOutputTokens": spec.max_output_tokens if spec else None,
                        }
                    },
                    "permission_denials": [],
                    "uuid": _uuid(self.session_id, "result"),
                }
            )
        )


def _encodable(label: str, value: object) -> str:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise InvalidRequestError(label, f"cannot be written as JSON: {exc}") from None


def scripted_lines(script: ScriptedTurn) -> ScriptedRun:
    """Return what ``claude -p --output-format stream-json --verbose`` prints for ``script``.

    ``tool_calls`` are ``(tool name, arguments, output)``, each answered before the final text;
    an output that is an ``agentshim.testing.ToolFailure`` is a failed call (an
    ``is_error`` tool result; for Bash led by ``Exit code N``, as the CLI prints it). With ``structured_output`` the model calls the StructuredOutput tool
    and the result carries the payload (and its JSON as the result text, as the CLI does).
    ``usage`` is the turn's normalized usage (its ``turns`` becomes ``num_turns``); the cost is
    what the model's list price gives. A nonzero ``returncode`` makes the result an
    ``error_during_execution`` with ``text`` (or a generic message) as its error.
    """
    calls = [
        (str(name), dict(args), str(output), _exit_code(output))
        for name, args, output in script.tool_calls
    ]
    for name, args, _, _ in calls:
        _encodable(f"the arguments of tool call {name!r}", args)
    structured_output = script.structured_output
    payload_json = (
        _encodable("structured_output", structured_output)
        if structured_output is not None
        else None
    )
    text = script.text
    session = script.session_id or _uuid("session", text, *(name for name, _, _, _ in calls))
    usage = script.usage
    if usage is None:
        model_calls = 1 + len(calls) + (1 if payload_json is not None else 0)
        usage = TokenUsage(
            input_tokens=_DEFAULT_USAGE.input_tokens * model_calls,
            output_tokens=_DEFAULT_USAGE.output_tokens * model_calls,
            turns=model_calls,
        )
    turn = _Turn(session, usage)
    turn.init()
    for name, args, output, exit_code in calls:
        turn.tool_call(name, args, output, exit_code)
    if text:
        turn.assistant({"type": "text", "text": text})
    if script.returncode != 0:
        turn.result(
            {
                "subtype": "error_during_execution",
                "is_error": True,
                "errors": [text or "the scripted turn failed"],
            }
        )
        return ScriptedRun(stdout=tuple(turn.lines), returncode=script.returncode)
    result: dict[str, Any] = {"subtype": "success", "is_error": False, "api_error_status": None}
    if payload_json is not None:
        turn.tool_call(STRUCTURED_OUTPUT_TOOL, _tool_input(structured_output), _STRUCTURED_ACK, 0)
        result["result"] = payload_json
        result["structured_output"] = structured_output
    else:
        result["result"] = text
    result["terminal_reason"] = "completed"
    turn.result(result)
    return ScriptedRun(stdout=tuple(turn.lines), returncode=0)


def _exit_code(output: str) -> int:
    """The exit code a scripted call's output stands for: a ToolFailure's, else 0."""
    return output.exit_code if isinstance(output, ToolFailure) else 0


def _tool_input(payload: object) -> Mapping[str, Any]:
    # The StructuredOutput tool's input is always an object; a non-object payload is wrapped.
    if isinstance(payload, dict):
        return payload  # pyright: ignore[reportUnknownVariableType]
    return {"value": payload}


def resume_failure_lines(*, session_id: str | None = None) -> ScriptedRun:
    """Return what Claude Code prints when ``--resume`` names a conversation it does not have.

    One ``result`` frame (``error_during_execution``, the "No conversation found" text in
    ``errors``) and no ``init``, the same text on stderr, exit 1.
    """
    session = session_id or _uuid("missing-session")
    message = f"{RESUME_MISSING_TEXT} with session ID: {session}"
    frame = {
        "type": "result",
        "subtype": "error_during_execution",
        "duration_ms": 0,
        "duration_api_ms": 0,
        "is_error": True,
        "num_turns": 0,
        "stop_reason": None,
        "session_id": session,
        "total_cost_usd": 0,
        "usage": _raw_usage(TokenUsage()),
        "modelUsage": {},
        "permission_denials": [],
        "uuid": _uuid(session, "missing"),
        "errors": [message],
    }
    return ScriptedRun(stdout=(_line(frame),), stderr=(message + "\n",), returncode=1)
