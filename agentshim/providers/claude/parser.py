"""ClaudeStreamParser: reads ``claude -p --output-format stream-json --verbose`` line by line.

Frames and what they become (see docs/providers/claude.md for the full table):

- ``system`` (``init``, ``api_retry``, ``status``, others): SessionStarted once, Lifecycle.
- ``assistant``: AssistantText / Reasoning / ToolCall (+ Plan for ``TodoWrite``) per content
  block. Text of subagent frames (``parent_tool_use_id`` set) becomes Lifecycle
  ``subagent_text``, never AssistantText and never part of the final text. A synthetic error
  message (the frame's ``error`` field) becomes Lifecycle ``api_error``.
- ``user``: one ToolResult per ``tool_result`` block (every block, not only the first).
- ``rate_limit_event``: Lifecycle ``rate_limit``.
- ``result``: the terminal frame: final text, usage, cost, structured output, success or
  failure; UsageReport, and ProviderErrorReported when it failed.
- ``stream_event`` (partial-message deltas): ignored, the whole message follows anyway.
- anything else: Lifecycle ``unknown_frame:<type>``; a line that is not a JSON object: RawOutput
  (both from :class:`agentshim.core.frames.FrameDispatcher`).
"""

from __future__ import annotations

import json
import math
import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any, NamedTuple

from agentshim.core import lifecycle_kinds as lk
from agentshim.core._builders import (
    build_assistant_text,
    build_lifecycle,
    build_provider_usage,
    build_token_usage,
    build_tool_call,
    build_tool_result,
    build_usage_report,
)
from agentshim.core._enum_members import COST_NOT_REPORTED, COST_REPORTED, SCOPE_CALL, SCOPE_TURN
from agentshim.core.clock import Monotonic
from agentshim.core.errors import FailureKind
from agentshim.core.events import (
    AgentEvent,
    BackgroundTask,
    BackgroundTasksChanged,
    Emit,
    Lifecycle,
    ProviderErrorReported,
    Reasoning,
    SessionStarted,
)
from agentshim.core.failures import kind_from_text, truncation_notice
from agentshim.core.frames import Frame, FrameParser, ignore_frame
from agentshim.core.jsonvalues import as_amount, as_count, as_mapping, as_str, list_or_empty
from agentshim.core.pricing import PricingTable
from agentshim.core.provider import ParserContext
from agentshim.core.stream import ToolTracker
from agentshim.core.turn import ParsedTurn
from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage, UsageKeys

from .events import (
    STRUCTURED_OUTPUT_TOOL,
    TODO_TOOL,
    failed_exit_code,
    plan_from_todos,
    tool_kind,
    tool_result_text,
)
from .failures import SCHEMA_RETRIES_SUBTYPE, StreamFailure
from .failures import classify as classify_stream_failure
from .model_data import PRICING_TABLE

__all__ = ["PROVIDER_NAME", "ClaudeStreamParser"]

PROVIDER_NAME = "claude"
SYNTHETIC_MODEL = "<synthetic>"
"""The model name Claude Code gives the assistant message it makes up to report an API error."""

_DETAIL_CHARS = 2000
_ANSWER_CHARS = 300


_TRUNCATED_STOP = "max_tokens"
"""The result's ``stop_reason`` when the answer was cut off at the output-token limit."""


class _Terminal(NamedTuple):
    """What the last ``result`` frame said."""

    text: str
    structured: Any
    usage: ProviderUsage | None
    cost: float | None
    error: str | None
    kind: FailureKind | None
    stream_said: bool


_MODEL_USAGE_KEYS = UsageKeys(
    "inputTokens", "cacheReadInputTokens", "cacheCreationInputTokens", "outputTokens"
)
"""Where a ``result`` frame's ``modelUsage`` entry has each count (cache apart from input)."""


