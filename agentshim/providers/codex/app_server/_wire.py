"""The hand-written runtime the generated ``protocol.py`` calls: decoders, encoder, envelopes.

A decoder is ``(value, path) -> T``: it returns the decoded value or raises
:class:`CodexProtocolError` naming ``path`` (``Notification.params.turn.id``), so a bad member
is found without reading the line. The wire has no ``jsonrpc`` member: :func:`parse_message`
tells a notification, a request, a response and an error apart by their members alone.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar, cast

from agentshim.core.errors import AgentShimError
from agentshim.core.jsonvalues import json_kind

__all__ = [
    "ClientNotification",
    "ClientRequest",
    "CodexProtocolError",
    "Decoder",
    "ErrorResponse",
    "Notification",
    "Response",
    "ServerRequest",
    "UnknownParams",
    "encode",
    "parse_client",
    "parse_message",
    "reply",
    "request",
]

T = TypeVar("T")
E = TypeVar("E", bound=enum.Enum)
Decoder = Callable[[object, str], T]
"""Decodes one JSON value found at a path."""


class CodexProtocolError(AgentShimError, ValueError):
    """A message that does not match the app-server protocol; ``path`` names the bad member."""

    _fields = ("path", "reason")

    def __init__(self, path: str, reason: str, message: str | None = None) -> None:
        super().__init__(message or f"codex app-server message: {path}: {reason}")
        self.path = path
        self.reason = reason


# -- decoders --------------------------------------------------------------------------------


def obj(value: object, path: str) -> Mapping[str, Any]:
    """``value`` as a JSON object."""
    if not isinstance(value, dict):
        raise CodexProtocolError(path, f"expected an object, got {json_kind(value)}")
    return cast("dict[str, Any]", value)


def string(value: object, path: str) -> str:
    """A JSON string."""
    if not isinstance(value, str):
        raise CodexProtocolError(path, f"expected a string, got {json_kind(value)}")
    return value


def integer(value: object, path: str) -> int:
    """A JSON integer (a boolean is not one)."""
    if type(value) is not int:
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise CodexProtocolError(path, f"expected an integer, got {json_kind(value)}")
    return value


def number(value: object, path: str) -> float:
    """A JSON number."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CodexProtocolError(path, f"expected a number, got {json_kind(value)}")
    return float(value)


def boolean(value: object, path: str) -> bool:
    """A JSON boolean."""
    if not isinstance(value, bool):
        raise CodexProtocolError(path, f"expected a boolean, got {json_kind(value)}")
    return value


def raw(value: object, path: str) -> Any:
    """Any JSON value, kept as it is."""
    del path
    return value


def nullable(decode: Decoder[T]) -> Decoder[T | None]:
    """``decode``, or None for a JSON null."""

    def decoder(value: object, path: str) -> T | None:
        return None if value is None else decode(value, path)

    return decoder


def array(decode: Decoder[T]) -> Decoder[tuple[T, ...]]:
    """A JSON array of what ``decode`` reads, as a tuple."""

    def decoder(value: object, path: str) -> tuple[T, ...]:
        if not isinstance(value, list):
            raise CodexProtocolError(path, f"expected an array, got {json_kind(value)}")
        items = cast("list[object]", value)
        return tuple(decode(item, f"{path}[{index}]") for index, item in enumerate(items))

    return decoder


def mapping(decode: Decoder[T]) -> Decoder[Mapping[str, T]]:
    """A JSON object whose every value ``decode`` reads."""

    def decoder(value: object, path: str) -> Mapping[str, T]:
        members = obj(value, path)
        return {key: decode(item, f"{path}.{key}") for key, item in members.items()}

    return decoder


def strict_enum(cls: type[E]) -> Decoder[E]:
    """A member of ``cls``; any other value is refused."""

    def decoder(value: object, path: str) -> E:
        try:
            return cls(value)
        except ValueError:
            listed = ", ".join(repr(member.value) for member in cls)
            raise CodexProtocolError(path, f"{value!r:.80} is not one of {listed}") from None

    return decoder


def tolerant_enum(cls: type[E]) -> Decoder[E | str]:
    """A member of ``cls``, or the string itself when the schema does not list it."""

    def decoder(value: object, path: str) -> E | str:
        text = string(value, path)
        try:
            return cls(text)
        except ValueError:
            return text

    return decoder


