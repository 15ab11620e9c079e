"""OpenTelemetry traces of a session's turns (the optional ``agentshim[otel]`` extra).

Pass ``tracing=Tracing()`` to an Agent (or a Session) to have each turn traced; nothing here
imports ``opentelemetry`` until a :class:`Tracing` is built, so without one the library never
loads it. Each ``Session.turn`` is an ``invoke_agent`` span, child of whatever span is current
where the turn was called; inside it are a span per CLI process run, tool call, approval,
retry wait and conversation replacement, built from the turn's own events. Attributes follow
the OpenTelemetry GenAI semantic conventions (``gen_ai.*``); prompt and tool text are left
out unless ``capture_content`` is set. ``docs/observability.md`` lists every span and
attribute.
"""

from __future__ import annotations

import importlib
import json
import os
from collections.abc import Mapping
from typing import Any

from agentshim._version import __version__
from agentshim.core.errors import InvalidRequestError, TurnFailedError
from agentshim.core.events import (
    AgentEvent,
    ApprovalAnswered,
    ApprovalRequested,
    Lifecycle,
    RunFinished,
    RunStarted,
    SessionStarted,
    ToolCall,
    ToolResult,
    UsageReport,
    UsageScope,
)
from agentshim.core.turn import TurnResult

__all__ = ["Tracing", "TurnTrace"]

#: Lifecycle notices that mean the session dropped its conversation for another.
_REPLACED = ("conversation_replaced", "conversation_forgotten", "conversation_lost")


def _otel(module: str) -> Any:
    """Import an OpenTelemetry module on first use (typed loosely: the extra is optional)."""
    return importlib.import_module(module)


class Tracing:
    """Trace every turn of the sessions it is given to, with OpenTelemetry.

    ``tracer_provider`` is where spans go (None: the global one that
    ``opentelemetry.trace.set_tracer_provider`` set). ``capture_content`` adds the prompt,
    tool arguments and tool output to the spans (off by default: they may hold anything).
    ``propagate`` passes the turn's trace context to the CLI of a one-shot turn as
    ``TRACEPARENT`` (and ``TRACESTATE``), so a CLI that exports telemetry can join the trace.

    Raises:
        InvalidRequestError: ``opentelemetry-api`` is not installed (install
            ``agentshim[otel]``).
    """

    def __init__(
        self,
        *,
        tracer_provider: Any = None,
        capture_content: bool = False,
        propagate: bool = True,
    ) -> None:
        try:
            trace = _otel("opentelemetry.trace")
        except ImportError as error:
            raise InvalidRequestError(
                "tracing",
                "opentelemetry-api is not installed",
                "Tracing needs the OpenTelemetry API: pip install 'agentshim[otel]' (or "
                "opentelemetry-api), then configure a tracer provider",
            ) from error
        self._tracer: Any = trace.get_tracer(
            "agentshim", __version__, tracer_provider=tracer_provider
        )
        self.capture_content = capture_content
        self.propagate = propagate

    def turn(
        self, *, provider: str, model: str | None, turn_id: str, session_id: str | None, prompt: str
    ) -> TurnTrace:
        """Start the span of one turn, child of the current span; end it with ``finish``."""
        return TurnTrace(self, provider, model, turn_id, session_id, prompt)


