"""CodexStreamParser: ``codex exec --json`` output into typed events and a ParsedTurn.

Frames (one JSON object a line): ``thread.started``, ``turn.started``, ``item.started`` /
``item.updated`` / ``item.completed`` (each carrying a thread item), ``error`` (a retry notice,
not terminal), ``turn.completed`` (with usage) and ``turn.failed`` (terminal). A stream that
ends without ``turn.completed`` or ``turn.failed`` failed too ("stream ended early").

Usage is cumulative for the thread: a resumed turn reports the running total. The turn's own
usage is that total minus the previous report, which the session hands over through
:meth:`CodexStreamParser.configure` (``ParserContext.previous_usage.raw``). A resumed turn with
no baseline reports zero tokens with ``increment_known=False`` and keeps the raw total in
``ProviderUsage.raw`` so the next turn has one. Codex reports no cost on this path; it is
priced from ``model_data.PRICING_TABLE`` when the model is known.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from agentshim.core import lifecycle_kinds as lk
from agentshim.core._builders import (
    build_assistant_text,
    build_lifecycle,
    build_provider_usage,
    build_token_usage,
    build_tool_call,
    build_usage_report,
)
from agentshim.core._enum_members import COST_PRICED, COST_UNKNOWN_MODEL, KIND_OTHER, SCOPE_TURN
from agentshim.core.clock import Monotonic
from agentshim.core.errors import FailureKind
from agentshim.core.events import (
    AgentEvent,
    Emit,
    Lifecycle,
    ProviderErrorReported,
    Reasoning,
)
from agentshim.core.frames import Frame, FrameParser, frame_label
from agentshim.core.jsonvalues import as_mapping, str_or_empty
from agentshim.core.pricing import ModelPricing, PricingTable, cost_usd
from agentshim.core.provider import ParserContext
from agentshim.core.turn import ParsedTurn
from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage

from .events import (
    EDIT_TOOL,
    MCP_TOOL,
    PLAN_ITEM,
    SHELL_TOOL,
    SUBAGENT_TOOL,
    TOOL_KINDS,
    WEB_TOOL,
    plan_from_item,
    tool_args,
    tool_kind,
    tool_result,
)
from .failures import classify as classify_first
from .failures import classify_text as classify_failure
from .model_data import PRICING_TABLE

__all__ = ["PROVIDER_NAME", "CodexStreamParser"]

#: The name usage reports carry.
PROVIDER_NAME = "codex"

_ItemHandler = Callable[[str, Frame, "str | None", list[AgentEvent]], None]
_TOOL_ITEMS = frozenset({SHELL_TOOL, EDIT_TOOL, MCP_TOOL, WEB_TOOL, SUBAGENT_TOOL})
_MODEL_METADATA = re.compile(r"Model metadata for `([^`]+)` not found")
# An event that never varies is one frozen value, built once rather than for every turn.
_TURN_STARTED = Lifecycle(lk.TURN_STARTED, "")
_FINAL_PHASE = "final_answer"
_COMMENTARY_PHASE = "commentary"
_STREAM_ENDED_EARLY = (
    "codex's stream ended early: no turn.completed or turn.failed frame was printed"
)


# One usage report in the normalized breakdown: input (cache included), cache reads, cache
# writes, output (reasoning included), reasoning. Plain ints, because a thread total is only
# an intermediate: the turn's TokenUsage is built once, from the difference.
_Counts = tuple[int, int, int, int, int]


def _fold_usage(raw: Mapping[str, Any]) -> _Counts:
    """Normalize one Codex usage report (its input already includes cached tokens)."""
    get = raw.get
    inp: Any = get("input_tokens")
    read: Any = get("cached_input_tokens")
    write: Any = get("cache_write_input_tokens")
    out: Any = get("output_tokens")
    reasoning: Any = get("reasoning_output_tokens")
    # An exact class check rather than isinstance(): a JSON true is not a count.
    inp = inp if inp.__class__ is int and inp > 0 else 0
    read = read if read.__class__ is int and read > 0 else 0
    write = write if write.__class__ is int and write > 0 else 0
    out = out if out.__class__ is int and out > 0 else 0
    reasoning = reasoning if reasoning.__class__ is int and reasoning > 0 else 0
    # A report that breaks the breakdown's invariants is widened, never rejected (max() by
    # hand: a conditional costs less than a call, once per usage frame).
    cached = read + write
    return (
        inp if inp >= cached else cached,
        read,
        write,
        out if out >= reasoning else reasoning,
        reasoning,
    )


def _has_counts(raw: Mapping[str, Any]) -> bool:
    """Whether a usage report holds an input or an output count (its other fields refine them)."""
    return "input_tokens" in raw or "output_tokens" in raw


def _increment(current: _Counts, base: _Counts | None) -> TokenUsage | None:
    """Return ``current - base`` as one turn's usage; None when that is not a valid usage."""
    inp, read, write, out, reasoning = current
    if base is not None:
        inp -= base[0]
        read -= base[1]
        write -= base[2]
        out -= base[3]
        reasoning -= base[4]
        if min(inp, read, write, out, reasoning) < 0 or read + write > inp or reasoning > out:
            return None
    # Valid by construction (_fold_usage widens a report to the invariants, and a difference
    # that breaks them was refused above): built unchecked, in field order (input, cache
    # read, cache write, 1h write, output, reasoning, turns).
    return build_token_usage(inp, read, write, 0, out, reasoning, 1)


