"""Anthropic Messages framing: message JSON and the message_start ... message_stop stream."""

from __future__ import annotations

from collections.abc import Iterator

from ._json import JsonObject, JsonValue
from .error_text import anthropic_error_type, error_message
from .reply import Reply, TextPart, ToolUsePart, chunks
from .responses import DEFAULT_USAGE, HttpError, SseError, Usage
from .wire import Frame, Pause, ReplyContext, SseEvent

__all__ = ["AnthropicWire"]


def _usage(usage: Usage, *, output: int | None = None) -> JsonObject:
    return {
        "input_tokens": usage.uncached_input,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
        "output_tokens": usage.output if output is None else output,
    }


def _event(data: JsonObject) -> SseEvent:
    return SseEvent(data=data, name=str(data["type"]))


class AnthropicWire:
    """Renders replies and errors as the Anthropic Messages API does."""

    def _message(self, reply: Reply | None, ctx: ReplyContext, *, final: bool) -> JsonObject:
        content: list[JsonValue] = []
        stop_reason: str | None = None
        usage = Usage() if reply is None else reply.usage
        if final and reply is not None:
            for part in reply.parts:
                if isinstance(part, TextPart):
                    content.append({"type": "text", "text": part.text})
                else:
                    content.append(
                        {
                            "type": "tool_use",
                            "id": part.call_id,
                            "name": part.name,
                            "input": dict(part.arguments),
                        }
                    )
            stop_reason = "tool_use" if reply.calls_tools else "end_turn"
        return {
            "id": f"msg_{ctx.request_id}",
            "type": "message",
            "role": "assistant",
            "model": ctx.model,
            "content": content,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            # message_start reports the prompt and a first output token, as the API does.
            "usage": _usage(usage, output=None if final else min(1, usage.output)),
        }

    def reply_body(self, reply: Reply, ctx: ReplyContext) -> JsonValue:
        """The Messages API response object."""
        return self._message(reply, ctx, final=True)

    def _start(self, reply: Reply | None, ctx: ReplyContext) -> Iterator[Frame]:
        yield _event({"type": "message_start", "message": self._message(reply, ctx, final=False)})
        yield _event({"type": "ping"})

    def _text_block(self, index: int, part: TextPart, *, close: bool = True) -> Iterator[Frame]:
        yield _event(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {"type": "text", "text": ""},
            }
        )
        for piece in chunks(part.text, part.chunk_size):
            if part.delay:
                yield Pause(part.delay)
            yield _event(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "text_delta", "text": piece},
                }
            )
        if close:
            yield _event({"type": "content_block_stop", "index": index})

    def _tool_block(self, index: int, part: ToolUsePart) -> Iterator[Frame]:
        yield _event(
            {
                "type": "content_block_start",
                "index": index,
                "content_block": {
                    "type": "tool_use",
                    "id": part.call_id,
                    "name": part.name,
                    "input": {},
                },
            }
        )
        for piece in chunks(part.arguments_json, part.chunk_size):
            yield _event(
                {
                    "type": "content_block_delta",
                    "index": index,
                    "delta": {"type": "input_json_delta", "partial_json": piece},
                }
            )
        yield _event({"type": "content_block_stop", "index": index})

    def reply_stream(self, reply: Reply, ctx: ReplyContext) -> Iterator[Frame]:
        """message_start, one block per part with its deltas, message_delta, message_stop."""
        yield from self._start(reply, ctx)
        for index, part in enumerate(reply.parts):
            if isinstance(part, TextPart):
                yield from self._text_block(index, part)
            else:
                yield from self._tool_block(index, part)
        yield _event(
            {
                "type": "message_delta",
                "delta": {
                    "stop_reason": "tool_use" if reply.calls_tools else "end_turn",
                    "stop_sequence": None,
                },
                "usage": _usage(reply.usage),
            }
        )
        yield _event({"type": "message_stop"})

    def partial_stream(self, text: str, ctx: ReplyContext) -> Iterator[Frame]:
        """message_start and an open text block holding ``text``."""
        yield from self._start(None, ctx)
        if text:
            yield from self._text_block(0, TextPart(text), close=False)

    def stream_error(self, error: SseError, ctx: ReplyContext) -> Iterator[Frame]:
        """An ``event: error`` with the API's error object."""
        payload = error.payload
        if payload is None:
            payload = {
                "type": "error",
                "error": {
                    "type": error.error_type or "overloaded_error",
                    "message": error.message,
                },
            }
        yield SseEvent(data=payload, name="error")

    def error_body(self, error: HttpError, ctx: ReplyContext) -> JsonObject:
        """``{"type": "error", "error": {"type", "message"}, "request_id"}``."""
        message = error_message(
            error,
            overflow="prompt is too long: 250000 tokens > 200000 maximum",
            bad_key="invalid x-api-key",
        )
        return {
            "type": "error",
            "error": {"type": anthropic_error_type(error.status), "message": message},
            "request_id": f"req_{ctx.request_id}",
        }

    def count_tokens_body(self, ctx: ReplyContext) -> JsonObject:
        """``{"input_tokens": N}`` from the default usage."""
        return {"input_tokens": DEFAULT_USAGE.input}