class TurnTrace:
    """One turn's span and the spans inside it, fed the turn's events in order.

    Built by :meth:`Tracing.turn`. Not thread-safe: a turn's events arrive on one thread.
    """

    def __init__(
        self,
        tracing: Tracing,
        provider: str,
        model: str | None,
        turn_id: str,
        session_id: str | None,
        prompt: str,
    ) -> None:
        trace = _otel("opentelemetry.trace")
        self._trace_api = trace
        self._tracer: Any = tracing._tracer  # pyright: ignore[reportPrivateUsage]
        self._content = tracing.capture_content
        self._propagate = tracing.propagate
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.system": provider,
            "gen_ai.provider.name": provider,
            "gen_ai.agent.name": provider,
            "agentshim.turn_id": turn_id,
        }
        if model:
            attributes["gen_ai.request.model"] = model
        if session_id:
            attributes["gen_ai.conversation.id"] = session_id
        if self._content:
            attributes["gen_ai.input.messages"] = json.dumps(
                [{"role": "user", "parts": [{"type": "text", "content": prompt}]}]
            )
        self._span: Any = self._tracer.start_span(
            f"invoke_agent {provider}", kind=trace.SpanKind.CLIENT, attributes=attributes
        )
        self._context: Any = trace.set_span_in_context(self._span)
        self._process: Any = None
        self._tools: dict[str | None, Any] = {}
        self._approvals: dict[str | None, Any] = {}
        self._retry: Any = None
        self._session_id = session_id
        self._input_tokens = 0
        self._output_tokens = 0
        self._cost: float | None = None
        self._reported = False
        self._model: str | None = None

    def env(self) -> Mapping[str, str]:
        """``TRACEPARENT`` (and ``TRACESTATE``) naming this turn's span, for the CLI's env."""
        if not self._propagate:
            return {}
        tracecontext = _otel("opentelemetry.trace.propagation.tracecontext")
        carrier: dict[str, str] = {}
        tracecontext.TraceContextTextMapPropagator().inject(carrier, context=self._context)
        return {name.upper(): value for name, value in carrier.items()}

    def event(self, event: AgentEvent) -> None:
        """Open or close the span ``event`` begins or ends; count usage."""
        if isinstance(event, RunStarted):
            self._end_retry()
            self._end(self._process)
            name = os.path.basename(event.argv[0]) if event.argv else ""
            self._process = self._child("agentshim.process", {"process.executable.name": name})
        elif isinstance(event, RunFinished):
            process, self._process = self._process, None
            code = event.exit_code
            self._end(process, {} if code is None else {"process.exit.code": code})
        elif isinstance(event, ToolCall):
            self._tool_call(event)
        elif isinstance(event, ToolResult):
            self._tool_result(event)
        elif isinstance(event, ApprovalRequested):
            attributes: dict[str, Any] = {"gen_ai.tool.name": event.tool}
            if event.tool_id:
                attributes["gen_ai.tool.call.id"] = event.tool_id
            self._end(self._approvals.pop(event.tool_id, None))
            self._approvals[event.tool_id] = self._child("agentshim.approval", attributes)
        elif isinstance(event, ApprovalAnswered):
            answer = {
                "agentshim.approval.allowed": event.allowed,
                "agentshim.approval.decided_by": event.decided_by,
            }
            self._end(self._approvals.pop(event.tool_id, None), answer)
        elif isinstance(event, Lifecycle):
            self._lifecycle(event)
        elif isinstance(event, UsageReport):
            self._usage(event)
        elif isinstance(event, SessionStarted):
            self._session_id = event.session_id

    def finish(self, result: TurnResult | None, session_id: str | None, error: object) -> None:
        """End the turn's span (and any still open inside it) with its outcome."""
        for span in (self._process, self._retry, *self._tools.values(), *self._approvals.values()):
            self._end(span)
        span = self._span
        if result is not None:
            if not self._reported:
                # No turn report came: the result's usage is all there is to go on.
                self._input_tokens = result.usage.tokens.input_tokens
                self._output_tokens = result.usage.tokens.output_tokens
                self._cost = result.usage.total_cost_usd
            self._model = result.usage.model or self._model
            span.set_attribute("agentshim.interrupted", result.interrupted)
        named = session_id or self._session_id
        if named:
            span.set_attribute("gen_ai.response.id", named)
            span.set_attribute("gen_ai.conversation.id", named)
        if self._model:
            span.set_attribute("gen_ai.response.model", self._model)
        span.set_attribute("gen_ai.usage.input_tokens", self._input_tokens)
        span.set_attribute("gen_ai.usage.output_tokens", self._output_tokens)
        if self._cost is not None:
            span.set_attribute("agentshim.cost_usd", self._cost)
        if error is not None:
            kind = error.kind.value if isinstance(error, TurnFailedError) else type(error).__name__
            span.set_attribute("error.type", kind)
            description = str(error) if self._content else type(error).__name__
            span.set_status(self._trace_api.Status(self._trace_api.StatusCode.ERROR, description))
        span.end()

    def _tool_call(self, event: ToolCall) -> None:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.tool,
            "gen_ai.tool.type": event.kind.value,
        }
        if event.tool_id:
            attributes["gen_ai.tool.call.id"] = event.tool_id
        if self._content and event.args is not None:
            args = event.args if isinstance(event.args, str) else json.dumps(dict(event.args))
            attributes["gen_ai.tool.call.arguments"] = args
        self._end(self._tools.pop(event.tool_id, None))
        self._tools[event.tool_id] = self._child(f"execute_tool {event.tool}", attributes)

    def _tool_result(self, event: ToolResult) -> None:
        span = self._tools.pop(event.tool_id, None)
        if span is None:
            return
        if event.exit_code is not None:
            span.set_attribute("agentshim.tool.exit_code", event.exit_code)
        if event.failed:
            span.set_attribute("error.type", "tool_failed")
            span.set_status(self._trace_api.Status(self._trace_api.StatusCode.ERROR))
        if self._content:
            span.set_attribute("gen_ai.tool.call.result", event.stdout + event.stderr)
        span.end()

    def _lifecycle(self, event: Lifecycle) -> None:
        if event.kind == "retry_scheduled":
            self._end_retry()
            self._retry = self._child("agentshim.retry", {"agentshim.detail": event.detail})
        elif event.kind in _REPLACED:
            self._end_retry()
            span = self._child(
                "agentshim.conversation_replaced",
                {"agentshim.reason": event.kind, "agentshim.detail": event.detail},
            )
            span.end()

    def _usage(self, event: UsageReport) -> None:
        self._model = event.usage.model or self._model
        if event.scope is not UsageScope.TURN:
            return
        # Every attempt's turn report counts: a retried turn spent what its failures did too.
        self._reported = True
        self._input_tokens += event.usage.tokens.input_tokens
        self._output_tokens += event.usage.tokens.output_tokens
        if event.cost_usd is not None:
            self._cost = (self._cost or 0.0) + event.cost_usd

    def _child(self, name: str, attributes: Mapping[str, Any]) -> Any:
        return self._tracer.start_span(name, context=self._context, attributes=dict(attributes))

    def _end_retry(self) -> None:
        retry, self._retry = self._retry, None
        self._end(retry)

    @staticmethod
    def _end(span: Any, attributes: Mapping[str, Any] | None = None) -> None:
        """End ``span`` (nothing when None), first setting ``attributes`` on it."""
        if span is not None:
            for name, value in (attributes or {}).items():
                span.set_attribute(name, value)
            span.end()