def external(strings: tuple[str, ...], keys: tuple[str, ...], *, strict: bool) -> Decoder[Any]:
    """An externally tagged union: one of ``strings``, or an object with one key of ``keys``.

    Tolerant: any string or object is kept as it is.
    """

    def decoder(value: object, path: str) -> Any:
        if isinstance(value, str):
            if strict and value not in strings:
                raise CodexProtocolError(path, f"{value!r:.80} is not one of {', '.join(strings)}")
            return value
        members = obj(value, path)
        if strict and (len(members) != 1 or next(iter(members)) not in keys):
            raise CodexProtocolError(path, f"expected an object with one key of {', '.join(keys)}")
        return dict(members)

    return decoder


def field(members: Mapping[str, Any], key: str, path: str, decode: Decoder[T]) -> T:
    """Required member ``key``: missing (or null) is an error."""
    where = f"{path}.{key}"
    if key not in members or members[key] is None:
        raise CodexProtocolError(where, "is required and missing")
    return decode(members[key], where)


def present(members: Mapping[str, Any], key: str, path: str, decode: Decoder[T]) -> T:
    """Required member ``key`` that may be null: it must be there."""
    where = f"{path}.{key}"
    if key not in members:
        raise CodexProtocolError(where, "is required and missing")
    return decode(members[key], where)


def optional(members: Mapping[str, Any], key: str, path: str, decode: Decoder[T]) -> T | None:
    """Member ``key`` when present and not null, else None."""
    value = members.get(key)
    if value is None:
        return None
    return decode(value, f"{path}.{key}")


def tag(members: Mapping[str, Any], key: str, expected: str, path: str) -> None:
    """Check a variant's tag member."""
    found = field(members, key, path, string)
    if found != expected:
        raise CodexProtocolError(f"{path}.{key}", f"expected {expected!r}, got {found!r:.80}")


def closed(members: Mapping[str, Any], known: frozenset[str], path: str) -> None:
    """A strict type refuses a member its schema does not list."""
    for key in members:
        if key not in known:
            raise CodexProtocolError(f"{path}.{key}", "is not a member of this type")


def extra(members: Mapping[str, Any], known: frozenset[str]) -> Mapping[str, Any]:
    """The members a tolerant type does not list, kept so they re-encode unchanged."""
    unknown = {key: value for key, value in members.items() if key not in known}
    return unknown or _NO_KEYS


_NO_KEYS: Mapping[str, Any] = {}


# -- encoding --------------------------------------------------------------------------------


def encode(value: object) -> Any:
    """``value`` as JSON: a generated object by its ``to_wire``, an enum by its value."""
    to_wire = getattr(value, "to_wire", None)
    if callable(to_wire):
        return to_wire()
    if isinstance(value, enum.Enum):
        return value.value
    if isinstance(value, tuple | list):
        return [encode(item) for item in cast("list[object]", value)]
    if isinstance(value, Mapping):
        items = cast("Mapping[object, object]", value)
        return {str(key): encode(item) for key, item in items.items()}
    return value


def put(out: dict[str, Any], key: str, value: object, required: bool) -> None:
    """Set ``out[key]``; None is omitted unless the member is required (then it is null)."""
    if value is None:
        if required:
            out[key] = None
        return
    out[key] = encode(value)


# -- envelopes -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class UnknownParams:
    """The params of a method this protocol does not list, kept as their JSON."""

    raw: Any

    def to_wire(self) -> Any:
        """The JSON they were decoded from."""
        return self.raw


@dataclass(frozen=True, slots=True, kw_only=True)
class Notification:
    """A server notification: ``{"method", "params"}`` (and the time it was sent)."""

    method: str
    params: Any
    emitted_at_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class _Request:
    # The request envelope is the same in both directions; the class names the sender.
    id: int | str
    method: str
    params: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ServerRequest(_Request):
    """A request from the server (an approval); its ids are the server's own, from 0."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Response:
    """The answer to a request: ``{"id", "result"}``; decode ``result`` with the params' ``parse_result``."""

    id: int | str
    result: Any


