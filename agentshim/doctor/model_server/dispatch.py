"""Decide and deliver the answer to each request: route, read facts, pick a rule, render."""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from urllib.parse import parse_qsl, urlsplit

from ._json import JsonValue
from .facts import RequestFacts, read_facts, with_kind
from .http_server import Connection
from .kinds import Api, RequestKind
from .log import LoggedRequest, RequestLog
from .model_list import model_info, model_list
from .reply import build_reply
from .responses import Hang, HttpError, Response, SseError
from .routing import Endpoint, Route, route
from .script_state import ScriptState
from .side_requests import builtin_response, classify
from .wire import Frame, Pause, ReplyContext, SseEvent, WireFormat, encode_event
from .wire_anthropic import AnthropicWire
from .wire_chat import ChatWire
from .wire_gemini import GeminiWire
from .wire_responses import ResponsesWire

__all__ = ["Dispatcher"]

_WIRES: Mapping[Api, WireFormat] = {
    Api.ANTHROPIC_MESSAGES: AnthropicWire(),
    Api.OPENAI_RESPONSES: ResponsesWire(),
    Api.OPENAI_CHAT: ChatWire(),
    Api.GEMINI: GeminiWire(),
}


def _parse_json(raw: bytes) -> JsonValue:
    if not raw:
        return None
    try:
        parsed: JsonValue = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        return None
    return parsed