class ClaudeStreamParser(FrameParser):
    """Turns Claude Code's stream-json output into events and a ParsedTurn.

    Never raises on input: a line that is not a JSON object becomes RawOutput, a frame whose
    shape makes no sense costs only that frame (RawOutput plus Lifecycle ``malformed_frame``).
    Exceptions raised by ``emit`` itself (an event handler failing) do propagate.

    With ``expect_structured`` the result's ``structured_output`` is the payload; when the
    field is absent the result text is decoded as JSON (older builds put it there), and prose
    is never forced into a payload: a schema turn without one fails with FailureKind.SCHEMA.
    """

    def __init__(
        self,
        emit: Emit,
        *,
        expect_structured: bool = False,
        pricing: PricingTable = PRICING_TABLE,
        monotonic: Monotonic = time.monotonic,
    ) -> None:
        """Parse one turn, sending events to ``emit``; ``pricing`` prices unreported costs."""
        self._expect_structured = expect_structured
        self._pricing = pricing
        self._tools = ToolTracker(monotonic)
        self._session_id: str | None = None
        self._model: str | None = None
        self._requested_model: str | None = None
        self._texts: list[str] = []
        self._context_usage: Mapping[str, Any] | None = None
        self._call_id: object = None
        self._context_window: int | None = None
        self._background: tuple[BackgroundTask, ...] = ()
        self._assistant_error: str | None = None
        self._assistant_error_text = ""
        self._rate_limit_rejected = False
        self._schema_rejection: str | None = None
        self._terminal: _Terminal | None = None
        # The notice of a result whose answer hit the output-token limit (stop_reason).
        self._truncated: str | None = None
        handlers = {
            "assistant": self._on_assistant,
            "user": self._on_user,
            "system": self._on_system,
            "result": self._on_result,
            "stream_event": ignore_frame,
            "rate_limit_event": self._on_rate_limit_event,
            "control_response": self._on_control,
            "control_request": self._on_control,
        }
        super().__init__(handlers, emit)

    # -- the StreamParser protocol -------------------------------------------------------------

    def configure(self, context: ParserContext) -> None:
        """Take the requested model, used to price a turn only when the stream names none."""
        self._requested_model = context.model

    def finish(self) -> ParsedTurn:
        """Summarize the turn; a stream without a result frame is a failure (kind OTHER)."""
        terminal = self._terminal
        if terminal is None:
            text = "\n".join(self._texts)
            turn = ParsedTurn(
                text, error=self._early_end_error(), error_kind=self._early_end_kind()
            )
        else:
            kind = terminal.kind
            if terminal.error is not None and not terminal.stream_said:
                kind = self._stderr_kind() or kind
            turn = ParsedTurn(
                terminal.text,
                terminal.structured,
                usage=terminal.usage,
                cost_usd=terminal.cost,
                error=terminal.error,
                error_kind=kind,
            )
        # What the whole stream said, whether it reached its result or not.
        return replace(
            turn,
            session_id=self._session_id,
            context_tokens=self._context_tokens(),
            context_window=self._context_window,
            background_tasks=self._background,
            notes=(self._truncated,) if self._truncated is not None else (),
        )

    # -- frame handlers ------------------------------------------------------------------------

    def _see_session(self, frame: Frame, out: list[AgentEvent]) -> None:
        session_id = frame.get("session_id")
        if type(session_id) is str and session_id and session_id != self._session_id:
            self._session_id = session_id
            out.append(SessionStarted(session_id))

    def _on_system(self, frame: Frame, out: list[AgentEvent]) -> None:
        if frame.get("session_id") != self._session_id:
            self._see_session(frame, out)
        subtype = frame.get("subtype")
        if subtype == "init":
            # Once per turn, but a long frame: as_str inlined.
            model: Any = frame.get("model")
            if model.__class__ is not str:
                model = None
            elif model:
                self._model = model
            version: Any = frame.get("claude_code_version")
            if not version or version.__class__ is not str:
                version = "?"
            detail = f"model={model or '?'} claude_code_version={version}"
            out.append(build_lifecycle(lk.INIT, detail))
        elif subtype == "api_retry":
            out.append(Lifecycle(lk.API_RETRY, _retry_detail(frame)))
        elif subtype == "status":
            out.append(Lifecycle(lk.STATUS, as_str(frame.get("status")) or ""))
        elif subtype == "background_tasks_changed":
            tasks = tuple(_background_tasks(frame.get("tasks")))
            self._background = tasks
            out.append(BackgroundTasksChanged(tasks))
        else:
            out.append(Lifecycle(lk.system(as_str(subtype) or "?"), ""))

    def _on_assistant(self, frame: Frame, out: list[AgentEvent]) -> None:
        # The hottest handler: several frames per message, so type checks are inlined.
        if frame.get("session_id") != self._session_id:
            self._see_session(frame, out)
        # Checked with __class__ so the values stay typed as Any (JSON) for the checker.
        message: Any = frame.get("message")
        if message.__class__ is not dict:
            raise TypeError("an assistant frame without a message object")
        main = frame.get("parent_tool_use_id") is None
        error: Any = frame.get("error")
        if error is not None and error.__class__ is not str:  # usually absent: one test
            error = None
        if main:
            if error is not None:
                self._assistant_error = error
            model = message.get("model")
            if model != SYNTHETIC_MODEL:
                if model and model.__class__ is str:
                    self._model = model
                usage: Any = message.get("usage")
                if usage.__class__ is dict:
                    self._context_usage = usage
                    # Every content block of a message comes in a frame of its own, each
                    # with the message's usage: one call report per message id.
                    call_id = message.get("id")
                    if call_id != self._call_id or call_id is None:
                        self._call_id = call_id
                        self._report_call(usage, out)
        blocks: Any = message.get("content")
        if blocks.__class__ is not list:
            return
        block: Any
        for block in blocks:
            if block.__class__ is not dict:
                continue
            block_type = block.get("type")
            if block_type == "text":
                text: Any = block.get("text")
                if not text or text.__class__ is not str:
                    continue
                if error is not None:
                    if main:
                        self._assistant_error_text = text
                    out.append(Lifecycle(lk.API_ERROR, f"{error}: {text}"))
                elif main:
                    self._texts.append(text)
                    out.append(build_assistant_text(text, False))
                else:
                    out.append(Lifecycle(lk.SUBAGENT_TEXT, text))
            elif block_type == "tool_use" or block_type == "server_tool_use":
                self._tool_use_block(block, out)
            elif block_type == "thinking":
                thinking = as_str(block.get("thinking"))
                if thinking:
                    out.append(Reasoning(thinking))
            elif block_type != "redacted_thinking":
                out.append(Lifecycle(lk.unknown_block(as_str(block_type) or "?"), ""))

    def _report_call(self, usage: Mapping[str, Any], out: list[AgentEvent]) -> None:
        tokens = _fold_usage(usage, 0)
        if tokens.input_tokens + tokens.output_tokens == 0:
            return
        # The builders make the values the classes would, cheaper than the class calls (see
        # core/_builders.py): three of them for every model call.
        report = build_provider_usage(
            tokens, None, PROVIDER_NAME, usage, True, COST_NOT_REPORTED, self._model
        )
        out.append(build_usage_report(report, None, SCOPE_CALL, None))

    def _tool_use_block(self, block: Mapping[str, Any], out: list[AgentEvent]) -> None:
        # Once per tool call: type checks inlined, as in _on_assistant.
        tool_id: Any = block.get("id")
        if tool_id.__class__ is not str:
            tool_id = None
        name: Any = block.get("name")
        if not name or name.__class__ is not str:
            name = "unknown"
        raw_input: Any = block.get("input")
        args: Mapping[str, Any] | None = raw_input if raw_input.__class__ is dict else None
        shown: Mapping[str, Any] | str | None = args if args is not None else as_str(raw_input)
        if tool_id is not None:
            self._tools.start(tool_id, name, shown)
        out.append(build_tool_call(tool_id, name, shown, tool_kind(name)))
        if name == TODO_TOOL and args is not None:
            plan = plan_from_todos(args, tool_id)
            if plan is not None:
                out.append(plan)

    def _on_user(self, frame: Frame, out: list[AgentEvent]) -> None:
        if frame.get("session_id") != self._session_id:
            self._see_session(frame, out)
        message: Any = frame.get("message")
        if message.__class__ is not dict:
            return
        content: Any = message.get("content")
        if content.__class__ is str:
            out.append(Lifecycle(lk.USER_MESSAGE, content))
            return
        if content.__class__ is not list:
            return
        block: Any
        for block in content:
            block_type = block.get("type") if block.__class__ is dict else None
            if block_type == "tool_result":
                self._tool_result_block(block, out)
            elif block_type == "text":
                synthetic = frame.get("isSynthetic") is True
                kind = lk.SYNTHETIC_USER_MESSAGE if synthetic else lk.USER_MESSAGE
                out.append(Lifecycle(kind, as_str(block.get("text")) or ""))

    def _tool_result_block(self, block: Mapping[str, Any], out: list[AgentEvent]) -> None:
        tool_id: Any = block.get("tool_use_id")
        if tool_id.__class__ is not str:
            tool_id = None
        finished = self._tools.finish(tool_id) if tool_id is not None else None
        name, duration = ("unknown", None) if finished is None else (finished[0], finished[2])
        content: Any = block.get("content")
        # Text is the usual content: taken as it is, without a call.
        text = content if content.__class__ is str else tool_result_text(content)
        kind = tool_kind(name)
        if block.get("is_error") is True:
            if name == STRUCTURED_OUTPUT_TOOL:
                self._schema_rejection = text
            code = failed_exit_code(name, text)
            out.append(build_tool_result(tool_id, name, "", text, code, duration, kind))
        else:
            out.append(build_tool_result(tool_id, name, text, "", 0, duration, kind))

    def _on_rate_limit_event(self, frame: Frame, out: list[AgentEvent]) -> None:
        info = as_mapping(frame.get("rate_limit_info")) or {}
        status = as_str(info.get("status")) or ""
        if status == "rejected":
            self._rate_limit_rejected = True
        limit_type = as_str(info.get("rateLimitType")) or ""
        out.append(Lifecycle(lk.RATE_LIMIT, f"{status} {limit_type}".strip()))

    def _on_control(self, frame: Frame, out: list[AgentEvent]) -> None:
        body = as_mapping(frame.get("response")) or as_mapping(frame.get("request")) or {}
        kind = lk.CONTROL_RESPONSE if frame["type"] == "control_response" else lk.CONTROL_REQUEST
        out.append(Lifecycle(kind, as_str(body.get("subtype")) or ""))

    def _on_result(self, frame: Frame, out: list[AgentEvent]) -> None:
        session_id = frame.get("session_id")
        if session_id and session_id != self._session_id:
            self._see_session(frame, out)
        # Once per turn, but a long frame: the as_str/as_mapping reads are inlined.
        subtype: Any = frame.get("subtype")
        if subtype.__class__ is not str:
            subtype = None
        result_text: Any = frame.get("result")
        if result_text.__class__ is not str:
            result_text = None
        text = result_text if result_text is not None else "\n".join(self._texts)
        model_usage: Any = frame.get("modelUsage")
        if model_usage.__class__ is not dict:
            model_usage = None
        usage = self._usage(frame, model_usage)
        if usage is not None:
            duration = frame.get("duration_ms")
            duration_ms = duration if type(duration) is int and duration >= 0 else None
            out.append(build_usage_report(usage, usage.total_cost_usd, SCOPE_TURN, duration_ms))
        self._context_window = _reported_window(model_usage, self._model)
        denials = frame.get("permission_denials")
        if denials:
            for denial in list_or_empty(denials):
                entry = as_mapping(denial) or {}
                out.append(Lifecycle(lk.PERMISSION_DENIED, as_str(entry.get("tool_name")) or "?"))

        structured: Any = None
        if self._expect_structured:
            structured = frame.get("structured_output")
            if structured is None and result_text is not None:
                structured = _decode_payload(result_text)
        failed = frame.get("is_error") is True or (
            subtype is not None and subtype.startswith("error")
        )
        error: str | None = None
        kind: FailureKind | None = None
        stream_said = True
        if failed:
            error, kind, stream_said = self._result_failure(frame, subtype, result_text)
            structured = None
        elif self._expect_structured and structured is None:
            error = (
                "an output schema was requested but Claude Code's result carries no structured "
                "output (the model never called its StructuredOutput tool)"
            )
            if result_text:
                error += f"; it answered instead: {result_text[:_ANSWER_CHARS]!r}"
            kind = FailureKind.SCHEMA
        if error is not None:
            out.append(ProviderErrorReported(error, fatal=True))
        self._truncated = None
        if not failed and frame.get("stop_reason") == _TRUNCATED_STOP:
            self._truncated = truncation_notice(_TRUNCATED_STOP)
            out.append(Lifecycle(lk.OUTPUT_TRUNCATED, self._truncated))
        cost = usage.total_cost_usd if usage is not None else None
        # The same _Terminal, made by tuple.__new__ without the NamedTuple's Python-level
        # __new__ (half the cost).
        parts = (text, structured, usage, cost, error, kind, stream_said)
        self._terminal = tuple.__new__(_Terminal, parts)  # pyright: ignore[reportUnknownMemberType]
        # A later turn on the same stream (stream-json input) starts from a clean slate.
        self._texts = []
        self._assistant_error = None
        self._assistant_error_text = ""
        self._schema_rejection = None

    def _result_failure(
        self, frame: Frame, subtype: str | None, result_text: str | None
    ) -> tuple[str, FailureKind, bool]:
        """A failed result's error, its kind, and whether the stream said why."""
        errors = [e for e in list_or_empty(frame.get("errors")) if isinstance(e, str) and e]
        said = " ".join(part for part in (result_text, *errors) if part)
        stream_said = bool(said) or self._assistant_error is not None
        if subtype == SCHEMA_RETRIES_SUBTYPE and self._schema_rejection:
            error = self._schema_rejection
        else:
            error = said or f"Claude Code reported {subtype or 'an error'} without a message"
        kind = classify_stream_failure(
            StreamFailure(
                text=said,
                subtype=subtype,
                terminal_reason=as_str(frame.get("terminal_reason")),
                api_error_status=_status(frame.get("api_error_status")),
                assistant_error=self._assistant_error,
                rate_limit_rejected=self._rate_limit_rejected,
            )
        )
        return error, kind, stream_said

    # -- helpers -------------------------------------------------------------------------------

    def _usage(
        self, frame: Frame, reported_models: Mapping[str, Any] | None
    ) -> ProviderUsage | None:
        raw: Any = frame.get("usage")
        if raw.__class__ is not dict:
            raw = None
        cost_field: Any = frame.get("total_cost_usd")
        reported: float | None = cost_field
        if cost_field.__class__ is not float:  # a float is the usual case, read without a call
            reported = as_amount(cost_field)
        elif not 0 <= cost_field < math.inf:  # as as_amount: NaN, infinities, negatives
            reported = None
        if raw is None and reported is None:
            return None
        # A build that does not count round trips made at least one: 1, as other CLIs report.
        num_turns = frame.get("num_turns", 1)
        tokens = _fold_usage(raw or {}, num_turns)
        model_usage: Mapping[str, Any] = reported_models or {}
        model = next(iter(model_usage), None) or self._model or self._requested_model
        if reported is not None:
            cost: float | None = reported
            source = COST_REPORTED
        else:
            cost, source = self._price(model_usage, tokens, model)
        # A usage with neither an input nor an output count holds nothing to fold.
        known = raw is not None and ("input_tokens" in raw or "output_tokens" in raw)
        # In field order (tokens, cost, provider, raw, increment_known, cost_source, model):
        # building a class with keywords costs a dict per call on CPython.
        return build_provider_usage(tokens, cost, PROVIDER_NAME, raw or {}, known, source, model)

    def _price(
        self, model_usage: Mapping[str, Any], tokens: TokenUsage, model: str | None
    ) -> tuple[float | None, CostSource]:
        if model_usage:
            total = 0.0
            priced_any = False
            for name, entry in model_usage.items():
                counts = as_mapping(entry)
                if counts is None:
                    continue
                per_model = _MODEL_USAGE_KEYS.read(counts)
                if per_model.total_tokens == 0:
                    continue
                cost = self._pricing.cost(name, per_model)
                if cost is None:
                    return None, CostSource.UNKNOWN_MODEL
                total += cost
                priced_any = True
            if priced_any:
                return total, CostSource.PRICED
        if tokens.total_tokens == 0:
            return None, CostSource.NOT_REPORTED
        cost = self._pricing.cost(model, tokens)
        if cost is None:
            return None, CostSource.UNKNOWN_MODEL
        return cost, CostSource.PRICED

    def _context_tokens(self) -> int | None:
        usage = self._context_usage
        if usage is None:
            return None
        return (
            as_count(usage.get("input_tokens"))
            + as_count(usage.get("cache_read_input_tokens"))
            + as_count(usage.get("cache_creation_input_tokens"))
        )

    def _stderr_kind(self) -> FailureKind | None:
        return kind_from_text(self._stderr.text()) if self._stderr else None

    def _early_end_kind(self) -> FailureKind:
        # What the synthetic assistant message said comes first, as on the result frame's
        # path; stderr only when the stream said nothing classifiable.
        if self._assistant_error is not None:
            kind = classify_stream_failure(
                StreamFailure(
                    text=self._assistant_error_text,
                    assistant_error=self._assistant_error,
                    rate_limit_rejected=self._rate_limit_rejected,
                )
            )
            if kind is not FailureKind.OTHER:
                return kind
        return self._stderr_kind() or FailureKind.OTHER

    def _early_end_error(self) -> str:
        message = "the Claude Code stream ended before the result frame"
        if self._assistant_error is not None:
            text = self._assistant_error_text[:_DETAIL_CHARS]
            said = f"{self._assistant_error}: {text}" if text else self._assistant_error
            message = f"{message}; the last assistant message reported {said}"
        if self._stderr:
            return f"{message}; stderr: {self._stderr.last()[:_DETAIL_CHARS]}"
        return f"{message} (the process died or was killed mid-turn)"


