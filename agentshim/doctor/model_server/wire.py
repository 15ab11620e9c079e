"""The seam between the server and each API's wire format.

A wire format turns a resolved reply into a JSON body or a sequence of frames (SSE events
and pauses); the server only writes what it is given.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol, TypeAlias

from ._json import JsonObject, JsonValue, dumps
from .facts import RequestFacts
from .reply import Reply
from .responses import HttpError, SseError

__all__ = ["Frame", "Pause", "ReplyContext", "SseEvent", "WireFormat", "encode_event"]


@dataclass(frozen=True, slots=True)
class SseEvent:
    """One server-sent event: optional ``event:`` name and its data (JSON, or raw text)."""

    data: JsonValue
    name: str | None = None
    raw: bool = False


@dataclass(frozen=True, slots=True)
class Pause:
    """Wait this many seconds before the next frame (cut short when the server closes)."""

    seconds: float


#: What a stream is made of.
Frame: TypeAlias = SseEvent | Pause


@dataclass(frozen=True, slots=True)
class ReplyContext:
    """Per-request values a renderer needs: ids, model name and what the request asked."""

    facts: RequestFacts
    request_id: str
    model: str
    created: int


def encode_event(event: SseEvent) -> bytes:
    """Encode one event in SSE framing (``event:`` line when named, one ``data:`` line)."""
    data = event.data if event.raw and isinstance(event.data, str) else dumps(event.data)
    head = f"event: {event.name}\n" if event.name else ""
    return f"{head}data: {data}\n\n".encode()


class WireFormat(Protocol):
    """How one API frames answers and errors."""

    def reply_body(self, reply: Reply, ctx: ReplyContext) -> JsonValue:
        """The non-streaming JSON body of ``reply``."""
        ...

    def reply_stream(self, reply: Reply, ctx: ReplyContext) -> Iterator[Frame]:
        """The complete event stream of ``reply``."""
        ...

    def partial_stream(self, text: str, ctx: ReplyContext) -> Iterator[Frame]:
        """The opening of a stream that says ``text`` and is never finished."""
        ...

    def stream_error(self, error: SseError, ctx: ReplyContext) -> Iterator[Frame]:
        """The error event(s) that end a stream begun by ``partial_stream``."""
        ...

    def error_body(self, error: HttpError, ctx: ReplyContext) -> JsonObject:
        """The API's JSON error body for ``error`` (used when the error sets no body)."""
        ...

    def count_tokens_body(self, ctx: ReplyContext) -> JsonObject:
        """The answer to a token-count request."""
        ...
