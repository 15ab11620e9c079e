"""OpenTelemetry traces of turns, checked span by span against the SDK's in-memory exporter."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from agentshim import Agent
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import TransportKind
from agentshim.core.errors import FailureKind, TurnFailedError
from agentshim.core.events import AgentEvent, UsageReport, UsageScope
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.retry import RetryPolicy
from agentshim.testing import FakeExecutor, FakeOutcome, FakeTransport, scripted_turn
from agentshim.testing.claude_stream import ClaudePeerTurn, ClaudeStreamPeers

pytest.importorskip("opentelemetry.sdk")

from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import (
    InMemorySpanExporter,
)
from opentelemetry.trace import StatusCode

from agentshim.otel import Tracing

ENV = {"PATH": "/usr/bin"}
TOUCH = {"command": "touch secret-file.txt"}
PROMPT = "the confidential prompt"
# Every tool runs and no handler is asked: the traces then hold only the turn's own spans.
QUIET: dict[str, Any] = {
    "permissions": NativePermissions.bypass(),
    "approvals": ApprovalPolicy.DENY,
}


class Traces:
    def __init__(self, **options: Any) -> None:
        self.exporter = InMemorySpanExporter()
        self.provider = TracerProvider()
        self.provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.tracing = Tracing(tracer_provider=self.provider, **options)

    def spans(self) -> Sequence[ReadableSpan]:
        return self.exporter.get_finished_spans()

    def named(self, name: str) -> list[ReadableSpan]:
        return [span for span in self.spans() if span.name == name]

    def text(self) -> str:
        return repr([(s.name, dict(s.attributes or {}), s.status) for s in self.spans()])

    def claude(self, executor: FakeExecutor, **options: Any) -> Agent:
        """A traced Claude Code agent that asks nothing, on ``executor``."""
        return Agent("claude", executor=executor, env=ENV, tracing=self.tracing, **QUIET, **options)

    def over(self, transport: FakeTransport) -> Agent:
        """A traced agent that asks nothing, over ``transport``."""
        return Agent(transport, tracing=self.tracing, **QUIET)


def allow(request: ApprovalRequest) -> ApprovalDecision:
    return ApprovalDecision.allow()


def test_a_session_with_a_retry_a_tool_call_and_an_approval_span_by_span() -> None:
    traces = Traces()
    peers = ClaudeStreamPeers(
        [
            ClaudePeerTurn(error="API Error: 529 Overloaded", api_error_status=529),
            ClaudePeerTurn("done", tool="Bash", tool_input=TOUCH, ask=True),
        ]
    )
    executor = FakeExecutor(peers=peers, binaries={"claude": "/usr/bin/claude"})
    agent = Agent(
        "claude",
        executor=executor,
        env=ENV,
        permissions=NativePermissions.workspace_write(),
        approvals=allow,
        transport=TransportKind.LONG_LIVED,
        model="claude-opus-4-8",
        retry=RetryPolicy(delays=(0.0,)),
        tracing=traces.tracing,
    )
    outer = traces.provider.get_tracer("service").start_as_current_span("handle request")
    reports: list[UsageReport] = []

    def collect(event: AgentEvent) -> None:
        if isinstance(event, UsageReport) and event.scope is UsageScope.TURN:
            reports.append(event)

    with outer as request_span, agent.start_session() as session:
        turn = session.turn(PROMPT, on_event=collect)
    assert turn.result.text == "done"

    (root,) = traces.named("invoke_agent claude")
    assert root.parent is not None
    assert root.parent.span_id == request_span.get_span_context().span_id
    attributes = dict(root.attributes or {})
    assert attributes["gen_ai.operation.name"] == "invoke_agent"
    assert attributes["gen_ai.system"] == "claude"
    assert attributes["gen_ai.request.model"] == "claude-opus-4-8"
    assert attributes["gen_ai.response.id"] == turn.session_id
    # Both attempts' usage: the failed one spent too.
    assert len(reports) == 2
    assert attributes["gen_ai.usage.input_tokens"] == sum(
        r.usage.tokens.input_tokens for r in reports
    )
    assert attributes["gen_ai.usage.output_tokens"] == sum(
        r.usage.tokens.output_tokens for r in reports
    )
    assert attributes["agentshim.cost_usd"] == pytest.approx(
        sum(r.cost_usd or 0.0 for r in reports)
    )
    assert "error.type" not in attributes
    assert root.status.status_code is not StatusCode.ERROR

    children = [s for s in traces.spans() if s.name not in (root.name, "handle request")]
    assert {s.name for s in children} >= {
        "agentshim.retry",
        "agentshim.approval",
        "execute_tool Bash",
    }
    for child in children:
        assert child.parent is not None
        assert child.parent.span_id == root.context.span_id, child.name
        assert child.context.trace_id == root.context.trace_id

    (retry,) = traces.named("agentshim.retry")
    assert "retry 1" in str((retry.attributes or {})["agentshim.detail"])
    (approval,) = traces.named("agentshim.approval")
    assert (approval.attributes or {})["gen_ai.tool.name"] == "Bash"
    assert (approval.attributes or {})["agentshim.approval.allowed"] is True
    assert (approval.attributes or {})["agentshim.approval.decided_by"] == "handler"
    (tool,) = traces.named("execute_tool Bash")
    tool_attributes = dict(tool.attributes or {})
    assert tool_attributes["gen_ai.operation.name"] == "execute_tool"
    assert (
        tool_attributes["gen_ai.tool.call.id"] == (approval.attributes or {})["gen_ai.tool.call.id"]
    )
    # Approval, then the tool: the approval span ends before the tool's does.
    assert approval.end_time is not None
    assert tool.end_time is not None
    assert approval.end_time <= tool.end_time
    # No prompt and no tool text unless asked for.
    assert PROMPT not in traces.text()
    assert "secret-file" not in traces.text()


def test_content_is_recorded_only_when_the_caller_turns_it_on() -> None:
    traces = Traces(capture_content=True)
    peers = ClaudeStreamPeers([ClaudePeerTurn("done", tool="Bash", tool_input=TOUCH)])
    executor = FakeExecutor(peers=peers, binaries={"claude": "/usr/bin/claude"})
    agent = traces.claude(executor, transport=TransportKind.LONG_LIVED)
    with agent.start_session() as session:
        session.turn(PROMPT)
    assert PROMPT in traces.text()
    assert "secret-file" in traces.text()


def test_a_failed_turn_carries_its_failure_kind_as_the_error_type() -> None:
    traces = Traces()
    transport = FakeTransport([FakeOutcome.failure(FailureKind.AUTH, detail="bad key")])
    agent = traces.over(transport)
    with pytest.raises(TurnFailedError):
        agent.start_session().turn("go")
    (root,) = traces.named("invoke_agent fake")
    assert (root.attributes or {})["error.type"] == "auth"
    assert root.status.status_code is StatusCode.ERROR
    assert "bad key" not in traces.text()


def test_a_one_shot_cli_gets_the_turn_span_as_traceparent() -> None:
    traces = Traces()
    fake = FakeExecutor(scripted_turn("claude", text="hi"), binaries={"claude": "/usr/bin/claude"})
    agent = traces.claude(fake)
    agent.start_session().turn("go")
    (root,) = traces.named("invoke_agent claude")
    (process,) = traces.named("agentshim.process")
    assert (process.attributes or {})["process.executable.name"] == "claude"
    turn_run = fake.requests[-1]
    trace_id = f"{root.context.trace_id:032x}"
    span_id = f"{root.context.span_id:016x}"
    version, traced, parent, flags = turn_run.env["TRACEPARENT"].split("-")
    assert (version, traced, parent) == ("00", trace_id, span_id)
    assert int(flags, 16) & 1, "not sampled"


def test_an_async_turn_is_a_child_of_the_awaiting_task_span() -> None:
    from agentshim.aio import AsyncAgent

    traces = Traces()

    async def main() -> int:
        agent = AsyncAgent(
            FakeTransport([FakeOutcome.success("ok")]),
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            tracing=traces.tracing,
        )
        tracer = traces.provider.get_tracer("service")
        with tracer.start_as_current_span("handler") as span:
            async with agent.start_session() as session:
                await session.turn("go")
            return span.get_span_context().span_id

    parent = asyncio.run(main())
    (root,) = traces.named("invoke_agent fake")
    assert root.parent is not None
    assert root.parent.span_id == parent


def test_a_replaced_conversation_is_a_span_inside_its_turn() -> None:
    traces = Traces()
    transport = FakeTransport(
        [FakeOutcome.success("one"), FakeOutcome.resume_refused(), FakeOutcome.success("two")]
    )
    agent = traces.over(transport)
    session = agent.start_session()
    first = session.turn("one")
    second = session.turn("two")
    assert second.session_id != first.session_id
    (replaced,) = traces.named("agentshim.conversation_replaced")
    turns = traces.named("invoke_agent fake")
    assert len(turns) == 2
    assert replaced.parent is not None
    assert replaced.parent.span_id == turns[1].context.span_id
    assert (replaced.attributes or {})["agentshim.reason"] == "conversation_replaced"
    assert (turns[1].attributes or {})["gen_ai.response.id"] == second.session_id