def _fold_usage(usage: Mapping[str, Any], num_turns: object) -> TokenUsage:
    """Fold Claude's disjoint counts into the normalized breakdown (cache tokens into input)."""
    get = usage.get
    uncached: Any = get("input_tokens")
    read: Any = get("cache_read_input_tokens")
    write: Any = get("cache_creation_input_tokens")
    output: Any = get("output_tokens")
    # Non-negative ints (the usual counts) are taken as they are, in one test; anything else
    # through as_count, which gives the same for such an int.
    if not (
        uncached.__class__ is int
        and read.__class__ is int
        and write.__class__ is int
        and output.__class__ is int
        and uncached >= 0
        and read >= 0
        and write >= 0
        and output >= 0
    ):
        uncached, read, write = as_count(uncached), as_count(read), as_count(write)
        output = as_count(output)
    creation: Any = get("cache_creation")
    write_1h = 0
    if creation.__class__ is dict and creation:
        write_1h = creation.get("ephemeral_1h_input_tokens")
        write_1h = write_1h if type(write_1h) is int and write_1h >= 0 else as_count(write_1h)
        write_1h = write_1h if write_1h < write else write  # min(), without a call
    turns = num_turns if type(num_turns) is int and num_turns >= 0 else as_count(num_turns)
    # Valid by construction (non-negative ints, cache within input, 1h writes within writes):
    # built unchecked, in field order (input, cache read, cache write, 1h write, output,
    # reasoning, turns).
    return build_token_usage(uncached + read + write, read, write, write_1h, output, 0, turns)