@dataclass(frozen=True, slots=True, kw_only=True)
class ErrorResponse:
    """A request refused: ``{"id", "error": {"code", "message", "data"?}}``."""

    id: int | str | None
    code: int
    message: str
    data: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientRequest(_Request):
    """A request from the client, as a fake server reads it."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ClientNotification:
    """A notification from the client (``initialized``)."""

    method: str
    params: Any = None


def _request_id(value: object, path: str) -> int | str:
    if isinstance(value, str):
        return value
    return integer(value, path)


def _params(table: Mapping[str, Any], method: str, value: object, path: str) -> Any:
    decode: Decoder[Any] | None = table.get(method)
    if method not in table:
        return UnknownParams(value)
    if decode is None:
        return None
    return decode(value, path)


def _response(members: Mapping[str, Any]) -> Response | ErrorResponse:
    if "error" in members:
        error = obj(members["error"], "ErrorResponse.error")
        identifier = members.get("id")
        return ErrorResponse(
            id=None if identifier is None else _request_id(identifier, "ErrorResponse.id"),
            code=field(error, "code", "ErrorResponse.error", integer),
            message=optional(error, "message", "ErrorResponse.error", string) or "",
            data=error.get("data"),
        )
    if "result" in members and "id" in members:
        return Response(id=_request_id(members["id"], "Response.id"), result=members["result"])
    raise CodexProtocolError("message", "has neither a method, a result nor an error")


Req = TypeVar("Req", ServerRequest, ClientRequest)
Note = TypeVar("Note", Notification, ClientNotification)


def _read(
    value: object,
    requests: Mapping[str, Any],
    notifications: Mapping[str, Any],
    request: type[Req],
    notification: Callable[[Mapping[str, Any], str, Mapping[str, Any]], Note],
) -> Req | Note | Response | ErrorResponse:
    # One reading for both directions: no method is a response, an id makes a request, and
    # anything else is a notification, which each direction builds itself.
    members = obj(value, "message")
    if "method" not in members:
        return _response(members)
    method = field(members, "method", "message", string)
    if "id" not in members:
        return notification(notifications, method, members)
    name = request.__name__
    return request(
        id=_request_id(members["id"], f"{name}.id"),
        method=method,
        params=_params(requests, method, members.get("params"), f"{name}.params"),
    )


def _server_notification(
    table: Mapping[str, Any], method: str, members: Mapping[str, Any]
) -> Notification:
    emitted = members.get("emittedAtMs")
    return Notification(
        method=method,
        params=_params(table, method, members.get("params"), "Notification.params"),
        emitted_at_ms=emitted if type(emitted) is int else None,
    )


def _client_notification(
    table: Mapping[str, Any], method: str, members: Mapping[str, Any]
) -> ClientNotification:
    params = members.get("params")
    if params is None:
        return ClientNotification(method=method)
    return ClientNotification(
        method=method, params=_params(table, method, params, "ClientNotification.params")
    )


def parse_message(
    value: object, notifications: Mapping[str, Any], requests: Mapping[str, Any]
) -> Notification | ServerRequest | Response | ErrorResponse:
    """One line from the server, by its members; params decoded by the tables' decoders."""
    return _read(value, requests, notifications, ServerRequest, _server_notification)


def parse_client(
    value: object, requests: Mapping[str, Any], notifications: Mapping[str, Any]
) -> ClientRequest | ClientNotification | Response | ErrorResponse:
    """One line from the client (the inverse direction, for fakes and tests)."""
    return _read(value, requests, notifications, ClientRequest, _client_notification)


def reply(request_id: int | str, result: object) -> dict[str, Any]:
    """The reply to a server request: ``{"id", "result"}``, no ``jsonrpc`` member."""
    return {"id": request_id, "result": encode(result)}


def request(request_id: int | str, params: object) -> dict[str, Any]:
    """A client request: ``{"method", "id", "params"}``; ``params`` carries METHOD."""
    method = getattr(params, "METHOD", None)
    if not isinstance(method, str):
        raise CodexProtocolError("ClientRequest.method", f"{type(params).__name__} is no request")
    return {"method": method, "id": request_id, "params": encode(params)}


def notification(method: str, params: object = None) -> dict[str, Any]:
    """A client notification: ``{"method"}`` (with ``params`` when there are any)."""
    frame: dict[str, Any] = {"method": method}
    if params is not None:
        frame["params"] = encode(params)
    return frame
