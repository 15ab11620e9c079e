"""CopilotStreamParser: reads ``copilot --output-format json`` (JSONL) line by line.

Every line is ``{"type", "data", "id", "timestamp", "parentId"}`` (plus ``"ephemeral": true``
on frames the CLI does not persist), except the last, ``{"type": "result", "sessionId",
"exitCode", "usage"}``. What the frames become (docs/providers/copilot.md has the full table):

- ``session.start`` / ``result``: SessionStarted once (1.0.102 prints only ``result``).
- ``assistant.message_delta``: AssistantText per delta; ``assistant.message``: AssistantText
  unless its deltas were already streamed. The final text is the last non-empty message of the
  main agent; sub-agent text (``parentToolCallId``) becomes Lifecycle ``subagent_text``.
- ``assistant.reasoning_delta`` / ``assistant.reasoning``: Reasoning.
- ``tool.execution_start`` / ``tool.execution_complete``: ToolCall / ToolResult.
- ``assistant.usage``: UsageReport of scope CALL with the call's tokens (not printed by 1.0.102); without
  them, the ``outputTokens`` a build puts on ``assistant.message`` are what the turn reports.
- ``session.start`` / ``session.tools_updated`` / ``assistant.message``: the model, the latest
  named kept.
- ``session.error``: ProviderErrorReported(fatal); the turn fails, classified by ``failures.classify``.
- ``assistant.turn_start`` / ``turn_end`` / ``turn_retry``, ``model.call_failure``,
  ``session.info`` / ``warning``, a failed MCP server: Lifecycle.
- noise (skill lists, background-task updates, per-call timings, the prompt echo,
  live shell output): skipped without decoding the line.
- anything else: Lifecycle ``unknown_frame:<type>``; a line that is not a JSON object: RawOutput.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any, cast

from agentshim.core import lifecycle_kinds as lk
from agentshim.core._builders import (
    build_assistant_text,
    build_provider_usage,
    build_tool_call,
    build_tool_result,
)
from agentshim.core._enum_members import KIND_OTHER
from agentshim.core.clock import Monotonic
from agentshim.core.errors import FailureKind
from agentshim.core.events import (
    AgentEvent,
    Emit,
    Lifecycle,
    ProviderErrorReported,
    Reasoning,
    ToolKind,
    UsageReport,
    UsageScope,
)
from agentshim.core.failures import kind_from_text
from agentshim.core.frames import Frame, FrameHandler, FrameParser, LineSkip, ignore_frame
from agentshim.core.jsonvalues import as_count, as_int, as_mapping, as_str, mapping_or_empty
from agentshim.core.pricing import PricingTable
from agentshim.core.stream import ToolTracker
from agentshim.core.turn import ParsedTurn
from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage, UsageKeys

from .events import tool_kind, tool_output
from .failures import CallFailure, SessionErrorFrame, classify
from .model_data import PRICING_TABLE

__all__ = ["IGNORED_FRAMES", "PROVIDER_NAME", "CopilotStreamParser"]

PROVIDER_NAME = "copilot"

IGNORED_FRAMES = frozenset(
    {
        "assistant.idle",
        "assistant.message_start",
        "assistant.tool_call_delta",
        "model.call_final_result",
        "model.call_finished",
        "model.call_start",
        "session.background_tasks_changed",
        "session.mcp_servers_loaded",
        "session.skills_loaded",
        "tool.execution_partial_result",
        "tool.shell_output",
        "user.message",
    }
)
"""Frame types that carry nothing a turn's events or result need.

