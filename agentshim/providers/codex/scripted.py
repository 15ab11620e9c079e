"""Made-up Codex turns in the real ``codex exec --json`` format (as recorded from codex 0.171.0).

A scripted turn parses exactly like a recorded one: ``thread.started``, ``turn.started``, one
item pair per tool call, an ``agent_message`` and ``turn.completed`` with usage; a nonzero
``returncode`` ends in an ``error`` notice and ``turn.failed`` instead, as a failed request does.
The usage given is what Codex reports, the thread's running total, which for a fresh thread is
the turn's own.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from typing import Any

from agentshim.core.errors import InvalidRequestError
from agentshim.core.jsonvalues import list_or_empty
from agentshim.core.scripting import ScriptedRun, ScriptedTurn, ToolFailure
from agentshim.core.usage import TokenUsage

from .events import EDIT_TOOL, MCP_TOOL, SHELL_TOOL, WEB_TOOL

__all__ = ["resume_failure_lines", "scripted_lines"]

_SHELL_NAMES = frozenset({SHELL_TOOL, "shell", "exec_command", "bash"})
_EDIT_NAMES = frozenset({EDIT_TOOL, "apply_patch"})
_MISSING_THREAD = "00000000-0000-7000-8000-000000000000"


def _line(frame: Mapping[str, Any]) -> str:
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":")) + "\n"


def _command(args: Mapping[str, Any]) -> str:
    value: object = args.get("command", args.get("cmd"))
    if isinstance(value, str):
        return value
    parts = list_or_empty(value)
    if parts:
        return " ".join(str(part) for part in parts)
    return json.dumps(dict(args), ensure_ascii=False)


def _exit_code(output: str) -> int:
    """The exit code a scripted call's output stands for: a ToolFailure's, else 0."""
    return output.exit_code if isinstance(output, ToolFailure) else 0


def _tool_frames(item_id: str, name: str, args: Mapping[str, Any], output: str) -> list[str]:
    exit_code = _exit_code(output)
    if name in _SHELL_NAMES:
        item: dict[str, Any] = {
            "id": item_id,
            "type": SHELL_TOOL,
            "command": _command(args),
            "aggregated_output": "",
            "exit_code": None,
            "status": "in_progress",
        }
        done = {
            **item,
            "aggregated_output": output,
            "exit_code": exit_code,
            "status": "failed" if exit_code else "completed",
        }
        return [
            _line({"type": "item.started", "item": item}),
            _line({"type": "item.completed", "item": done}),
        ]
    if name in _EDIT_NAMES:
        changes = args.get("changes")
        if not isinstance(changes, list):
            changes = [{"path": str(args.get("path", "")), "kind": str(args.get("kind", "update"))}]
        # Codex prints no message for a patch that failed, only the status.
        status = "failed" if exit_code else "completed"
        item = {"id": item_id, "type": EDIT_TOOL, "changes": changes, "status": status}
        return [_line({"type": "item.completed", "item": item})]
    if name == WEB_TOOL:
        if exit_code:
            raise InvalidRequestError("tool_calls", "codex prints no failure for a web_search item")
        item = {"id": item_id, "type": WEB_TOOL, "query": str(args.get("query", ""))}
        return [_line({"type": "item.completed", "item": item})]
    server, _, tool = name.rpartition(".")
    item = {
        "id": item_id,
        "type": MCP_TOOL,
        "server": server or "scripted",
        "tool": tool,
        "arguments": dict(args),
        "result": None,
        "error": None,
        "status": "in_progress",
    }
    if exit_code:
        done = {**item, "error": {"message": str(output)}, "status": "failed"}
    else:
        done = {
            **item,
            "result": {"content": [{"type": "text", "text": output}], "structured_content": None},
            "status": "completed",
        }
    return [
        _line({"type": "item.started", "item": item}),
        _line({"type": "item.completed", "item": done}),
    ]


def _usage(usage: TokenUsage | None) -> dict[str, int]:
    tokens = usage if usage is not None else TokenUsage()
    return {
        "input_tokens": tokens.input_tokens,
        "cached_input_tokens": tokens.cache_read_input_tokens,
        "cache_write_input_tokens": tokens.cache_write_input_tokens,
        "output_tokens": tokens.output_tokens,
        "reasoning_output_tokens": tokens.reasoning_output_tokens,
    }


def scripted_lines(script: ScriptedTurn) -> ScriptedRun:
    """Return what ``codex exec --json`` prints for the turn ``script`` describes.

    ``tool_calls`` are (tool name, arguments, output): a shell name (``command_execution``,
    ``shell``, ``exec_command``, ``bash``) runs ``arguments["command"]``, ``file_change`` or
    ``apply_patch`` applies ``arguments["changes"]`` (or one ``path``), ``web_search`` searches
    ``arguments["query"]``, and any other name is an MCP call (``server.tool``). An output that
    is an ``agentshim.testing.ToolFailure`` fails the call: a command ends
    ``status: "failed"`` with the failure's exit code and its message as output (as recorded),
    a patch ``status: "failed"`` (Codex prints no message for it), an MCP call
    ``status: "failed"`` with the message as its ``error``. With ``structured_output`` the
    final message is its JSON, as ``--output-schema`` makes it.

    Raises:
        ValueError: ``structured_output`` cannot be written as JSON, or a ``web_search`` call
            was given a ToolFailure (Codex prints no failed search).
    """
    thread_id = script.session_id if script.session_id is not None else str(uuid.uuid4())
    stdout = [
        _line({"type": "thread.started", "thread_id": thread_id}),
        _line({"type": "turn.started"}),
    ]
    number = 0
    for name, args, output in script.tool_calls:
        number += 1
        stdout += _tool_frames(f"item_{number}", name, args, output)
    if script.returncode != 0:
        message = script.text or "scripted turn failure"
        stdout.append(_line({"type": "error", "message": message}))
        stdout.append(_line({"type": "turn.failed", "error": {"message": message}}))
        return ScriptedRun(stdout=tuple(stdout), stderr=(), returncode=script.returncode)
    message = script.text
    if script.structured_output is not None:
        try:
            message = json.dumps(script.structured_output, ensure_ascii=False)
        except (TypeError, ValueError) as error:
            raise InvalidRequestError("structured_output", f"is not JSON: {error}") from error
    if message:
        number += 1
        item = {"id": f"item_{number}", "type": "agent_message", "text": message}
        stdout.append(_line({"type": "item.completed", "item": item}))
    stdout.append(_line({"type": "turn.completed", "usage": _usage(script.usage)}))
    return ScriptedRun(stdout=tuple(stdout), stderr=(), returncode=0)


def resume_failure_lines(*, session_id: str | None = None) -> ScriptedRun:
    """Return what ``codex exec resume <id> -`` prints when no rollout holds that thread.

    Stdout is empty; stderr names the missing rollout; the exit code is 1.
    """
    thread_id = session_id or _MISSING_THREAD
    stderr = (
        f"Error: thread/resume: thread/resume failed: no rollout found for thread id "
        f"{thread_id} (code -32600)\n",
        "\n",
        "Stack backtrace:\n",
        "   0: <unknown>\n",
    )
    return ScriptedRun(stderr=stderr, returncode=1)
