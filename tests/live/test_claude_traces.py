"""Live: a one-shot Claude Code turn's CLI sees the turn's span as ``TRACEPARENT``.

Run with ``pytest tests/live/test_claude_traces.py``; skipped when the pinned claude or
``opentelemetry-sdk`` is not installed.
"""

from __future__ import annotations

import pytest

from agentshim.core.conversation import TransportKind
from agentshim.core.events import ToolResult

from .streams import NEEDS_PROC, Live, suite_fixtures, tool_then_text

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)

from agentshim.otel import Tracing

pytestmark = NEEDS_PROC

rig, live = suite_fixtures("claude", TransportKind.ONE_SHOT)


def test_the_cli_and_its_tools_see_the_turn_span_as_traceparent(live: Live) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    live.script(*tool_then_text("printenv TRACEPARENT"))
    agent = live.agent(tracing=Tracing(tracer_provider=provider))
    with live.session(agent) as session:
        session.turn("Show the trace context.")
    (turn,) = [s for s in exporter.get_finished_spans() if s.name == "invoke_agent claude"]
    trace_id = f"{turn.context.trace_id:032x}"
    span_id = f"{turn.context.span_id:016x}"
    printed = [e.stdout for e in live.events if isinstance(e, ToolResult)]
    assert any(f"00-{trace_id}-{span_id}-" in out for out in printed), printed
    names = {s.name for s in exporter.get_finished_spans()}
    assert {"agentshim.process", "execute_tool Bash"} <= names, names
