"""Gemini framing: ``GenerateContentResponse`` JSON, its SSE chunks, and ``countTokens``."""

from __future__ import annotations

from collections.abc import Iterator

from ._json import JsonObject, JsonValue
from .error_text import error_message, gemini_status
from .reply import Reply, TextPart, ToolUsePart, chunks
from .responses import DEFAULT_USAGE, HttpError, SseError, Usage
from .wire import Frame, Pause, ReplyContext, SseEvent

__all__ = ["GeminiWire"]


def _usage(usage: Usage) -> JsonObject:
    return {
        "promptTokenCount": usage.input,
        "cachedContentTokenCount": usage.cache_read,
        "candidatesTokenCount": usage.output - usage.reasoning,
        "thoughtsTokenCount": usage.reasoning,
        "totalTokenCount": usage.input + usage.output,
    }


def _part(part: TextPart | ToolUsePart) -> JsonObject:
    if isinstance(part, TextPart):
        return {"text": part.text}
    return {"functionCall": {"name": part.name, "args": dict(part.arguments)}}


class GeminiWire:
    """Renders replies and errors as the Gemini API does."""

    def _chunk(
        self,
        ctx: ReplyContext,
        parts: list[JsonValue],
        *,
        usage: Usage | None = None,
    ) -> JsonObject:
        candidate: JsonObject = {"content": {"role": "model", "parts": parts}, "index": 0}
        chunk: JsonObject = {"candidates": [candidate]}
        if usage is not None:
            candidate["finishReason"] = "STOP"
            chunk["usageMetadata"] = _usage(usage)
        chunk["modelVersion"] = ctx.model
        chunk["responseId"] = f"resp_{ctx.request_id}"
        return chunk

    def reply_body(self, reply: Reply, ctx: ReplyContext) -> JsonValue:
        """One response with every part, ``finishReason`` and ``usageMetadata``."""
        parts: list[JsonValue] = [_part(part) for part in reply.parts]
        return self._chunk(ctx, parts or [{"text": ""}], usage=reply.usage)

    def _pieces(self, reply: Reply) -> Iterator[tuple[float, JsonObject]]:
        for part in reply.parts:
            if isinstance(part, ToolUsePart):
                yield 0.0, _part(part)
                continue
            for piece in chunks(part.text, part.chunk_size):
                yield part.delay, {"text": piece}

    def reply_stream(self, reply: Reply, ctx: ReplyContext) -> Iterator[Frame]:
        """One chunk per text delta or function call; the last one finishes with usage.

        The finish reason rides on the last content chunk rather than an empty one: Gemini
        CLI treats a stream whose final chunk has no content as invalid.
        """
        pieces = list(self._pieces(reply)) or [(0.0, {"text": ""})]
        for number, (delay, piece) in enumerate(pieces):
            if delay:
                yield Pause(delay)
            last = number == len(pieces) - 1
            yield SseEvent(data=self._chunk(ctx, [piece], usage=reply.usage if last else None))

    def partial_stream(self, text: str, ctx: ReplyContext) -> Iterator[Frame]:
        """Unfinished chunks carrying ``text``."""
        for piece in chunks(text, TextPart(text).chunk_size):
            yield SseEvent(data=self._chunk(ctx, [{"text": piece}]))

    def stream_error(self, error: SseError, ctx: ReplyContext) -> Iterator[Frame]:
        """A ``data: {"error": {"code", "message", "status"}}`` chunk."""
        payload = error.payload
        if payload is None:
            payload = {
                "error": {
                    "code": 503,
                    "message": error.message,
                    "status": error.error_type or "UNAVAILABLE",
                }
            }
        yield SseEvent(data=payload)

    def error_body(self, error: HttpError, ctx: ReplyContext) -> JsonObject:
        """``{"error": {"code", "message", "status"}}``."""
        message = error_message(
            error,
            overflow=(
                "The input token count (1200000) exceeds the maximum number of tokens "
                "allowed (1048576)."
            ),
            bad_key="API key not valid. Please pass a valid API key.",
        )
        status = gemini_status(error.status)
        return {"error": {"code": error.status, "message": message, "status": status}}

    def count_tokens_body(self, ctx: ReplyContext) -> JsonObject:
        """``{"totalTokens": N}`` from the default usage."""
        return {"totalTokens": DEFAULT_USAGE.input}
