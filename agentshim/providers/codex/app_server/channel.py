"""The app-server's JSON-RPC framing: our request ids on the wire, and decoding what it says.

The wire is JSON-RPC without the ``jsonrpc`` member, one object a line both ways. Our requests
carry integer ids from 1 (the conversation's Correlator numbers them, and its deadlines are
theirs); the server's own requests (approvals) count from 0 on their own, so the two never
meet. A line that is not JSON, or does not match the protocol, decodes as :class:`Malformed`:
it costs that line, not the turn.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentshim.core.stream import parse_json_object
from agentshim.transport.correlator import PendingRequest

from . import _wire
from . import protocol as p

__all__ = ["Malformed", "Message", "decode", "pending_key", "request_frame", "wire_id"]

Message = p.Notification | p.ServerRequest | p.Response | p.ErrorResponse
"""One decoded line from the server."""


@dataclass(frozen=True, slots=True)
class Malformed:
    """A stdout line that is not a protocol message, and why."""

    line: str
    reason: str


def wire_id(pending: PendingRequest) -> int:
    """The integer id ``pending`` goes out with (the Correlator's ``<prefix>_<n>`` is ``n``)."""
    return int(pending.request_id.rsplit("_", 1)[1])


def pending_key(prefix: str, response: p.Response | p.ErrorResponse) -> str | None:
    """The Correlator key of the request ``response`` answers (None: it names no id)."""
    return None if response.id is None else f"{prefix}_{response.id}"


def request_frame(pending: PendingRequest, params: Any) -> dict[str, Any]:
    """The request carrying ``params`` (a generated params class) under ``pending``'s id."""
    return _wire.request(wire_id(pending), params)


def decode(line: str) -> Message | Malformed:
    """One stdout line as a protocol message, or why it is not one."""
    frame = parse_json_object(line)
    if frame is None:
        return Malformed(line, "not a JSON object")
    try:
        return p.parse_server_message(frame)
    except p.CodexProtocolError as error:
        return Malformed(line, str(error))