class Dispatcher:
    """Everything the server knows between requests: script, log, fallback, model names."""

    def __init__(
        self,
        state: ScriptState,
        log: RequestLog,
        *,
        fallback: Response,
        models: Sequence[str],
        stopping: threading.Event,
        context_windows: Mapping[str, int] | None = None,
    ) -> None:
        self._state = state
        self._log = log
        self._fallback = fallback
        self._models = tuple(models)
        self._windows = dict(context_windows or {})
        self._stopping = stopping
        self._numbers = itertools.count()
        self._numbers_lock = threading.Lock()

    def _next_number(self) -> int:
        with self._numbers_lock:
            return next(self._numbers)

    def answer(self, conn: Connection) -> None:
        """Log the request on ``conn`` and send its answer."""
        split = urlsplit(conn.target)
        query = dict(parse_qsl(split.query, keep_blank_values=True))
        raw = conn.read_body()
        body = _parse_json(raw)
        where = route(conn.method, split.path, query)
        facts = self._facts(where, body)
        picked = self._state.pick(facts)
        number = self._next_number()
        self._log.append(
            LoggedRequest(
                index=number,
                method=conn.method,
                path=split.path,
                query=query,
                headers=conn.headers,
                body=body,
                raw_body=raw,
                facts=facts,
                rule_index=None if picked is None else picked[0],
            )
        )
        ctx = ReplyContext(
            facts=facts,
            request_id=f"{number:05d}",
            model=facts.model or (self._models[0] if self._models else "fake-model"),
            created=int(time.time()),
        )
        try:
            self._deliver(conn, where, ctx, None if picked is None else picked[1])
        except OSError:
            raise
        except Exception as exc:
            # A fault here must reach the client as an answer, not look like a hang.
            if conn.started:
                conn.drop()
            else:
                message = f"agentshim model server failed to answer: {exc!r}"
                conn.send_json(500, {"error": {"message": message}}, self._headers(ctx))

    def _facts(self, where: Route, body: JsonValue) -> RequestFacts:
        if where.endpoint is Endpoint.GENERATE:
            facts = read_facts(
                where.api, body, model=where.url_model, stream=bool(where.url_stream)
            )
            return with_kind(facts, classify(facts))
        kinds = {
            Endpoint.COUNT_TOKENS: RequestKind.COUNT_TOKENS,
            Endpoint.MODEL_LIST: RequestKind.MODEL_LIST,
            Endpoint.MODEL_INFO: RequestKind.MODEL_LIST,
        }
        kind = kinds.get(where.endpoint, RequestKind.OTHER)
        return RequestFacts(api=where.api, kind=kind, model=where.url_model)

    def _headers(self, ctx: ReplyContext) -> dict[str, str]:
        return {"request-id": f"req_{ctx.request_id}", "x-request-id": f"req_{ctx.request_id}"}

    def _deliver(
        self, conn: Connection, where: Route, ctx: ReplyContext, response: Response | None
    ) -> None:
        wire = _WIRES.get(where.api) if where.api is not None else None
        if isinstance(response, HttpError):
            self._send_http_error(conn, wire, ctx, response)
            return
        if isinstance(response, Hang):
            self._hang(conn, wire, ctx, response)
            return
        if where.endpoint is not Endpoint.GENERATE or wire is None:
            self._send_builtin(conn, where, wire, ctx)
            return
        if response is None:
            is_main = ctx.facts.kind is RequestKind.MAIN
            response = self._fallback if is_main else builtin_response(ctx.facts)
            if isinstance(response, (HttpError, Hang)):
                self._deliver(conn, where, ctx, response)
                return
        if isinstance(response, SseError):
            self._send_sse_error(conn, wire, ctx, response)
            return
        reply = build_reply(response, ctx.facts, id_prefix=ctx.request_id)
        if not ctx.facts.stream:
            conn.send_json(200, wire.reply_body(reply, ctx), self._headers(ctx))
        elif where.json_array:
            frames = wire.reply_stream(reply, ctx)
            chunks = [f.data for f in frames if isinstance(f, SseEvent)]
            conn.send_json(200, chunks, self._headers(ctx))
        else:
            conn.start_stream(self._headers(ctx))
            self._write_frames(conn, frames=wire.reply_stream(reply, ctx))
            conn.end_stream()

    def _write_frames(self, conn: Connection, frames: Iterable[Frame]) -> bool:
        """Write frames in order; False when the server began closing during a pause."""
        for frame in frames:
            if isinstance(frame, Pause):
                if self._stopping.wait(frame.seconds):
                    return False
            else:
                conn.write_chunk(encode_event(frame))
        return True

    def _send_http_error(
        self, conn: Connection, wire: WireFormat | None, ctx: ReplyContext, error: HttpError
    ) -> None:
        headers = {**self._headers(ctx), **error.headers}
        if error.body is not None:
            body: JsonValue = error.body
        elif wire is not None:
            body = wire.error_body(error, ctx)
        else:
            body = {"error": {"message": error.message or f"HTTP {error.status}"}}
        conn.send_json(error.status, body, headers)

    def _hang(
        self, conn: Connection, wire: WireFormat | None, ctx: ReplyContext, hang: Hang
    ) -> None:
        if wire is not None and ctx.facts.stream and hang.after_text:
            conn.start_stream(self._headers(ctx))
            self._write_frames(conn, wire.partial_stream(hang.after_text, ctx))
        self._stopping.wait(hang.seconds)
        conn.drop()

    def _send_sse_error(
        self, conn: Connection, wire: WireFormat, ctx: ReplyContext, error: SseError
    ) -> None:
        if not ctx.facts.stream:
            # A non-streaming request cannot get an event mid-stream; the nearest thing is
            # the HTTP error the same failure produces.
            status = 529 if ctx.facts.api is Api.ANTHROPIC_MESSAGES else 503
            if error.error_type not in (None, "overloaded_error", "UNAVAILABLE"):
                status = 500
            as_http = HttpError(status, message=error.message, body=error.payload)
            self._send_http_error(conn, wire, ctx, as_http)
            return
        conn.start_stream(self._headers(ctx))
        if self._write_frames(conn, wire.partial_stream(error.after_text, ctx)):
            self._write_frames(conn, wire.stream_error(error, ctx))
            conn.end_stream()

    def _send_builtin(
        self, conn: Connection, where: Route, wire: WireFormat | None, ctx: ReplyContext
    ) -> None:
        headers = self._headers(ctx)
        if where.endpoint is Endpoint.COUNT_TOKENS and wire is not None:
            conn.send_json(200, wire.count_tokens_body(ctx), headers)
        elif where.endpoint is Endpoint.MODEL_LIST:
            conn.send_json(200, model_list(self._models, where.api), headers)
        elif where.endpoint is Endpoint.MODEL_INFO:
            window = self._windows.get(where.url_model)
            conn.send_json(200, model_info(where.url_model, where.api, window), headers)
        elif conn.method == "HEAD":
            conn.send_bytes(200, b"", "text/plain", headers)
        else:
            conn.send_json(200, {}, headers)
