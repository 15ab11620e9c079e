"""Made-up harness turns in the JSONL vocabulary, as a harness that follows it prints them."""

from __future__ import annotations

import json

from agentshim.core.event_json import event_to_json
from agentshim.core.events import (
    AgentEvent,
    AssistantText,
    ProviderErrorReported,
    SessionStarted,
    ToolCall,
    ToolResult,
    UsageReport,
    UsageScope,
)
from agentshim.core.scripting import (
    ScriptedRun,
    ScriptedTurn,
    ToolFailure,
    refuse_structured_output,
)
from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage

from .events import tool_kind

__all__ = ["resume_failure_lines", "scripted_lines"]

_DEFAULT_USAGE = TokenUsage(input_tokens=100, output_tokens=10, turns=1)


def _line(event: AgentEvent) -> str:
    return json.dumps(event_to_json(event), ensure_ascii=False, separators=(",", ":")) + "\n"


def scripted_lines(script: ScriptedTurn) -> ScriptedRun:
    """What a harness prints for ``script``: its session, tool calls, answer and usage.

    A nonzero ``returncode`` prints a fatal ``error`` event and exits with it.

    Raises:
        InvalidRequestError: ``script`` carries structured output (a harness has no schema).
    """
    refuse_structured_output(script, "A JSONL harness", "jsonl")
    session_id = script.session_id or "harness-session-1"
    events: list[AgentEvent] = [SessionStarted(session_id)]
    for index, (name, args, output) in enumerate(script.tool_calls):
        tool_id = f"call-{index + 1}"
        kind = tool_kind(name)
        events.append(ToolCall(tool_id, name, dict(args), kind))
        if isinstance(output, ToolFailure):
            events.append(ToolResult(tool_id, name, "", str(output), output.exit_code, None, kind))
        else:
            events.append(ToolResult(tool_id, name, str(output), "", 0, None, kind))
    if script.text:
        events.append(AssistantText(script.text))
    tokens = script.usage or _DEFAULT_USAGE
    usage = ProviderUsage(tokens, None, "jsonl", cost_source=CostSource.NOT_REPORTED)
    events.append(UsageReport(usage, None, UsageScope.TURN))
    if script.returncode != 0:
        events.append(ProviderErrorReported("the harness failed", fatal=True))
    return ScriptedRun(stdout=tuple(_line(e) for e in events), returncode=script.returncode)


def resume_failure_lines(*, session_id: str | None = None) -> ScriptedRun:
    """What a harness prints when asked to continue a conversation: it cannot."""
    del session_id
    return ScriptedRun(stderr=("this harness cannot resume a conversation\n",), returncode=1)
