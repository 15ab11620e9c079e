"""OpenAI Chat Completions framing: ``chat.completion`` JSON and ``chat.completion.chunk`` SSE."""

from __future__ import annotations

from collections.abc import Iterator

from ._json import JsonObject, JsonValue
from .reply import Reply, TextPart, ToolUsePart, chunks
from .responses import DEFAULT_USAGE, HttpError, SseError, Usage
from .wire import Frame, Pause, ReplyContext, SseEvent
from .wire_responses import openai_error_body

__all__ = ["ChatWire"]


def _usage(usage: Usage) -> JsonObject:
    return {
        "prompt_tokens": usage.input,
        "completion_tokens": usage.output,
        "total_tokens": usage.input + usage.output,
        "prompt_tokens_details": {"cached_tokens": usage.cache_read},
        "completion_tokens_details": {"reasoning_tokens": usage.reasoning},
    }


def _chunk_event(ctx: ReplyContext, fields: JsonObject) -> SseEvent:
    """A ``chat.completion.chunk`` event of the reply ``ctx`` describes, carrying ``fields``."""
    return SseEvent(
        data={
            "id": f"chatcmpl-{ctx.request_id}",
            "object": "chat.completion.chunk",
            "created": ctx.created,
            "model": ctx.model,
            **fields,
        }
    )


class ChatWire:
    """Renders replies and errors as the OpenAI Chat Completions API does."""

    def _chunk(
        self,
        ctx: ReplyContext,
        delta: JsonObject,
        finish_reason: str | None = None,
    ) -> SseEvent:
        choice: JsonObject = {"index": 0, "delta": delta, "finish_reason": finish_reason}
        return _chunk_event(ctx, {"choices": [choice]})

    def reply_body(self, reply: Reply, ctx: ReplyContext) -> JsonValue:
        """The ``chat.completion`` object with message, tool calls and usage."""
        calls: list[JsonValue] = [
            {
                "id": part.call_id,
                "type": "function",
                "function": {"name": part.name, "arguments": part.arguments_json},
            }
            for part in reply.parts
            if isinstance(part, ToolUsePart)
        ]
        message: JsonObject = {"role": "assistant", "content": reply.text or None}
        if calls:
            message["tool_calls"] = calls
        return {
            "id": f"chatcmpl-{ctx.request_id}",
            "object": "chat.completion",
            "created": ctx.created,
            "model": ctx.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": "tool_calls" if calls else "stop",
                }
            ],
            "usage": _usage(reply.usage),
        }

    def _text_chunks(self, ctx: ReplyContext, part: TextPart) -> Iterator[Frame]:
        for piece in chunks(part.text, part.chunk_size):
            if part.delay:
                yield Pause(part.delay)
            yield self._chunk(ctx, {"content": piece})

    def reply_stream(self, reply: Reply, ctx: ReplyContext) -> Iterator[Frame]:
        """Role chunk, content and tool-call deltas, finish chunk, usage chunk, ``[DONE]``."""
        yield self._chunk(ctx, {"role": "assistant", "content": ""})
        call_index = 0
        for part in reply.parts:
            if isinstance(part, TextPart):
                yield from self._text_chunks(ctx, part)
                continue
            opening: JsonObject = {
                "index": call_index,
                "id": part.call_id,
                "type": "function",
                "function": {"name": part.name, "arguments": ""},
            }
            yield self._chunk(ctx, {"tool_calls": [opening]})
            for piece in chunks(part.arguments_json, part.chunk_size):
                argument_delta: JsonObject = {
                    "index": call_index,
                    "function": {"arguments": piece},
                }
                yield self._chunk(ctx, {"tool_calls": [argument_delta]})
            call_index += 1
        yield self._chunk(ctx, {}, "tool_calls" if reply.calls_tools else "stop")
        if ctx.facts.include_usage:
            yield _chunk_event(ctx, {"choices": [], "usage": _usage(reply.usage)})
        yield SseEvent(data="[DONE]", raw=True)

    def partial_stream(self, text: str, ctx: ReplyContext) -> Iterator[Frame]:
        """The role chunk and content deltas of ``text``, without a finish."""
        yield self._chunk(ctx, {"role": "assistant", "content": ""})
        yield from self._text_chunks(ctx, TextPart(text))

    def stream_error(self, error: SseError, ctx: ReplyContext) -> Iterator[Frame]:
        """A ``data: {"error": {...}}`` event, as OpenAI-compatible servers send mid-stream."""
        payload = error.payload
        if payload is None:
            payload = {
                "error": {
                    "message": error.message,
                    "type": error.error_type or "server_error",
                    "param": None,
                    "code": error.error_type,
                }
            }
        yield SseEvent(data=payload)

    def error_body(self, error: HttpError, ctx: ReplyContext) -> JsonObject:
        """The OpenAI error object."""
        return openai_error_body(error)

    def count_tokens_body(self, ctx: ReplyContext) -> JsonObject:
        """Chat Completions has no token-count endpoint; answer with the default input count."""
        return {"input_tokens": DEFAULT_USAGE.input}
