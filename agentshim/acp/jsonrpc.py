"""The JSON-RPC 2.0 messages of ACP: what we write, and what a line the agent printed is.

Pure: builders return mappings for :func:`agentshim.transport.ndjson.encode_frame`, and
:func:`read_message` sorts a decoded line into a response, a request or a notification (or
None for anything else, which costs only that line).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from agentshim.core.jsonvalues import as_mapping, as_str

__all__ = [
    "METHOD_NOT_FOUND",
    "Notification",
    "Request",
    "Response",
    "RpcError",
    "error_response",
    "notification",
    "read_message",
    "request",
    "result_response",
]

METHOD_NOT_FOUND = -32601
"""The JSON-RPC code for a method the receiver does not implement."""


def request(request_id: str, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Our request ``method`` with id ``request_id``."""
    return {"jsonrpc": "2.0", "id": request_id, "method": method, "params": dict(params)}


def notification(method: str, params: Mapping[str, Any]) -> dict[str, Any]:
    """Our notification ``method`` (no id, no response)."""
    return {"jsonrpc": "2.0", "method": method, "params": dict(params)}


def result_response(request_id: object, result: Mapping[str, Any]) -> dict[str, Any]:
    """The answer to the agent's request ``request_id``."""
    return {"jsonrpc": "2.0", "id": request_id, "result": dict(result)}


def error_response(request_id: object, code: int, message: str) -> dict[str, Any]:
    """A refusal of the agent's request ``request_id``."""
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}


@dataclass(frozen=True, slots=True)
class RpcError:
    """A JSON-RPC error object: its code, message and the ``data`` that came with it."""

    code: int
    message: str
    data: Mapping[str, Any]

    def describe(self) -> str:
        """The code, message and any ``data.details`` as one line of text."""
        details = as_str(self.data.get("details"))
        text = f"{self.message} (code {self.code})"
        return f"{text}: {details}" if details else text


@dataclass(frozen=True, slots=True)
class Response:
    """The answer to one of our requests: a ``result`` or an ``error``."""

    request_id: object
    result: Mapping[str, Any] | None
    error: RpcError | None


@dataclass(frozen=True, slots=True)
class Request:
    """A request the agent sent us; it waits for our answer under ``request_id``."""

    request_id: object
    method: str
    params: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Notification:
    """A notification the agent sent us (``session/update``, mostly)."""

    method: str
    params: Mapping[str, Any]


def _error(value: object) -> RpcError:
    body = as_mapping(value) or {}
    code = body.get("code")
    return RpcError(
        code=code if type(code) is int else 0,
        message=as_str(body.get("message")) or "no error message",
        data=as_mapping(body.get("data")) or {},
    )


def read_message(frame: Mapping[str, Any]) -> Response | Request | Notification | None:
    """What the decoded line ``frame`` is, or None when it is no JSON-RPC message."""
    method = as_str(frame.get("method"))
    params = as_mapping(frame.get("params")) or {}
    has_id = "id" in frame and frame.get("id") is not None
    if method is not None:
        if has_id:
            return Request(frame.get("id"), method, params)
        return Notification(method, params)
    if not has_id:
        return None
    if "error" in frame:
        return Response(frame.get("id"), None, _error(frame.get("error")))
    result = as_mapping(frame.get("result"))
    return Response(frame.get("id"), result if result is not None else {}, None)
