"""Made-up Copilot CLI turns in the CLI's real JSONL format (modelled on 1.0.102 recordings)."""

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

__all__ = ["SCRIPTED_MODEL", "resume_failure_lines", "scripted_lines"]

SCRIPTED_MODEL = "gpt-5.4"
"""The model a scripted turn names (one the CLI's own help uses as an example)."""

_TIMESTAMP = "2026-11-29T12:51:24.384Z"


class _Frames:
    """Builds one scripted stream, giving every frame the ``id``/``parentId`` chain it has."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._serial = 0
        self._last_id = str(uuid.UUID(int=0))

    def add(self, kind: str, data: Mapping[str, Any], *, ephemeral: bool = False) -> None:
        self._serial += 1
        frame_id = str(uuid.UUID(int=self._serial))
        frame: dict[str, Any] = {"type": kind, "data": dict(data)}
        if ephemeral:
            frame["ephemeral"] = True
        frame.update({"id": frame_id, "timestamp": _TIMESTAMP, "parentId": self._last_id})
        self._last_id = frame_id
        self.lines.append(_line(frame))


def _line(frame: Mapping[str, Any]) -> str:
    return json.dumps(frame, ensure_ascii=False, separators=(",", ":")) + "\n"


def _deltas(text: str) -> list[str]:
    # The CLI streams a message in chunks of a few characters.
    return [text[i : i + 8] for i in range(0, len(text), 8)]


def scripted_lines(script: ScriptedTurn) -> ScriptedRun:
    """Return what ``copilot --output-format json`` prints for the turn ``script`` describes.

    ``tool_calls`` are ``(tool name, arguments, output)``, each run in the first agent-loop
    turn; the answer ``text`` comes in the next one. An output that is an
    ``agentshim.testing.ToolFailure`` fails the call as the CLI prints it: ``bash``
    with the failure's exit code in ``shellExecution.exitCode`` (``success`` stays true), any
    other tool with ``success: false`` and the message as its ``error``. Copilot 1.0.102 prints no token
    counts, so without ``usage`` the turn's usage is unknown, as in a recording; with it, one
    ``assistant.usage`` frame carries the counts (1-hour cache writes count as cache writes).
    A nonzero ``returncode`` ends the turn with a ``session.error`` and ``result.exitCode``.

    Raises:
        InvalidRequestError: ``structured_output`` was given; Copilot CLI has no output schema.
    """
    refuse_structured_output(script, "GitHub Copilot CLI", "copilot")
    sid = script.session_id or str(uuid.uuid4())
    frames = _Frames()
    frames.add("session.mcp_servers_loaded", {"servers": []}, ephemeral=True)
    frames.add("session.tools_updated", {"model": SCRIPTED_MODEL}, ephemeral=True)
    frames.add("user.message", {"content": "scripted prompt", "turnId": "0"})
    turn = 0
    frames.add("assistant.turn_start", {"turnId": str(turn)})
    if script.tool_calls:
        _add_tool_calls(frames, script.tool_calls)
        frames.add("assistant.turn_end", {"turnId": str(turn)})
        turn += 1
        frames.add("assistant.turn_start", {"turnId": str(turn)})
    if script.text:
        message_id = str(uuid.uuid4())
        frames.add("assistant.message_start", {"messageId": message_id}, ephemeral=True)
        for piece in _deltas(script.text):
            frames.add(
                "assistant.message_delta",
                {"messageId": message_id, "deltaContent": piece},
                ephemeral=True,
            )
        frames.add(
            "assistant.message",
            {
                "messageId": message_id,
                "model": SCRIPTED_MODEL,
                "content": script.text,
                "toolRequests": [],
                "turnId": str(turn),
            },
        )
    if script.usage is not None:
        frames.add("assistant.usage", _usage_data(script.usage), ephemeral=True)
    frames.add("assistant.turn_end", {"turnId": str(turn)})
    if script.returncode != 0:
        frames.add(
            "session.error",
            {"errorType": "query", "message": f"scripted failure (exit {script.returncode})"},
        )
    frames.add("assistant.idle", {}, ephemeral=True)
    result: dict[str, Any] = {
        "type": "result",
        "timestamp": _TIMESTAMP,
        "sessionId": sid,
        "exitCode": script.returncode,
        "usage": {
            "premiumRequests": 0,
            "totalApiDurationMs": 57,
            "sessionDurationMs": 335,
            "codeChanges": {"linesAdded": 0, "linesRemoved": 0, "filesModified": []},
        },
    }
    frames.lines.append(_line(result))
    return ScriptedRun(stdout=tuple(frames.lines), stderr=(), returncode=script.returncode)


def _add_tool_calls(
    frames: _Frames, tool_calls: Sequence[tuple[str, Mapping[str, Any], str]]
) -> None:
    calls = [
        (f"call_{index:016x}", name, dict(args), out)
        for index, (name, args, out) in enumerate(tool_calls)
    ]
    frames.add(
        "assistant.message",
        {
            "messageId": str(uuid.uuid4()),
            "model": SCRIPTED_MODEL,
            "content": "",
            "toolRequests": [
                {"toolCallId": call_id, "name": name, "arguments": args, "type": "function"}
                for call_id, name, args, _ in calls
            ],
            "turnId": "0",
        },
    )
    for call_id, name, args, output in calls:
        frames.add(
            "tool.execution_start",
            {"toolCallId": call_id, "toolName": name, "arguments": args, "turnId": "0"},
        )
        frames.add("tool.execution_complete", _completion(call_id, name, output))


def _completion(call_id: str, name: str, output: str) -> dict[str, Any]:

    complete: dict[str, Any] = {"toolCallId": call_id, "model": SCRIPTED_MODEL, "turnId": "0"}
    exit_code = output.exit_code if isinstance(output, ToolFailure) else 0
    if name == SHELL_TOOL:
        # As recorded: a command that exits nonzero still has success: true; only
        # shellExecution.exitCode says it failed.
        complete["shellExecution"] = {"exitCode": exit_code}
        content = f"{output}<shellId: 0 completed with exit code {exit_code}>"
    elif exit_code:
        complete["success"] = False
        complete["error"] = {"message": str(output), "code": "failure"}
        return complete
    else:
        content = str(output)
    complete["success"] = True
    complete["result"] = {"content": content, "detailedContent": content}
    return complete


def _usage_data(usage: TokenUsage) -> dict[str, Any]:
    return {
        "model": SCRIPTED_MODEL,
        "inputTokens": usage.uncached_input_tokens,
        "outputTokens": usage.output_tokens,
        "cacheReadTokens": usage.cache_read_input_tokens,
        "cacheWriteTokens": usage.cache_write_input_tokens,
        "reasoningTokens": usage.reasoning_output_tokens,
    }


# What the CLI prints after the line saying no session matched, a blank line first.
_RESUME_HELP = """
To resume by session or task ID:  copilot --resume=<id>
To resume by name:                copilot --resume=<name>
To name a new session:            copilot --name=<name>
To pick from existing sessions:   copilot --resume
To start a new session with ID:   copilot --session-id=<valid-uuid>
"""


def resume_failure_lines(*, session_id: str | None = None) -> ScriptedRun:
    """Return what the CLI prints when ``--resume`` names a session it does not have (exit 1)."""
    sid = session_id or "00000000-0000-4000-8000-000000000000"
    said = f"Error: No session, task, or name matched '{sid}'.\n"
    return ScriptedRun(stderr=(said, *_RESUME_HELP.splitlines(keepends=True)), returncode=1)