def _background_tasks(value: object) -> list[BackgroundTask]:
    """The tasks of a ``background_tasks_changed`` frame (the Agent SDK's ``tasks`` entries)."""
    tasks: list[BackgroundTask] = []
    for entry in list_or_empty(value):
        task = as_mapping(entry)
        task_id = as_str(task.get("task_id")) if task is not None else None
        if task is None or not task_id:
            continue
        kind = as_str(task.get("task_type")) or ""
        tasks.append(BackgroundTask(task_id, kind, as_str(task.get("description")) or ""))
    return tasks


def _reported_window(model_usage: Mapping[str, Any] | None, model: str | None) -> int | None:
    """The ``contextWindow`` a result's ``modelUsage`` reports for ``model`` (or its only one)."""
    if not model_usage:
        return None
    entry: Any = model_usage.get(model) if model is not None else None
    if entry is None and len(model_usage) == 1:
        entry = next(iter(model_usage.values()))
    counts: Any = entry
    window = counts.get("contextWindow") if counts.__class__ is dict else None
    return window if type(window) is int and window > 0 else None


def _decode_payload(text: str) -> Any:
    stripped = text.strip()
    if stripped[:1] not in ("{", "["):
        return None
    try:
        value: Any = json.loads(stripped)
    except (ValueError, RecursionError):
        return None
    if isinstance(value, (dict, list)):
        return value  # pyright: ignore[reportUnknownVariableType]
    return None


def _finite(value: object) -> bool:
    return type(value) in (int, float) and math.isfinite(value)  # pyright: ignore[reportArgumentType]


def _status(value: object) -> int | None:
    if type(value) is int and 100 <= value <= 599:
        return value
    return None


def _retry_detail(frame: Frame) -> str:
    attempt = frame.get("attempt")
    limit = frame.get("max_retries")
    status = frame.get("error_status")
    error = as_str(frame.get("error")) or ""
    delay = frame.get("retry_delay_ms")
    wait = f", retrying in {delay:.0f} ms" if _finite(delay) else ""
    return f"attempt {attempt}/{limit}: {status} {error}{wait}".strip()
