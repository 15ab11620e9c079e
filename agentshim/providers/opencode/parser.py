"""OpencodeStreamParser: reads ``opencode run --format json`` and emits typed events.

Every frame is ``{"type", "timestamp", "sessionID", "part": {...}}`` (``error`` frames carry
``error`` instead of ``part``). There is no final result frame: the turn succeeded when a
``step_finish`` with ``reason: "stop"`` arrived and no ``error`` frame followed it;
``"tool-calls"`` only ends a step. A build that prints ``step_finish`` without a ``reason``
says nothing either way: its last step, with no step started and no error after it, is the stop.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Any, cast

from agentshim.core import lifecycle_kinds as lk
from agentshim.core._builders import build_assistant_text
from agentshim.core._enum_members import COST_NOT_REPORTED, COST_REPORTED
from agentshim.core.errors import FailureKind
from agentshim.core.events import (
    AgentEvent,
    Emit,
    Lifecycle,
    ProviderErrorReported,
    Reasoning,
    UsageReport,
    UsageScope,
)
from agentshim.core.frames import Frame, FrameParser
from agentshim.core.jsonvalues import as_amount, as_count, mapping_or_empty
from agentshim.core.turn import ParsedTurn
from agentshim.core.usage import ProviderUsage, TokenUsage

from .events import TODO_TOOL, plan_from_args, tool_events
from .failures import read_error as classify_error

__all__ = ["PROVIDER_NAME", "OpencodeStreamParser", "strip_ansi"]

PROVIDER_NAME = "opencode"
# An event that never varies is one frozen value, built once rather than for every step.
_STEP_STARTED = Lifecycle(lk.STEP_STARTED)
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")


def strip_ansi(text: str) -> str:
    """Remove terminal colour codes (opencode colours its stderr errors)."""
    return _ANSI.sub("", text)


def _step_counts(tokens: Mapping[str, Any]) -> tuple[int, int, int, int, int] | None:
    """One step's ``tokens`` in the normalized breakdown, as plain counts; None if it has none.

    Returns (input, cache read, cache write, output, reasoning). opencode reports cache reads,
    cache writes and reasoning apart from ``input`` and ``output``, so they are folded in. A
    ``tokens`` with neither ``input`` nor ``output`` (only a ``total``, say) counts nothing
    this breakdown can hold: None, not zero.
    """
    get = tokens.get
    if "input" not in tokens and "output" not in tokens:
        return None
    cache = get("cache")
    read = write = 0
    if type(cache) is dict:
        cache_get = cast("dict[str, object]", cache).get
        read = as_count(cache_get("read"), whole_floats=False)
        write = as_count(cache_get("write"), whole_floats=False)
    reasoning = as_count(get("reasoning"), whole_floats=False)
    return (
        as_count(get("input"), whole_floats=False) + read + write,
        read,
        write,
        as_count(get("output"), whole_floats=False) + reasoning,
        reasoning,
    )


def _token_usage(counts: list[int], turns: int) -> TokenUsage:
    # In field order (input, cache read, cache write, 1h write, output, reasoning, turns):
    # building a class with keywords costs a dict per call on CPython.
    return TokenUsage(counts[0], counts[1], counts[2], 0, counts[3], counts[4], turns)


class OpencodeStreamParser(FrameParser):
    """Turns opencode JSON lines into events and a ParsedTurn; never raises on input.

    ``text`` parts are whole messages (no deltas) and are joined with a newline. Tokens and
    the cost opencode reports (``part.cost``) are summed over steps, each ``part.id`` once; a
    UsageReport covers everything since the previous one and is emitted when a step ends the
    turn (any reason but ``tool-calls``) or, for a stream that ended early, by ``finish()``;
    before it, each step with counts gets a UsageReport of scope CALL (its model call, no cost).
    """

    # Blank lines separate the parts of an error report: they are passed on as printed.
    BLANK_STDERR = True

    def __init__(self, emit: Emit) -> None:
        """Emit events through ``emit`` (opencode takes no output schema, so none is expected)."""
        handlers = MappingProxyType(
            {
                "text": self._on_text,
                "tool_use": self._on_tool_use,
                "step_start": self._on_step_start,
                "step_finish": self._on_step_finish,
                "reasoning": self._on_reasoning,
                "error": self._on_error,
            }
        )
        super().__init__(handlers, emit, before=self._see_session)
        self._texts: list[str] = []
        self._called: set[str] = set()
        # part.id of every step_finish seen: a repeated frame is the same step, counted once.
        self._finished_steps: set[str] = set()
        # Counts summed over steps as plain ints (input, cache read, cache write, output,
        # reasoning), and what UsageReports have covered so far.
        self._totals = [0, 0, 0, 0, 0]
        self._reported = [0, 0, 0, 0, 0]
        self._counted = False
        self._cost: float | None = None
        self._cost_reported: float | None = None
        self._first_report: ProviderUsage | None = None
        self._report_count = 0
        self._raw: Mapping[str, Any] = MappingProxyType({})
        self._context_tokens: int | None = None
        self._last_reason: str | None = None
        self._stopped = False
        # True while the stop is a step_finish without a reason: a later step_start undoes it.
        self._stop_unsaid = False
        # A step_finish whose tokens held no counts makes the turn's usage unknown, and the
        # report covering it.
        self._counts_unknown = False
        self._unreported_unknown = False
        # Error frames since the last stop; any of them fails the turn.
        self._errors: list[tuple[str, FailureKind]] = []

    # stdout

    def _see_session(self, frame: Frame, out: list[AgentEvent]) -> None:
        # Every frame carries the session id; the first that does announces it.
        if self._session_id is None:
            self._start_session(frame.get("sessionID"), out)

    def _on_text(self, frame: Frame, out: list[AgentEvent]) -> None:
        text = mapping_or_empty(frame.get("part")).get("text")
        if isinstance(text, str) and text:
            self._texts.append(text)
            out.append(build_assistant_text(text, False))

    def _on_reasoning(self, frame: Frame, out: list[AgentEvent]) -> None:
        text = mapping_or_empty(frame.get("part")).get("text")
        if isinstance(text, str) and text:
            out.append(Reasoning(text))

    def _on_tool_use(self, frame: Frame, out: list[AgentEvent]) -> None:
        call, result = tool_events(mapping_or_empty(frame.get("part")))
        if call.tool_id is None or call.tool_id not in self._called:
            if call.tool_id is not None:
                self._called.add(call.tool_id)
            out.append(call)
            if call.tool == TODO_TOOL:
                plan = plan_from_args(call.args, call.tool_id)
                if plan is not None:
                    out.append(plan)
        if result is not None:
            out.append(result)

    def _on_step_start(self, frame: Frame, out: list[AgentEvent]) -> None:
        if self._stop_unsaid:
            # The step without a reason was not the last: the turn goes on.
            self._stopped = self._stop_unsaid = False
        out.append(_STEP_STARTED)

    def _on_step_finish(self, frame: Frame, out: list[AgentEvent]) -> None:
        part = mapping_or_empty(frame.get("part"))
        step_id = part.get("id")
        if isinstance(step_id, str):
            if step_id in self._finished_steps:
                return
            self._finished_steps.add(step_id)
        reason = part.get("reason")
        self._last_reason = reason if isinstance(reason, str) else None
        unsaid = self._last_reason is None
        if reason == "stop" or unsaid:
            # The turn went on past any earlier error and finished: only an error after this
            # stop fails it. A step without a reason is the stop if nothing follows it.
            self._stopped = True
            self._stop_unsaid = unsaid
            self._errors.clear()
        elif self._stop_unsaid:
            self._stopped = self._stop_unsaid = False
        out.append(Lifecycle(lk.STEP_FINISHED, self._last_reason or ""))
        tokens = part.get("tokens")
        raw = cast("dict[str, Any]", tokens) if isinstance(tokens, dict) else None
        cost = as_amount(part.get("cost"))
        if raw is None and cost is None:
            return
        self._counted = True
        if raw is not None:
            counts = _step_counts(raw)
            if counts is None:
                self._counts_unknown = self._unreported_unknown = True
            else:
                totals = self._totals
                for index, count in enumerate(counts):
                    totals[index] += count
                # The prompt of the step's model call, as TurnResult.context_tokens defines it.
                self._context_tokens = counts[0]
                # Each step is one model call: reported as it ends, so a turn in flight counts.
                call = ProviderUsage(
                    _token_usage(list(counts), 0),
                    None,
                    PROVIDER_NAME,
                    MappingProxyType(raw),
                    True,
                    COST_NOT_REPORTED,
                )
                out.append(UsageReport(call, None, UsageScope.CALL))
            self._raw = MappingProxyType(raw)
        if cost is not None:
            self._cost = cost if self._cost is None else self._cost + cost
        if reason != "tool-calls":
            self._report(out.append)

    def _report(self, send: Emit) -> None:
        """Emit one UsageReport for everything counted since the last one."""
        increment = [t - r for t, r in zip(self._totals, self._reported, strict=True)]
        cost = self._cost
        if cost is not None and self._cost_reported is not None:
            cost -= self._cost_reported
        # The turn counts once, on its first report, so reports add up to the turn.
        tokens = _token_usage(increment, 0 if self._report_count else 1)
        source = COST_REPORTED if cost is not None else COST_NOT_REPORTED
        # In field order (tokens, cost, provider, raw, increment_known, cost_source), as above.
        usage = ProviderUsage(
            tokens, cost, PROVIDER_NAME, self._raw, not self._unreported_unknown, source
        )
        self._unreported_unknown = False
        if self._first_report is None:
            self._first_report = usage
        self._report_count += 1
        self._reported = list(self._totals)
        self._cost_reported = self._cost
        send(UsageReport(usage, cost))

    def _on_error(self, frame: Frame, out: list[AgentEvent]) -> None:
        message, kind = classify_error(mapping_or_empty(frame.get("error")))
        self._errors.append((message, kind))
        # Fatal whatever came before: an error after a stop still fails the turn.
        self._stopped = False
        out.append(ProviderErrorReported(message, fatal=True))

    # stderr

    def _stderr_reason(self) -> str:
        lines = [strip_ansi(s).strip() for s in self._stderr]
        for line in lines:
            if line.startswith("Error"):
                return line[:500]
        meaningful = [s for s in lines if s]
        return meaningful[-1][:500] if meaningful else ""

    # summary

    def _failure(self) -> tuple[str, FailureKind]:
        if self._errors:
            # A failed auto-compaction reports a second error; the context overflow is the cause.
            for message, kind in self._errors:
                if kind is FailureKind.CONTEXT_OVERFLOW:
                    return message, kind
            return self._errors[-1]
        if self._last_reason is not None:
            return (
                f"opencode's last step finished with reason {self._last_reason!r}, not 'stop'",
                FailureKind.OTHER,
            )
        reason = self._stderr_reason()
        return (
            "opencode's stream ended before a step finished with reason 'stop'"
            + (f": {reason}" if reason else ""),
            FailureKind.OTHER,
        )

    def finish(self) -> ParsedTurn:
        """Summarize the turn; it failed without a ``stop`` step, or with an error after the last."""
        error: str | None = None
        kind: FailureKind | None = None
        if not self._stopped:
            error, kind = self._failure()
        if self._counted and (
            self._totals != self._reported
            or self._cost != self._cost_reported
            or self._unreported_unknown
        ):
            self._report(self._emit)  # steps the stream ended without reporting
        usage = None
        if self._report_count == 1:
            usage = self._first_report
        elif self._report_count:
            source = COST_REPORTED if self._cost is not None else COST_NOT_REPORTED
            # In field order (tokens, cost, provider, raw, increment_known, cost_source), as above.
            known = not self._counts_unknown
            tokens = _token_usage(self._totals, 1)
            usage = ProviderUsage(tokens, self._cost, PROVIDER_NAME, self._raw, known, source)
        return ParsedTurn(
            "\n".join(self._texts),
            session_id=self._session_id,
            usage=usage,
            cost_usd=self._cost,
            error=error,
            error_kind=kind,
            context_tokens=self._context_tokens,
        )