class CodexStreamParser(FrameParser):
    """Parses one ``codex exec --json`` turn; never raises on any input.

    ``model`` prices the turn (``ParserContext.model``, when the session provides one, takes
    precedence; failing both, the model Codex names in its "Model metadata ... not found"
    warning is used). ``expect_structured`` decodes the final message as the JSON payload.
    """

    # Blank lines separate the parts of a Rust backtrace: they are passed on as printed.
    BLANK_STDERR = True

    def __init__(
        self,
        emit: Emit,
        *,
        expect_structured: bool = False,
        model: str | None = None,
        pricing: PricingTable = PRICING_TABLE,
        monotonic: Monotonic = time.monotonic,
    ) -> None:
        self._expect_structured = expect_structured
        self._model = model
        self._warned_model: str | None = None
        self._pricing = pricing
        self._prices: dict[str | None, ModelPricing | None] = {}
        self._clock = monotonic
        self._started_at: dict[str, float] = {}
        self._requested_id: str | None = None
        self._baseline: _Counts | None = None
        self._baseline_missing = False
        # What _final_text reads, kept as the messages come rather than as a list of them: a
        # long stream then holds three strings, not one tuple per message for the collector
        # to walk. The last message in the final-answer phase, the last one not in the
        # commentary phase, and the last one.
        self._final_answer: str | None = None
        self._last_uncommented: str | None = None
        self._last_message: str | None = None
        self._errors: list[str] = []
        self._failure: str | None = None
        self._terminal = False
        self._last_report: _Counts | None = None
        self._reports = 0
        self._first_usage: ProviderUsage | None = None
        self._last_raw: Mapping[str, Any] = MappingProxyType({})
        self._notes: list[str] = []
        tools: dict[str, _ItemHandler] = dict.fromkeys(_TOOL_ITEMS, self._tool_seen)
        self._started_items: dict[str, _ItemHandler] = {
            **tools,
            PLAN_ITEM: self._plan,
            "error": self._warning,
            "agent_message": self._ignore,
            "reasoning": self._ignore,
        }
        self._updated_items: dict[str, _ItemHandler] = {**tools, PLAN_ITEM: self._plan}
        self._completed_items: dict[str, _ItemHandler] = {
            **dict.fromkeys(_TOOL_ITEMS, self._tool_completed),
            PLAN_ITEM: self._plan,
            "error": self._warning,
            "agent_message": self._message,
            "reasoning": self._reasoning,
        }
        handlers = {
            "thread.started": self._on_thread_started,
            "turn.started": self._on_turn_started,
            "turn.completed": self._on_turn_completed,
            "turn.failed": self._on_turn_failed,
            "error": self._on_error,
            "item.started": self._on_item,
            "item.updated": self._on_item,
            "item.completed": self._on_item,
        }
        self._item_handlers: dict[str, Mapping[str, _ItemHandler]] = {
            "item.started": self._started_items,
            "item.updated": self._updated_items,
            "item.completed": self._completed_items,
        }
        super().__init__(handlers, emit)

    # -- the StreamParser protocol ----------------------------------------------------

    def configure(self, context: ParserContext) -> None:
        """Take the resume baseline, the requested thread id and the model, before streaming."""
        self._requested_id = context.requested_session_id if context.resumed else None
        model: object = getattr(context, "model", None)
        if isinstance(model, str) and model:
            self._model = model
        previous = context.previous_usage
        if context.resumed:
            raw = previous.raw if previous is not None else None
            # Only a Codex report is a baseline; an empty or foreign mapping is none at all.
            usable = raw is not None and _has_counts(raw)
            self._baseline = _fold_usage(raw) if raw is not None and usable else None
            self._baseline_missing = self._baseline is None

    def finish(self) -> ParsedTurn:
        """Summarize the turn: final text, structured output, usage, cost, failure."""
        text = self._final_text()
        structured: Any | None = None
        if self._expect_structured and text:
            try:
                structured = json.loads(text)
            except (ValueError, RecursionError):
                structured = None
        error: str | None = None
        kind: FailureKind | None = None
        if self._failure is not None:
            error = self._failure
            kind = classify_first((self._failure, *reversed(self._errors)))
        elif not self._terminal:
            said = self._stderr_error()
            error = f"{_STREAM_ENDED_EARLY}: {said}" if said else _STREAM_ENDED_EARLY
            kind = classify_failure(said) or FailureKind.OTHER
        usage = self._turn_usage()
        return ParsedTurn(
            text=text,
            structured_output=structured,
            session_id=self._session_id,
            usage=usage,
            cost_usd=usage.total_cost_usd if usage is not None else None,
            error=error,
            error_kind=kind,
            notes=tuple(self._notes),
        )

    # -- frames -----------------------------------------------------------------------

    def _on_thread_started(self, frame: Frame, out: list[AgentEvent]) -> None:
        thread_id: Any = frame.get("thread_id")
        if thread_id.__class__ is not str:
            thread_id = ""
        if self._start_session(thread_id, out):
            requested = self._requested_id
            if requested is not None and thread_id != requested:
                self._resume_missed(requested, thread_id, out)
        out.append(build_lifecycle(lk.THREAD_STARTED, thread_id))

    def _resume_missed(self, requested: str, thread_id: str, out: list[AgentEvent]) -> None:
        # `codex exec resume <name>` that matches nothing starts a new thread and exits 0: the
        # turn is real but is not a continuation, and the old baseline belongs to another thread.
        self._baseline = None
        self._baseline_missing = False
        detail = (
            f"asked to resume {requested} but codex started a new thread {thread_id}; "
            "the requested conversation was not found"
        )
        self._notes.append(f"resume_not_found: {detail}")
        out.append(Lifecycle(lk.RESUME_NOT_FOUND, detail))

    def _on_turn_started(self, frame: Frame, out: list[AgentEvent]) -> None:
        out.append(_TURN_STARTED)

    def _on_error(self, frame: Frame, out: list[AgentEvent]) -> None:
        message = str_or_empty(frame.get("message")) or "codex reported an error without a message"
        self._errors.append(message)
        out.append(ProviderErrorReported(message, fatal=False))

    def _on_turn_failed(self, frame: Frame, out: list[AgentEvent]) -> None:
        error = frame.get("error")
        details = as_mapping(error)
        message = (
            str_or_empty(details.get("message")) if details is not None else str_or_empty(error)
        )
        if not message:
            message = self._errors[-1] if self._errors else "codex reported turn.failed"
        self._failure = message
        self._terminal = True
        out.append(ProviderErrorReported(message, fatal=True))
        out.append(Lifecycle(lk.TURN_FAILED, message))

    def _on_turn_completed(self, frame: Frame, out: list[AgentEvent]) -> None:
        self._terminal = True
        report: Any = frame.get("usage")
        # _has_counts, inlined.
        if report.__class__ is not dict or not (
            "input_tokens" in report or "output_tokens" in report
        ):
            # No usage, or one with neither an input nor an output count: nothing to fold,
            # and a zero would read as a free turn.
            out.append(Lifecycle(lk.TURN_COMPLETED, ""))
            return
        current = _fold_usage(report)
        detail = f"in={current[0]} cached={current[1]} out={current[3]}"
        out.append(build_lifecycle(lk.TURN_COMPLETED, detail))
        previous = self._last_report
        if previous is None and self._baseline_missing:
            step = None
        else:
            step = _increment(current, previous if previous is not None else self._baseline)
        self._last_report = current
        self._reports += 1
        # The decoded frame is this parser's alone: a read-only view of it needs no copy.
        self._last_raw = raw_report = MappingProxyType(report)
        usage, cost = self._priced(step, raw_report)
        if self._reports == 1:
            # The first report's step is the turn so far; finish() reuses it.
            self._first_usage = usage
        out.append(build_usage_report(usage, cost, SCOPE_TURN, None))

    # -- items ------------------------------------------------------------------------

    def _on_item(self, frame: Frame, out: list[AgentEvent]) -> None:
        # Most frames of a turn are items: the type checks are inlined, with __class__ so the
        # values stay typed Any (JSON) for the checker.
        handlers = self._item_handlers[frame["type"]]
        payload: Any = frame.get("item")
        if payload.__class__ is not dict:
            raise TypeError(f"the item is {frame_label(payload)}, not an object")
        item_type: Any = payload.get("type")
        item_id: Any = payload.get("id")
        if item_id.__class__ is not str:
            item_id = None
        if item_type.__class__ is str:
            handler = handlers.get(item_type)
            if handler is not None:
                handler(item_type, payload, item_id, out)
                return
        if handlers is not self._updated_items:
            out.append(Lifecycle(lk.unknown_item(frame_label(item_type)), item_id or ""))

    def _ignore(
        self, item_type: str, item: Frame, item_id: str | None, out: list[AgentEvent]
    ) -> None:
        """Messages and reasoning are reported once, when complete."""

    def _message(
        self, item_type: str, item: Frame, item_id: str | None, out: list[AgentEvent]
    ) -> None:
        text: Any = item.get("text")
        if text.__class__ is not str:
            text = ""
        phase = item.get("phase")
        if phase == _FINAL_PHASE:
            self._final_answer = text
        if phase != _COMMENTARY_PHASE:
            self._last_uncommented = text
        self._last_message = text
        out.append(build_assistant_text(text, False))

    def _reasoning(
        self, item_type: str, item: Frame, item_id: str | None, out: list[AgentEvent]
    ) -> None:
        text = str_or_empty(item.get("text"))
        if text:
            out.append(Reasoning(text))

    def _plan(
        self, item_type: str, item: Frame, item_id: str | None, out: list[AgentEvent]
    ) -> None:
        out.append(plan_from_item(item, tool_id=item_id))

    def _tool_seen(
        self, item_type: str, item: Frame, item_id: str | None, out: list[AgentEvent]
    ) -> None:
        if item_id is not None:
            if item_id in self._started_at:
                return
            self._started_at[item_id] = self._clock()
        kind = TOOL_KINDS.get(item_type, KIND_OTHER)
        out.append(build_tool_call(item_id, item_type, tool_args(item_type, item), kind))

    def _tool_completed(
        self, item_type: str, item: Frame, item_id: str | None, out: list[AgentEvent]
    ) -> None:
        started = self._started_at.pop(item_id, None) if item_id is not None else None
        if started is None:
            # Codex reports some items (web searches, patches) only once they are done.
            args = tool_args(item_type, item)
            out.append(build_tool_call(item_id, item_type, args, tool_kind(item_type)))
            duration = None
        else:
            duration = self._clock() - started
            duration = duration if duration > 0.0 else 0.0  # max(0.0, duration), without a call
        out.append(tool_result(item_type, item, tool_id=item_id, duration_s=duration))

    def _warning(
        self, item_type: str, item: Frame, item_id: str | None, out: list[AgentEvent]
    ) -> None:
        message = str_or_empty(item.get("message"))
        if self._warned_model is None and "Model metadata" in message:
            match = _MODEL_METADATA.search(message)
            if match is not None:
                self._warned_model = match.group(1)
        out.append(build_lifecycle(lk.WARNING, message))

    # -- results ----------------------------------------------------------------------

    def _final_text(self) -> str:
        # The last final answer; failing that the last message not marked commentary (a build
        # that names no phase); failing that the last message.
        for text in (self._final_answer, self._last_uncommented, self._last_message):
            if text is not None:
                return text
        return ""

    def _stderr_error(self) -> str:
        lines = [line.strip() for line in self._stderr if not line.startswith("WARNING:")]
        for line in lines:
            if line.startswith("Error"):
                return line[:1000]
        return lines[0][:1000] if lines else ""

    def _priced(
        self, tokens: TokenUsage | None, raw: Mapping[str, Any]
    ) -> tuple[ProviderUsage, float | None]:
        model = self._model or self._warned_model
        if model in self._prices:
            pricing = self._prices[model]
        else:
            pricing = self._prices[model] = self._pricing.get(model)
        if tokens is None:
            usage = ProviderUsage(
                tokens=TokenUsage(),
                provider=PROVIDER_NAME,
                raw=raw,
                increment_known=False,
                cost_source=CostSource.UNKNOWN_MODEL
                if pricing is None
                else CostSource.NOT_REPORTED,
                model=model,
            )
            return usage, None
        if pricing is not None:
            cost: float | None = cost_usd(tokens, pricing)
            source = COST_PRICED
        else:
            cost, source = None, COST_UNKNOWN_MODEL
        # Built as ProviderUsage(...) would, cheaper than the class call: one for every usage frame.
        usage = build_provider_usage(tokens, cost, PROVIDER_NAME, raw, True, source, model)
        return usage, cost

    def _turn_usage(self) -> ProviderUsage | None:
        if self._last_report is None:
            return None
        if self._baseline_missing:
            self._notes_once(
                "usage_increment_unknown: a resumed turn without the previous usage report; "
                "codex reports thread totals, so this turn's share is unknown"
            )
        if self._reports == 1 and self._first_usage is not None:
            return self._first_usage
        tokens = None if self._baseline_missing else _increment(self._last_report, self._baseline)
        return self._priced(tokens, self._last_raw)[0]

    def _notes_once(self, note: str) -> None:
        if note not in self._notes:
            self._notes.append(note)
