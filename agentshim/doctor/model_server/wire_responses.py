"""OpenAI Responses framing: the response object and its ``response.*`` event stream."""

from __future__ import annotations

from collections.abc import Iterator, Mapping

from ._json import JsonObject, JsonValue
from .error_text import CONTEXT_OVERFLOW_CODE, error_message
from .reply import Reply, TextPart, ToolUsePart, chunks
from .responses import DEFAULT_USAGE, HttpError, SseError, Usage
from .wire import Frame, Pause, ReplyContext, SseEvent

__all__ = ["ResponsesWire", "openai_error_body"]

_OVERFLOW_MESSAGE = (
    "Your input exceeds the context window of this model. Please adjust your input and try again."
)
_ERROR_TYPES: Mapping[int, tuple[str, str | None]] = {
    400: ("invalid_request_error", None),
    401: ("invalid_request_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("invalid_request_error", "model_not_found"),
    429: ("requests", "rate_limit_exceeded"),
}


def openai_error_body(error: HttpError) -> JsonObject:
    """``{"error": {"message", "type", "param", "code"}}`` as OpenAI APIs send it."""
    kind, code = _ERROR_TYPES.get(error.status, ("server_error", None))
    code = error.code or code
    message = error_message(
        error, overflow=_OVERFLOW_MESSAGE, bad_key="Incorrect API key provided."
    )
    param: str | None = "input" if code == CONTEXT_OVERFLOW_CODE else None
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


def _usage(usage: Usage) -> JsonObject:
    return {
        "input_tokens": usage.input,
        "input_tokens_details": {"cached_tokens": usage.cache_read},
        "output_tokens": usage.output,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning},
        "total_tokens": usage.input + usage.output,
    }


def _typed(frames: Iterator[Frame]) -> Iterator[Frame]:
    """Put ``type`` (the event name) and a running ``sequence_number`` into each event."""
    number = 0
    for frame in frames:
        if isinstance(frame, SseEvent) and isinstance(frame.data, Mapping):
            data: JsonObject = {"type": frame.name, "sequence_number": number, **frame.data}
            number += 1
            yield SseEvent(data=data, name=frame.name)
        else:
            yield frame


