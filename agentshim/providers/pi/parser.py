"""PiStreamParser: reads ``pi --print --mode json`` (JSONL) line by line.

What the frames become (docs/providers/pi.md has the full table):

- ``session`` (the header, first line): SessionStarted once, with the id rules below.
- ``message_update``: AssistantText per ``text_delta`` and Reasoning per ``thinking_delta``,
  from ``assistantMessageEvent.delta`` only (``partial`` and ``message`` repeat the whole
  message, and a ``partial`` can already hold the final text). The other updates (block
  starts and ends, tool-call argument chunks) are recognised from the line's first bytes and
  dropped without decoding.
- ``message_end`` of an assistant message: UsageReport of scope CALL (tokens and Pi's own cost); the text of
  the last one with text is the final answer; a ``stopReason`` of ``error``/``aborted`` or an
  ``errorMessage`` gives ProviderErrorReported.
- ``tool_execution_start`` / ``tool_execution_end``: ToolCall / ToolResult (``isError``).
- ``agent_start``/``agent_end``, ``turn_start``/``turn_end``, ``auto_retry_start``/``end``,
  ``compaction_start``/``end``: Lifecycle (a failed ``auto_retry_end`` also ProviderErrorReported);
  ``session_info_changed`` (a session given a name): SessionTitle.
- anything else: Lifecycle ``unknown_frame:<type>``; a line that is not a JSON object: RawOutput.

``--mode json`` exits 0 when the model API fails, so the stream decides: the turn failed when
the last assistant ``message_end`` has ``stopReason`` ``error``/``aborted`` or an
``errorMessage``, when ``auto_retry_end.success`` is false, or when the stream ends without
``agent_end``.

Session ids: a fresh turn reports the header's id. A resumed turn may name the conversation
by a prefix of its UUID (Pi resolves partial ids); when the header's id starts with the id the
turn resumed, the parser keeps the caller's id, so the resume is recognised as the same
conversation, and reports the full id as Lifecycle ``session_resolved``.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Any

from agentshim.core import lifecycle_kinds as lk
from agentshim.core._builders import build_assistant_text, build_tool_call, build_tool_result
from agentshim.core._text import clean_title
from agentshim.core.clock import Monotonic
from agentshim.core.errors import FailureKind
from agentshim.core.events import (
    AgentEvent,
    Emit,
    Lifecycle,
    ProviderErrorReported,
    Reasoning,
    SessionTitle,
    UsageReport,
    UsageScope,
)
from agentshim.core.failures import kind_from_text, truncation_notice
from agentshim.core.frames import Frame, FrameParser, LineSkip, ignore_frame
from agentshim.core.jsonvalues import as_amount, as_count, as_mapping, as_str
from agentshim.core.provider import ParserContext
from agentshim.core.stream import ToolTracker
from agentshim.core.turn import ParsedTurn
from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage, UsageKeys

from .events import content_text, failed_exit_code, structured_exit_code, tool_kind
from .failures import classify

__all__ = ["PROVIDER_NAME", "PiStreamParser", "short_session_id"]

PROVIDER_NAME = "pi"

# Events that never vary are frozen values, built once rather than for every frame.
_AGENT_STARTED = Lifecycle(lk.AGENT_STARTED, "")
_AGENT_COMPLETED = Lifecycle(lk.AGENT_COMPLETED, "")
_TURN_STARTED = Lifecycle(lk.TURN_STARTED, "")
_TURN_COMPLETED = Lifecycle(lk.TURN_COMPLETED, "")
_FAILED_STOPS = frozenset({"error", "aborted"})
_UPDATE_PREFIX = '{"type":"message_update",'
# Pi 0.73 puts the update right after the type; 1.x puts the message's running usage first.
_UPDATE_MARKER = '"assistantMessageEvent":{"type":"'
# Only text and thinking deltas carry anything; the other updates (block starts and ends,
# tool-call argument chunks) are the most frequent lines Pi prints (in 0.73 also the largest,
# each repeating the whole message twice), so they are dropped undecoded.
_DELTAS = frozenset({"text_delta", "thinking_delta"})
TRUNCATED_STOP = "length"
"""The stopReason of an answer cut off at the model's output-token limit."""
DEFERRED_STOP = "deferred"
"""The stopReason of a model call whose answer the provider delivers later (Pi 1.x)."""
_UUID = re.compile(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")


def short_session_id(session_id: str) -> str:
    """The 8-character short form of a UUID session id (its first group); other ids unchanged.

    Pi accepts it as ``--session`` (a partial UUID). Pi's ids are UUIDv7, whose first group is
    a timestamp prefix shared by every session started in the same ~65 seconds, so a short id
    can name several sessions: use it for display, or where sessions start far apart.
    """
    return session_id[:8] if _UUID.fullmatch(session_id) else session_id


_USAGE_KEYS = UsageKeys("input", "cacheRead", "cacheWrite", "output", reasoning="reasoning")
"""Where an assistant message's ``usage`` has each count. Pi's ``input`` excludes cache reads
and writes (``cacheRead``, ``cacheWrite``), which are folded in; ``reasoning`` (Pi 1.x, when
the provider reports it) is part of ``output``."""


class PiStreamParser(FrameParser):
    """Turns Pi's ``--mode json`` output into events and a ParsedTurn; never raises on input.

    A line that is not a JSON object becomes RawOutput; a frame whose shape makes no sense costs
    only that frame (RawOutput plus Lifecycle ``malformed_frame``). Exceptions raised by ``emit``
    itself (an event handler failing) propagate.

    Usage is summed over the turn's assistant messages (one per model call): Pi's ``input``
    excludes cache reads and writes, so they are folded in; its ``cost.total`` is reported as
    is (``CostSource.REPORTED``). ``short_session_ids`` makes a fresh turn report the header's
    id in its short form (:func:`short_session_id`), as the Pi runner of Untether (a public
    project that runs coding-agent CLIs) does.
    """

    def __init__(
        self, emit: Emit, *, short_session_ids: bool = False, monotonic: Monotonic = time.monotonic
    ) -> None:
        """Parse one turn, sending events to ``emit``.

        ``monotonic`` times tool calls. There is no ``expect_structured``: Pi takes no output
        schema.
        """
        self._short_ids = short_session_ids
        self._tools = ToolTracker(monotonic)
        self._requested: str | None = None
        # Whether any frame was decoded (the updates skipped undecoded only ever follow one).
        self._frames_seen = False
        self._agent_started = False
        self._agent_open = False
        self._text_streamed = False
        self._thinking_streamed = False
        self._final_text = ""
        self._last_stop: str | None = None
        self._last_error: str | None = None
        self._retry_error: str | None = None
        self._tokens: TokenUsage | None = None
        # A message_end whose usage had neither an input nor an output count.
        self._usage_unknown = False
        self._cost: float | None = None
        self._usage_raw: Mapping[str, Any] = MappingProxyType({})
        self._model: str | None = None
        self._context_tokens: int | None = None
        self._notes: list[str] = []
        handlers = MappingProxyType(
            {
                "message_update": self._on_message_update,
                "message_start": self._on_message_start,
                "message_end": self._on_message_end,
                "tool_execution_start": self._on_tool_execution_start,
                "tool_execution_update": ignore_frame,
                "tool_execution_end": self._on_tool_execution_end,
                "turn_start": self._on_turn_start,
                "turn_end": self._on_turn_end,
                "agent_start": self._on_agent_start,
                "agent_end": self._on_agent_end,
                "session": self._on_session,
                "auto_retry_start": self._on_auto_retry_start,
                "auto_retry_end": self._on_auto_retry_end,
                "compaction_start": self._on_compaction_start,
                "compaction_end": self._on_compaction_end,
                "queue_update": ignore_frame,
                "session_info_changed": self._on_session_info_changed,
                # Pi 1.x
                "agent_settled": self._on_agent_settled,
                "entry_appended": self._on_entry_appended,
                "thinking_level_changed": self._on_thinking_level_changed,
                "summarization_retry_scheduled": self._on_summarization_retry_scheduled,
                "summarization_retry_attempt_start": self._on_summarization_retry_attempt_start,
                "summarization_retry_finished": self._on_summarization_retry_finished,
                "extension_error": self._on_extension_error,
                # The output of an rpc ``bash`` command, which agentshim never sends.
                "bash_execution_update": ignore_frame,
            }
        )
        super().__init__(
            handlers,
            emit,
            skip=LineSkip(_UPDATE_PREFIX, _DELTAS, listed=False, marker=_UPDATE_MARKER),
            before=self._see_frame,
        )

    # -- the StreamParser protocol -------------------------------------------------------------

    def configure(self, context: ParserContext) -> None:
        """Learn which session the turn resumes (to recognise it under its full id)."""
        self._requested = context.requested_session_id

    def _see_frame(self, frame: Frame, out: list[AgentEvent]) -> None:
        self._frames_seen = True

    def finish(self) -> ParsedTurn:
        """Summarize the turn (see the module docstring for when it failed)."""
        error, kind = self._failure()
        usage = self._usage()
        return ParsedTurn(
            text=self._final_text,
            session_id=self._session_id,
            usage=usage,
            cost_usd=usage.total_cost_usd if usage is not None else None,
            error=error,
            error_kind=kind,
            context_tokens=self._context_tokens,
            notes=tuple(self._notes),
        )

    # -- frame handlers ------------------------------------------------------------------------

    def _on_session(self, frame: Frame, out: list[AgentEvent]) -> None:
        header_id = as_str(frame.get("id"))
        if not header_id or self._session_id is not None:
            return
        requested = self._requested
        if requested and header_id.startswith(requested):
            session_id = requested
            if header_id != requested:
                out.append(Lifecycle(lk.SESSION_RESOLVED, header_id))
        elif self._short_ids and requested is None:
            session_id = short_session_id(header_id)
        else:
            session_id = header_id
        self._start_session(session_id, out)

    def _on_agent_start(self, frame: Frame, out: list[AgentEvent]) -> None:
        self._agent_started = True
        self._agent_open = True
        out.append(_AGENT_STARTED)

    def _on_agent_end(self, frame: Frame, out: list[AgentEvent]) -> None:
        self._agent_open = False
        out.append(_AGENT_COMPLETED)

    def _on_agent_settled(self, frame: Frame, out: list[AgentEvent]) -> None:
        # Pi 1.x: nothing more of the run is coming (no retry, no recovery, no queued input).
        out.append(Lifecycle(lk.AGENT_SETTLED, "aborted" if frame.get("aborted") is True else ""))

    def _on_entry_appended(self, frame: Frame, out: list[AgentEvent]) -> None:
        # A session entry written in band (a context edit after a failed call, an extension's
        # entry): the session file's business, reported by its type only.
        entry = as_mapping(frame.get("entry"))
        kind = as_str(entry.get("type")) if entry is not None else None
        out.append(Lifecycle(lk.ENTRY_APPENDED, kind or ""))

    def _on_thinking_level_changed(self, frame: Frame, out: list[AgentEvent]) -> None:
        out.append(Lifecycle(lk.THINKING_LEVEL_CHANGED, as_str(frame.get("level")) or ""))

    def _on_summarization_retry_scheduled(self, frame: Frame, out: list[AgentEvent]) -> None:
        attempt = as_count(frame.get("attempt"))
        limit = as_count(frame.get("maxAttempts"))
        delay = as_count(frame.get("delayMs"))
        said = as_str(frame.get("errorMessage")) or ""
        detail = f"attempt {attempt} of {limit} in {delay} ms: {said}"
        out.append(Lifecycle(lk.SUMMARIZATION_RETRY, detail))

    def _on_summarization_retry_attempt_start(self, frame: Frame, out: list[AgentEvent]) -> None:
        source = as_str(frame.get("source")) or ""
        reason = as_str(frame.get("reason"))
        detail = f"{source} ({reason})" if reason else source
        out.append(Lifecycle(lk.SUMMARIZATION_RETRY_STARTED, detail))

    def _on_summarization_retry_finished(self, frame: Frame, out: list[AgentEvent]) -> None:
        out.append(Lifecycle(lk.SUMMARIZATION_RETRY_FINISHED, ""))

    def _on_extension_error(self, frame: Frame, out: list[AgentEvent]) -> None:
        # An extension's handler threw; Pi carries on, so the turn does too.
        path = as_str(frame.get("extensionPath")) or "?"
        event = as_str(frame.get("event")) or "?"
        error = as_str(frame.get("error")) or ""
        out.append(Lifecycle(lk.EXTENSION_ERROR, f"{path} ({event}): {error}"[:2000]))

    def _on_turn_start(self, frame: Frame, out: list[AgentEvent]) -> None:
        out.append(_TURN_STARTED)

    def _on_turn_end(self, frame: Frame, out: list[AgentEvent]) -> None:
        out.append(_TURN_COMPLETED)

    def _on_message_start(self, frame: Frame, out: list[AgentEvent]) -> None:
        message = as_mapping(frame.get("message"))
        if message is not None and message.get("role") == "assistant":
            self._text_streamed = False
            self._thinking_streamed = False

    def _on_message_update(self, frame: Frame, out: list[AgentEvent]) -> None:
        update = as_mapping(frame.get("assistantMessageEvent"))
        if update is None:
            return
        kind = update.get("type")
        if kind == "text_delta":
            delta = as_str(update.get("delta"))
            if delta:
                self._text_streamed = True
                out.append(build_assistant_text(delta, True))
        elif kind == "thinking_delta":
            delta = as_str(update.get("delta"))
            if delta:
                self._thinking_streamed = True
                out.append(Reasoning(delta))

    def _on_message_end(self, frame: Frame, out: list[AgentEvent]) -> None:
        message = as_mapping(frame.get("message"))
        if message is None or message.get("role") != "assistant":
            return
        self._model = as_str(message.get("model")) or self._model
        content = message.get("content")
        thinking = content_text(content, "thinking")
        if thinking and not self._thinking_streamed:
            out.append(Reasoning(thinking))
        text = content_text(content)
        if text:
            self._final_text = text
            if not self._text_streamed:
                out.append(build_assistant_text(text, False))
        self._record_usage(as_mapping(message.get("usage")), out)
        stop = as_str(message.get("stopReason"))
        error = as_str(message.get("errorMessage")) or None
        self._last_stop = stop
        self._last_error = error
        if error is not None or stop in _FAILED_STOPS:
            out.append(
                ProviderErrorReported(error or f"the model call ended with stopReason {stop!r}")
            )
        elif stop == TRUNCATED_STOP:
            note = truncation_notice(as_str(message.get("rawStopReason")) or stop)
            self._notes.append(note)
            out.append(Lifecycle(lk.OUTPUT_TRUNCATED, note))
        elif stop == DEFERRED_STOP:
            note = "the model call was deferred (stopReason 'deferred'): its answer is not here"
            self._notes.append(note)
            out.append(Lifecycle(lk.MODEL_CALL_DEFERRED, note))

    def _on_tool_execution_start(self, frame: Frame, out: list[AgentEvent]) -> None:
        tool_id = as_str(frame.get("toolCallId"))
        name = as_str(frame.get("toolName")) or "unknown"
        raw_args = frame.get("args")
        args: Mapping[str, Any] | str | None = (
            as_mapping(raw_args) if not isinstance(raw_args, str) else raw_args
        )
        if tool_id is not None:
            self._tools.start(tool_id, name, args)
        out.append(build_tool_call(tool_id, name, args, tool_kind(name)))

    def _on_tool_execution_end(self, frame: Frame, out: list[AgentEvent]) -> None:
        tool_id = as_str(frame.get("toolCallId"))
        finished = self._tools.finish(tool_id) if tool_id is not None else None
        name = as_str(frame.get("toolName")) or (finished.name if finished else "unknown")
        duration = finished.duration_s if finished is not None else None
        result = as_mapping(frame.get("result"))
        output = content_text(result.get("content")) if result is not None else ""
        kind = tool_kind(name)
        # Pi 1.x times the tool itself, and gives bash's exit code as a field.
        took = as_count(frame.get("durationMs")) if "durationMs" in frame else None
        if took is not None:
            duration = took / 1000
        if frame.get("isError") is True:
            message = output or f"the {name} tool failed"
            code = structured_exit_code(result) or failed_exit_code(name, output)
            out.append(build_tool_result(tool_id, name, "", message, code, duration, kind))
        else:
            out.append(build_tool_result(tool_id, name, output, "", 0, duration, kind))

    def _on_auto_retry_start(self, frame: Frame, out: list[AgentEvent]) -> None:
        attempt = as_count(frame.get("attempt"))
        limit = as_count(frame.get("maxAttempts"))
        delay = as_count(frame.get("delayMs"))
        said = as_str(frame.get("errorMessage")) or ""
        out.append(Lifecycle(lk.API_RETRY, f"attempt {attempt} of {limit} in {delay} ms: {said}"))

    def _on_auto_retry_end(self, frame: Frame, out: list[AgentEvent]) -> None:
        attempt = as_count(frame.get("attempt"))
        if frame.get("success") is False:
            final = as_str(frame.get("finalError")) or f"pi gave up after {attempt} retries"
            self._retry_error = final
            out.append(ProviderErrorReported(final, fatal=True))
        else:
            self._retry_error = None
            out.append(Lifecycle(lk.API_RETRY_SUCCEEDED, f"attempt {attempt}"))

    def _on_session_info_changed(self, frame: Frame, out: list[AgentEvent]) -> None:
        # Pi names the conversation in band (rpc ``set_session_name``, or the agent itself).
        title = clean_title(frame.get("name"))
        if title is not None:
            out.append(SessionTitle(title, "session_info_changed"))

    def _on_compaction_start(self, frame: Frame, out: list[AgentEvent]) -> None:
        out.append(Lifecycle(lk.COMPACTION_STARTED, as_str(frame.get("reason")) or ""))

    def _on_compaction_end(self, frame: Frame, out: list[AgentEvent]) -> None:
        reason = as_str(frame.get("reason")) or ""
        error = as_str(frame.get("errorMessage"))
        if frame.get("aborted") is True:
            reason = f"{reason} (aborted)"
        out.append(Lifecycle(lk.COMPACTION_COMPLETED, reason))
        if error:
            out.append(ProviderErrorReported(f"compaction failed: {error}"))

    # -- helpers -------------------------------------------------------------------------------

    def _record_usage(self, usage: Mapping[str, Any] | None, out: list[AgentEvent]) -> None:
        if usage is None:
            return
        counted = "input" in usage or "output" in usage
        if not counted:
            # Nothing to fold (a build with only totalTokens, say): unknown, never zero.
            self._usage_unknown = True
        tokens = _USAGE_KEYS.read(usage)
        hour_writes = as_count(usage.get("cacheWrite1h"))
        if hour_writes:
            # Pi 1.x: the part of cacheWrite kept for an hour.
            tokens = replace(
                tokens,
                cache_write_1h_input_tokens=min(hour_writes, tokens.cache_write_input_tokens),
            )
        cost_block = as_mapping(usage.get("cost"))
        cost = as_amount(cost_block.get("total")) if cost_block is not None else None
        self._tokens = tokens if self._tokens is None else self._tokens + tokens
        if cost is not None:
            self._cost = cost if self._cost is None else self._cost + cost
        self._usage_raw = MappingProxyType(dict(usage))
        if tokens.input_tokens:
            # The prompt of this model call, as TurnResult.context_tokens defines it.
            self._context_tokens = tokens.input_tokens
        report = ProviderUsage(
            tokens=tokens,
            total_cost_usd=cost,
            provider=PROVIDER_NAME,
            raw=self._usage_raw,
            increment_known=counted,
            cost_source=CostSource.REPORTED if cost is not None else CostSource.NOT_REPORTED,
            model=self._model,
        )
        out.append(UsageReport(report, cost, UsageScope.CALL))

    def _usage(self) -> ProviderUsage | None:
        if self._tokens is None:
            return None
        cost = self._cost
        return ProviderUsage(
            # One prompt is one turn, however many model calls it took.
            tokens=replace(self._tokens, turns=1),
            total_cost_usd=cost,
            provider=PROVIDER_NAME,
            raw=self._usage_raw,
            increment_known=not self._usage_unknown,
            cost_source=CostSource.REPORTED if cost is not None else CostSource.NOT_REPORTED,
            model=self._model,
        )

    def _failure(self) -> tuple[str | None, FailureKind | None]:
        if not self._frames_seen:
            said = self._stderr.first()
            if said:
                return said, kind_from_text(said) or FailureKind.OTHER
            return (
                "pi printed no events; it exited before starting the turn (see stderr)",
                FailureKind.OTHER,
            )
        if self._retry_error is not None:
            return self._retry_error, classify(self._retry_error)
        if self._last_error is not None:
            return self._last_error, classify(self._last_error)
        if self._last_stop in _FAILED_STOPS:
            return f"the model call ended with stopReason {self._last_stop!r}", FailureKind.OTHER
        if self._agent_open or not self._agent_started:
            said = self._stderr.first()
            message = "the pi stream ended before agent_end; the CLI was killed or crashed"
            if said:
                return f"{message}: {said}", kind_from_text(said) or FailureKind.OTHER
            return f"{message} (see stderr)", FailureKind.OTHER
        return None, None
