"""GeminiStreamParser: reads ``gemini --output-format stream-json`` and emits typed events.

Frames (each a JSON object with ``type`` and ``timestamp``): ``init``, ``message``,
``tool_use``, ``tool_result``, ``error`` and the terminal ``result``. A stream that ends
without ``result`` is a failed turn.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from agentshim.core._builders import (
    build_assistant_text,
    build_provider_usage,
    build_token_usage,
    build_usage_report,
)
from agentshim.core._enum_members import COST_NOT_REPORTED, COST_UNKNOWN_MODEL, SCOPE_TURN
from agentshim.core.clock import Monotonic
from agentshim.core.errors import FailureKind
from agentshim.core.events import (
    AgentEvent,
    Emit,
    ProviderErrorReported,
    UsageReport,
)
from agentshim.core.failures import kind_from_text
from agentshim.core.frames import Frame, FrameParser
from agentshim.core.jsonvalues import as_count
from agentshim.core.pricing import PricingTable, cost_usd
from agentshim.core.stream import ToolTracker
from agentshim.core.turn import ParsedTurn
from agentshim.core.usage import CostSource, TokenUsage

from .events import TODO_TOOL, plan_from_args, tool_call, tool_result

__all__ = ["PROVIDER_NAME", "GeminiStreamParser"]

PROVIDER_NAME = "gemini"
# What ``init.model`` says when the CLI routes each request itself: no model name.
_ROUTED_MODEL = "auto"
# stderr lines the CLI prints on every run; never the reason a turn failed.
_NOISE_PREFIXES = (
    "Warning: 256-color support",
    "Ripgrep is not available",
    "YOLO mode is enabled",
    "[STARTUP]",
)


def _fold_usage(stats: Mapping[str, Any]) -> TokenUsage | None:
    """Normalize one ``stats`` object (or one of its per-model entries); None if it cannot be.

    ``input_tokens`` is the prompt count and already includes ``cached`` (cache reads); Gemini
    reports no cache writes. ``output_tokens`` is the candidates count, which excludes thinking:
    what ``total_tokens`` holds beyond input and output is counted as reasoning output. Without
    both ``input_tokens`` and ``output_tokens`` (a build that prints only ``total_tokens``) the
    split is unknown, and guessing it would book the prompt as output: None.
    """
    get = stats.get
    input_tokens, output, total, cached = (
        get("input_tokens"),
        get("output_tokens"),
        get("total_tokens"),
        get("cached"),
    )
    if input_tokens is None or output is None:
        return None
    input_tokens = input_tokens if type(input_tokens) is int and input_tokens > 0 else 0
    output = output if type(output) is int and output > 0 else 0
    total = total if type(total) is int and total > 0 else 0
    cached = cached if type(cached) is int and cached > 0 else 0
    reasoning = total - input_tokens - output
    if reasoning < 0:
        reasoning = 0
    read = cached if cached < input_tokens else input_tokens
    # Valid by construction (non-negative ints, cache reads within input, reasoning within
    # output): built unchecked, in field order (input, cache read, cache write, 1h write,
    # output, reasoning, turns).
    return build_token_usage(input_tokens, read, 0, 0, output + reasoning, reasoning, 1)


class GeminiStreamParser(FrameParser):
    """Turns Gemini CLI stream-json lines into events and a ParsedTurn; never raises on input.

    Assistant ``message`` deltas are concatenated as they come; runs of text separated by a
    tool call are joined with a newline. The user-prompt echo is ignored. Cost is priced from
    ``pricing`` per model of ``result.stats.models`` (the CLI reports none).
    """

    # Blank lines separate the parts of a Node stack trace: they are passed on as printed.
    BLANK_STDERR = True

    def __init__(
        self,
        emit: Emit,
        *,
        pricing: PricingTable | None = None,
        monotonic: Monotonic = time.monotonic,
    ) -> None:
        """Emit events through ``emit``; ``pricing`` prices the turn, ``monotonic`` times tool calls."""
        self._pricing = pricing
        self._tools = ToolTracker(monotonic)
        handlers = MappingProxyType(
            {
                "message": self._on_message,
                "tool_use": self._on_tool_use,
                "tool_result": self._on_tool_result,
                "init": self._on_init,
                "error": self._on_error,
                "result": self._on_result,
            }
        )
        super().__init__(handlers, emit)
        self._runs: list[str] = []
        self._run: list[str] = []
        self._init_model: str | None = None
        self._report: UsageReport | None = None
        self._finished = False
        # What a result frame that says the turn failed said, and its kind.
        self._failure: tuple[str, FailureKind] | None = None
        self._fatal_error: str | None = None
        # The last error frame not marked a warning: the reason of a turn that ends without
        # its result (a build may print no severity at all).
        self._said_error: str | None = None

    # stdout

    def _on_init(self, frame: Frame, out: list[AgentEvent]) -> None:
        model = frame.get("model")
        if isinstance(model, str) and model and model != _ROUTED_MODEL:
            self._init_model = model
        self._start_session(frame.get("session_id"), out)

    def _on_message(self, frame: Frame, out: list[AgentEvent]) -> None:
        if frame.get("role") != "assistant":
            return  # the CLI echoes the prompt as a user message
        content = frame.get("content")
        if not isinstance(content, str) or not content:
            return
        delta = frame.get("delta") is True
        if not delta and self._run:
            self._close_run()
        self._run.append(content)
        out.append(build_assistant_text(content, delta))

    def _close_run(self) -> None:
        if self._run:
            self._runs.append("".join(self._run))
            self._run = []

    def _on_tool_use(self, frame: Frame, out: list[AgentEvent]) -> None:
        if self._run:
            self._close_run()
        event = tool_call(frame)
        if event.tool_id is not None:
            self._tools.start(event.tool_id, event.tool, event.args)
        out.append(event)
        if event.tool == TODO_TOOL:
            plan = plan_from_args(event.args, event.tool_id)
            if plan is not None:
                out.append(plan)

    def _on_tool_result(self, frame: Frame, out: list[AgentEvent]) -> None:
        tool_id = frame.get("tool_id")
        finished = self._tools.finish(tool_id) if isinstance(tool_id, str) else None
        name = finished.name if finished is not None else ""
        out.append(tool_result(frame, name, finished.duration_s if finished else None))

    def _on_error(self, frame: Frame, out: list[AgentEvent]) -> None:
        message = frame.get("message")
        text = message if isinstance(message, str) else json.dumps(message)
        severity = frame.get("severity")
        fatal = severity == "error"
        if fatal:
            self._fatal_error = text
        if severity != "warning":
            self._said_error = text
        out.append(ProviderErrorReported(text, fatal=fatal))

    def _on_result(self, frame: Frame, out: list[AgentEvent]) -> None:
        stats = frame.get("stats")
        if isinstance(stats, dict):
            # Priced before the turn counts as finished: a result whose counts cannot be
            # priced costs its frame, and the turn ends without a result.
            report = self._usage_report(stats)  # pyright: ignore[reportUnknownArgumentType]
            self._report = report
            out.append(report)
        self._finished = True
        status = frame.get("status")
        error = frame.get("error")
        if status == "success" or (status is None and error is None):
            # A build that prints no status said nothing failed unless it gave an error.
            return
        message = error.get("message") if isinstance(error, dict) else None  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        text = message if isinstance(message, str) and message else f"gemini reported {status!r}"
        self._failure = (text, kind_from_text(text) or FailureKind.OTHER)
        out.append(ProviderErrorReported(text, fatal=True))

    def _usage_report(self, stats: dict[str, Any]) -> UsageReport:
        models = _model_entries(stats.get("models"))
        tokens = _fold_usage(stats)
        if tokens is None and models:
            # The per-model entries may still hold the split the totals lack.
            folded = [_fold_usage(entry) for _, entry in models.values()]
            split = [t for t in folded if t is not None]
            if len(split) == len(folded):
                tokens = replace(sum(split, TokenUsage()), turns=1)
        cost, source = self._price(models)
        known = tokens is not None
        model = _main_model(models) or self._init_model
        raw = MappingProxyType(stats)
        # Built as ProviderUsage(...) and UsageReport(...) would, cheaper than the class call.
        usage = build_provider_usage(
            tokens if known else TokenUsage(turns=1), cost, PROVIDER_NAME, raw, known, source, model
        )
        return build_usage_report(usage, cost, SCOPE_TURN, None)

    def _price(
        self, models: Mapping[str, tuple[int, Mapping[str, Any]]]
    ) -> tuple[float | None, CostSource]:
        if not models:
            return None, COST_NOT_REPORTED
        pricing = self._pricing
        if pricing is None or not pricing.prices:
            return None, COST_UNKNOWN_MODEL
        total = 0.0
        for model, (_, entry) in models.items():
            price = pricing.get(model)
            if price is None:
                return None, CostSource.UNKNOWN_MODEL
            tokens = _fold_usage(entry)
            if tokens is None:
                return None, CostSource.NOT_REPORTED
            total += cost_usd(tokens, price)
        return total, CostSource.PRICED

    # stderr

    def _stderr_reason(self) -> str:
        """The first stderr line that says what went wrong, or the last meaningful one."""
        meaningful = [
            s.strip()
            for s in self._stderr
            if s.strip() and not s.startswith(_NOISE_PREFIXES) and not s.startswith(" ")
        ]
        for line in meaningful:
            if "rror" in line:
                return line[:500]
        return meaningful[-1][:500] if meaningful else ""

    # summary

    def finish(self) -> ParsedTurn:
        """Summarize the turn; a stream without its ``result`` frame is a failure (OTHER)."""
        error, kind = self._failure or (None, None)
        if not self._finished:
            said = self._fatal_error or self._said_error
            reason = said or self._stderr_reason()
            error = "gemini's stream ended before its result frame" + (
                f": {reason}" if reason else ""
            )
            kind = (kind_from_text(said) if said else None) or FailureKind.OTHER
        runs = [*self._runs, "".join(self._run)] if self._run else self._runs
        report = self._report
        return ParsedTurn(
            "\n".join(runs),
            session_id=self._session_id,
            usage=report.usage if report is not None else None,
            cost_usd=report.cost_usd if report is not None else None,
            error=error,
            error_kind=kind,
        )


def _main_model(models: Mapping[str, tuple[int, Mapping[str, Any]]]) -> str | None:
    """The model that used the most tokens (the router model uses a few)."""
    if len(models) == 1:
        return next(iter(models))
    return max(models, key=lambda m: models[m][0]) if models else None


def _model_entries(models: object) -> dict[str, tuple[int, Mapping[str, Any]]]:
    """``stats.models`` as name -> (total tokens, entry), leaving out models that used none.

    On a failed request the CLI lists the requested model with zero tokens beside the one that
    answered.
    """
    result: dict[str, tuple[int, Mapping[str, Any]]] = {}
    if models.__class__ is not dict:
        return result
    # Annotated rather than cast(): cast is a call, and this runs for every result.
    entries: dict[str, Any] = models  # pyright: ignore[reportAssignmentType]
    fields: Any
    for name, fields in entries.items():
        if fields.__class__ is dict:
            total = as_count(fields.get("total_tokens"), whole_floats=False) or (
                as_count(fields.get("input_tokens"), whole_floats=False)
                + as_count(fields.get("output_tokens"), whole_floats=False)
            )
            if total:
                result[name] = (total, fields)
    return result