class ResponsesWire:
    """Renders replies and errors as the OpenAI Responses API does."""

    def _item(self, ctx: ReplyContext, index: int, part: TextPart | ToolUsePart) -> JsonObject:
        if isinstance(part, TextPart):
            return {
                "id": f"msg_{ctx.request_id}_{index}",
                "type": "message",
                "status": "completed",
                "role": "assistant",
                "content": [{"type": "output_text", "text": part.text, "annotations": []}],
            }
        item: JsonObject = {
            "id": f"fc_{ctx.request_id}_{index}",
            "type": "function_call",
            "status": "completed",
            "call_id": part.call_id,
            "name": part.name,
            "arguments": part.arguments_json,
        }
        if part.namespace is not None:
            item["namespace"] = part.namespace
        return item

    def _response(
        self, ctx: ReplyContext, status: str, output: list[JsonValue], usage: Usage | None
    ) -> JsonObject:
        return {
            "id": f"resp_{ctx.request_id}",
            "object": "response",
            "created_at": ctx.created,
            "status": status,
            "model": ctx.model,
            "output": output,
            "error": None,
            "incomplete_details": None,
            "usage": None if usage is None else _usage(usage),
        }

    def reply_body(self, reply: Reply, ctx: ReplyContext) -> JsonValue:
        """The completed response object."""
        output: list[JsonValue] = [self._item(ctx, i, part) for i, part in enumerate(reply.parts)]
        return self._response(ctx, "completed", output, reply.usage)

    def _opening(self, ctx: ReplyContext) -> Iterator[SseEvent]:
        response = self._response(ctx, "in_progress", [], None)
        yield SseEvent(name="response.created", data={"response": response})
        yield SseEvent(name="response.in_progress", data={"response": response})

    def _text_events(
        self, ctx: ReplyContext, index: int, part: TextPart, *, close: bool = True
    ) -> Iterator[Frame]:
        item_id = f"msg_{ctx.request_id}_{index}"
        opened: JsonObject = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        yield SseEvent(
            name="response.output_item.added", data={"output_index": index, "item": opened}
        )
        where: JsonObject = {"item_id": item_id, "output_index": index, "content_index": 0}
        yield SseEvent(
            name="response.content_part.added",
            data={**where, "part": {"type": "output_text", "text": "", "annotations": []}},
        )
        for piece in chunks(part.text, part.chunk_size):
            if part.delay:
                yield Pause(part.delay)
            yield SseEvent(name="response.output_text.delta", data={**where, "delta": piece})
        if not close:
            return
        yield SseEvent(name="response.output_text.done", data={**where, "text": part.text})
        yield SseEvent(
            name="response.content_part.done",
            data={
                **where,
                "part": {"type": "output_text", "text": part.text, "annotations": []},
            },
        )
        yield SseEvent(
            name="response.output_item.done",
            data={"output_index": index, "item": self._item(ctx, index, part)},
        )

    def _call_events(self, ctx: ReplyContext, index: int, part: ToolUsePart) -> Iterator[Frame]:
        done = self._item(ctx, index, part)
        opened = {**done, "status": "in_progress", "arguments": ""}
        yield SseEvent(
            name="response.output_item.added", data={"output_index": index, "item": opened}
        )
        where: JsonObject = {"item_id": done["id"], "output_index": index}
        for piece in chunks(part.arguments_json, part.chunk_size):
            yield SseEvent(
                name="response.function_call_arguments.delta", data={**where, "delta": piece}
            )
        yield SseEvent(
            name="response.function_call_arguments.done",
            data={**where, "arguments": part.arguments_json},
        )
        yield SseEvent(name="response.output_item.done", data={"output_index": index, "item": done})

    def reply_stream(self, reply: Reply, ctx: ReplyContext) -> Iterator[Frame]:
        """created, in_progress, per item added/deltas/done, then completed with usage."""
        return _typed(self._reply_stream(reply, ctx))

    def _reply_stream(self, reply: Reply, ctx: ReplyContext) -> Iterator[Frame]:
        yield from self._opening(ctx)
        for index, part in enumerate(reply.parts):
            if isinstance(part, TextPart):
                yield from self._text_events(ctx, index, part)
            else:
                yield from self._call_events(ctx, index, part)
        final = self.reply_body(reply, ctx)
        yield SseEvent(name="response.completed", data={"response": final})

    def partial_stream(self, text: str, ctx: ReplyContext) -> Iterator[Frame]:
        """created, in_progress and an open message item holding ``text``."""
        return _typed(self._partial_stream(text, ctx))

    def _partial_stream(self, text: str, ctx: ReplyContext) -> Iterator[Frame]:
        yield from self._opening(ctx)
        if text:
            yield from self._text_events(ctx, 0, TextPart(text), close=False)

    def stream_error(self, error: SseError, ctx: ReplyContext) -> Iterator[Frame]:
        """A ``response.failed`` event carrying the error code and message."""
        if error.payload is not None:
            yield SseEvent(name="response.failed", data=error.payload)
            return
        failed = self._response(ctx, "failed", [], None)
        failed["error"] = {"code": error.error_type or "server_error", "message": error.message}
        yield from _typed(iter([SseEvent(name="response.failed", data={"response": failed})]))

    def error_body(self, error: HttpError, ctx: ReplyContext) -> JsonObject:
        """The OpenAI error object."""
        return openai_error_body(error)

    def count_tokens_body(self, ctx: ReplyContext) -> JsonObject:
        """OpenAI has no token-count endpoint here; answer with the default input count."""
        return {"input_tokens": DEFAULT_USAGE.input}