They are most of what the CLI prints (a tool call brings dozens of background-task updates),
so they are recognised from the line's first bytes and dropped without decoding. Tool output
comes whole in ``tool.execution_complete``, so the live ``tool.shell_output`` chunks are
among them; so is the prompt echo ``user.message``.
"""

_TYPE_PREFIX = '{"type":"'


_USAGE_KEYS = UsageKeys(
    "inputTokens", "cacheReadTokens", "cacheWriteTokens", "outputTokens", "reasoningTokens"
)
"""Where an ``assistant.usage`` frame has each count. Copilot reports cache reads and writes
apart from ``inputTokens``, so they are folded in; ``reasoningTokens`` are the part of
``outputTokens`` spent reasoning."""


class CopilotStreamParser(FrameParser):
    """Turns Copilot CLI JSONL output into events and a ParsedTurn; never raises on input.

    A line that is not a JSON object becomes RawOutput; a frame whose shape makes no sense costs
    only that frame (RawOutput plus Lifecycle ``malformed_frame``). Exceptions raised by ``emit``
    itself (an event handler failing) propagate.

    Usage: Copilot CLI 1.0.102 prints no token counts (its ``result.usage`` holds premium
    requests and durations only), so the turn's usage says ``increment_known=False`` with the
    raw ``result.usage`` attached, never a measured zero. A build that prints
    ``assistant.usage`` frames gets their tokens summed, priced from ``pricing``.
    """

    def __init__(
        self,
        emit: Emit,
        *,
        pricing: PricingTable = PRICING_TABLE,
        monotonic: Monotonic = time.monotonic,
    ) -> None:
        """Parse one turn, sending events to ``emit``.

        ``pricing`` prices reported tokens; ``monotonic`` times tool calls. There is no
        ``expect_structured``: Copilot CLI takes no output schema.
        """
        self._pricing = pricing
        self._tools = ToolTracker(monotonic)
        self._tool_kinds: dict[str, ToolKind] = {}
        self._model: str | None = None
        self._streamed: set[str] = set()
        self._live: dict[str, list[str]] = {}
        self._final_text: str | None = None
        self._reasoning_seen = False
        self._streamed_reasoning: set[str] = set()
        self._tokens: TokenUsage | None = None
        # An assistant.usage frame without counts makes the turn's usage unknown.
        self._usage_unknown = False
        # outputTokens of the assistant.message frames, for a build without assistant.usage.
        self._message_output: int | None = None
        self._usage_raw: Mapping[str, Any] = MappingProxyType({})
        self._result_usage: Mapping[str, Any] | None = None
        self._result_exit: int | None = None
        self._session_error: SessionErrorFrame | None = None
        self._last_call: CallFailure | None = None
        handlers: dict[str, FrameHandler] = dict.fromkeys(IGNORED_FRAMES, ignore_frame)
        handlers.update(
            {
                "assistant.message_delta": self._on_assistant_message_delta,
                "assistant.message": self._on_assistant_message,
                "assistant.reasoning_delta": self._on_assistant_reasoning_delta,
                "assistant.reasoning": self._on_assistant_reasoning,
                "assistant.intent": self._on_assistant_intent,
                "assistant.turn_start": self._on_assistant_turn_start,
                "assistant.turn_end": self._on_assistant_turn_end,
                "assistant.turn_retry": self._on_assistant_turn_retry,
                "assistant.usage": self._on_assistant_usage,
                "tool.execution_start": self._on_tool_execution_start,
                "tool.execution_complete": self._on_tool_execution_complete,
                "model.call_failure": self._on_model_call_failure,
                "session.start": self._on_session_start,
                "session.tools_updated": self._on_session_tools_updated,
                "session.resume": self._on_session_resume,
                "session.error": self._on_session_error,
                "session.warning": self._on_session_warning,
                "session.info": self._on_session_info,
                "session.mcp_server_status_changed": self._on_session_mcp_server_status_changed,
                "result": self._on_result,
            }
        )
        super().__init__(
            MappingProxyType(handlers), emit, skip=LineSkip(_TYPE_PREFIX, IGNORED_FRAMES)
        )

    # -- the StreamParser protocol -------------------------------------------------------------

    def finish(self) -> ParsedTurn:
        """Summarize the turn.

        It failed when the stream said so (``session.error``), when ``result.exitCode`` is
        nonzero, or when the stream ended without its ``result`` line.
        """
        error, kind = self._failure()
        return ParsedTurn(
            text=self._text(),
            session_id=self._session_id,
            usage=self._usage(),
            cost_usd=self._cost(),
            error=error,
            error_kind=kind,
        )

    # -- frame handlers ------------------------------------------------------------------------

    def _on_session_start(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        self._model = as_str(data.get("selectedModel")) or self._model
        self._start_session(data.get("sessionId"), out)

    def _on_session_tools_updated(self, frame: Frame, out: list[AgentEvent]) -> None:
        self._model = as_str(_data(frame).get("model")) or self._model

    def _on_session_resume(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        self._model = as_str(data.get("selectedModel")) or self._model
        count = as_int(data.get("eventCount"))
        out.append(Lifecycle(lk.SESSION_RESUMED, f"{count} events" if count is not None else ""))

    def _on_assistant_message_delta(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        piece = as_str(data.get("deltaContent"))
        if not piece or data.get("parentToolCallId"):
            return
        message_id = as_str(data.get("messageId")) or ""
        self._streamed.add(message_id)
        self._live.setdefault(message_id, []).append(piece)
        out.append(build_assistant_text(piece, True))

    def _on_assistant_message(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        content = as_str(data.get("content")) or ""
        self._model = as_str(data.get("model")) or self._model
        if "outputTokens" in data:
            # Every model call's output, a sub-agent's included, as assistant.usage counts it.
            self._message_output = (self._message_output or 0) + as_count(data["outputTokens"])
        if data.get("parentToolCallId"):
            if content:
                out.append(Lifecycle(lk.SUBAGENT_TEXT, content))
            return
        message_id = as_str(data.get("messageId")) or ""
        self._live.pop(message_id, None)
        reasoning = as_str(data.get("reasoningText"))
        if reasoning and not self._reasoning_seen:
            out.append(Reasoning(reasoning))
        if not content:
            return
        self._final_text = content
        if message_id not in self._streamed:
            out.append(build_assistant_text(content, False))

    def _on_assistant_reasoning_delta(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        piece = as_str(data.get("deltaContent"))
        self._reasoning_seen = True
        if piece:
            self._streamed_reasoning.add(as_str(data.get("reasoningId")) or "")
            out.append(Reasoning(piece))

    def _on_assistant_reasoning(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        self._reasoning_seen = True
        content = as_str(data.get("content"))
        if content and (as_str(data.get("reasoningId")) or "") not in self._streamed_reasoning:
            out.append(Reasoning(content))

    def _on_assistant_intent(self, frame: Frame, out: list[AgentEvent]) -> None:
        intent = as_str(_data(frame).get("intent"))
        if intent:
            out.append(Lifecycle(lk.INTENT, intent))

    def _on_assistant_turn_start(self, frame: Frame, out: list[AgentEvent]) -> None:
        out.append(Lifecycle(lk.TURN_STARTED, as_str(_data(frame).get("turnId")) or ""))

    def _on_assistant_turn_end(self, frame: Frame, out: list[AgentEvent]) -> None:
        out.append(Lifecycle(lk.TURN_COMPLETED, as_str(_data(frame).get("turnId")) or ""))

    def _on_assistant_turn_retry(self, frame: Frame, out: list[AgentEvent]) -> None:
        out.append(Lifecycle(lk.API_RETRY, as_str(_data(frame).get("reason")) or ""))

    def _on_model_call_failure(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        status = as_int(data.get("statusCode"))
        self._last_call = CallFailure(
            status=status,
            error_code=as_str(data.get("errorCode")),
            failure_kind=as_str(data.get("failureKind")),
        )
        attempt = as_int(data.get("retryAttempt"))
        said = as_str(data.get("errorMessage")) or ""
        where = f"HTTP {status}" if status is not None else (self._last_call.failure_kind or "")
        out.append(Lifecycle(lk.MODEL_CALL_FAILED, f"attempt {attempt}, {where}: {said}"))

    def _on_assistant_usage(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        self._model = as_str(data.get("model")) or self._model
        raw = MappingProxyType(dict(data))
        if "inputTokens" not in data and "outputTokens" not in data:
            # No counts to fold: unknown, never a measured zero.
            self._usage_unknown = True
            usage = ProviderUsage(
                provider=PROVIDER_NAME,
                raw=raw,
                increment_known=False,
                cost_source=CostSource.NOT_REPORTED,
                model=self._model,
            )
            out.append(UsageReport(usage, None))
            return
        tokens = _USAGE_KEYS.read(data)
        # Priced before the totals take it: a count too large to price costs only this frame.
        usage = self._priced_usage(tokens, raw)
        self._tokens = tokens if self._tokens is None else self._tokens + tokens
        self._usage_raw = raw
        out.append(UsageReport(usage, usage.total_cost_usd, UsageScope.CALL))

    def _on_tool_execution_start(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        tool_id = as_str(data.get("toolCallId"))
        name = as_str(data.get("toolName")) or "unknown"
        raw_args = data.get("arguments")
        args: Mapping[str, Any] | str | None = None
        if isinstance(raw_args, str):
            args = raw_args
        elif isinstance(raw_args, dict):
            args = cast("dict[str, Any]", raw_args)
        kind = tool_kind(name, mcp_server=as_str(data.get("mcpServerName")))
        if tool_id is not None:
            self._tools.start(tool_id, name, args)
            self._tool_kinds[tool_id] = kind
        out.append(build_tool_call(tool_id, name, args, kind))

    def _on_tool_execution_complete(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        tool_id = as_str(data.get("toolCallId"))
        finished = self._tools.finish(tool_id) if tool_id is not None else None
        kind = self._tool_kinds.pop(tool_id, KIND_OTHER) if tool_id is not None else KIND_OTHER
        name = finished.name if finished is not None else "unknown"
        duration = finished.duration_s if finished is not None else None
        shell = as_mapping(data.get("shellExecution"))
        code = as_int(shell.get("exitCode")) if shell is not None else None
        success = data.get("success") is True
        output = tool_output(data.get("result"))
        if success and not code:
            out.append(build_tool_result(tool_id, name, output, "", 0, duration, kind))
            return
        error = as_mapping(data.get("error"))
        message = (as_str(error.get("message")) if error is not None else None) or output
        if code is None or code == 0:
            code = 1
        out.append(build_tool_result(tool_id, name, "", message, code, duration, kind))

    def _on_session_error(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        message = as_str(data.get("message")) or "copilot reported a session error"
        self._session_error = SessionErrorFrame(
            message=message,
            error_type=as_str(data.get("errorType")),
            status=as_int(data.get("statusCode")),
            error_code=as_str(data.get("errorCode")),
        )
        out.append(ProviderErrorReported(message, fatal=True))

    def _on_session_warning(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        kind = as_str(data.get("warningType")) or "warning"
        out.append(Lifecycle(lk.WARNING, f"{kind}: {as_str(data.get('message')) or ''}"))

    def _on_session_info(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        kind = as_str(data.get("infoType")) or "info"
        out.append(Lifecycle(lk.INFO, f"{kind}: {as_str(data.get('message')) or ''}"))

    def _on_session_mcp_server_status_changed(self, frame: Frame, out: list[AgentEvent]) -> None:
        data = _data(frame)
        if data.get("status") == "failed":
            name = as_str(data.get("serverName")) or "?"
            out.append(
                Lifecycle(lk.MCP_SERVER_FAILED, f"{name}: {as_str(data.get('error')) or ''}")
            )

    def _on_result(self, frame: Frame, out: list[AgentEvent]) -> None:
        self._start_session(frame.get("sessionId"), out)
        code = as_int(frame.get("exitCode"))
        self._result_exit = code if code is not None else 0
        usage = as_mapping(frame.get("usage"))
        self._result_usage = MappingProxyType(dict(usage)) if usage is not None else {}
        if self._tokens is None:
            out.append(UsageReport(self._unknown_usage(), None))

    # -- helpers -------------------------------------------------------------------------------

    def _text(self) -> str:
        if self._final_text is not None:
            return self._final_text
        # The stream ended before the message that sums up the deltas: keep what was streamed.
        return "\n".join("".join(pieces) for pieces in self._live.values() if pieces)

    def _price(self, tokens: TokenUsage) -> tuple[float | None, CostSource]:
        cost = self._pricing.cost(self._model, tokens)
        return cost, (CostSource.PRICED if cost is not None else CostSource.UNKNOWN_MODEL)

    def _priced_usage(self, tokens: TokenUsage, raw: Mapping[str, Any]) -> ProviderUsage:
        cost, source = self._price(tokens)
        # In field order (tokens, cost, provider, raw, increment_known, cost_source, model):
        # one for every assistant.usage frame, cheaper than the class call.
        return build_provider_usage(tokens, cost, PROVIDER_NAME, raw, True, source, self._model)

    def _unknown_usage(self) -> ProviderUsage:
        # The output counts of assistant.message, when a build gives them, without any input
        # count: what the stream reported, not a full (or priceable) breakdown.
        output = self._message_output
        return ProviderUsage(
            tokens=TokenUsage(output_tokens=output, turns=1)
            if output is not None
            else TokenUsage(),
            provider=PROVIDER_NAME,
            raw=self._result_usage or {},
            increment_known=False,
            cost_source=CostSource.NOT_REPORTED,
            model=self._model,
        )

    def _usage(self) -> ProviderUsage | None:
        if self._tokens is None:
            seen = self._result_usage is not None or self._message_output is not None
            return self._unknown_usage() if seen else None
        # One prompt is one turn, however many model calls it took.
        usage = self._priced_usage(replace(self._tokens, turns=1), self._usage_raw)
        return replace(usage, increment_known=False) if self._usage_unknown else usage

    def _cost(self) -> float | None:
        return self._price(self._tokens)[0] if self._tokens is not None else None

    def _failure(self) -> tuple[str | None, FailureKind | None]:
        error = self._session_error
        if error is not None:
            return error.message, classify(error, self._last_call)
        said = self._stderr.first()
        if self._result_exit is None:
            if said:
                return said, kind_from_text(said) or FailureKind.OTHER
            return (
                "the copilot stream ended before its result line; the CLI was killed or "
                "crashed (see stderr)",
                FailureKind.OTHER,
            )
        if self._result_exit != 0:
            detail = f"copilot reported exit code {self._result_exit}"
            if said:
                detail = f"{detail}: {said}"
            return detail, (kind_from_text(said) if said else None) or FailureKind.OTHER
        return None, None


def _data(frame: Frame) -> Mapping[str, Any]:
    return mapping_or_empty(frame.get("data"))
