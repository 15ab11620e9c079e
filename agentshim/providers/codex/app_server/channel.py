"""The app-server's JSON-RPC framing over one process: our request ids, their deadlines, decoding.

The wire is JSON-RPC without the ``jsonrpc`` member, one object a line both ways. Our requests
carry integer ids from 1; the server's own requests (approvals) count from 0 on their own, so
the two never meet. A line that is not JSON, or does not match the protocol, is handed back as
:class:`Malformed` (it costs that line, not the turn).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from agentshim.core.stream import parse_json_object
from agentshim.execution.process import ProcessExited, StderrLine
from agentshim.transport.channel import Channel
from agentshim.transport.correlator import Correlator, PendingRequest

from . import _wire
from . import protocol as p

__all__ = ["Malformed", "Message", "RpcChannel"]

Message = p.Notification | p.ServerRequest | p.Response | p.ErrorResponse
"""One decoded line from the server."""

_PREFIX = "codex"


@dataclass(frozen=True, slots=True)
class Malformed:
    """A stdout line that is not a protocol message, and why."""

    line: str
    reason: str


class RpcChannel:
    """Requests to one app-server process and what it says, on the transport's clock.

    ``argv`` is the process's; ``clock`` the monotonic clock deadlines are read on.
    """

    def __init__(self, channel: Channel, *, clock: Callable[[], float]) -> None:
        self.channel = channel
        self._clock = clock
        self._pending = Correlator(_PREFIX)

    @property
    def argv(self) -> tuple[str, ...]:
        """What started the process."""
        return self.channel.argv

    @property
    def exit(self) -> ProcessExited | None:
        """How the process ended, once a read met it."""
        return self.channel.exit

    def request(self, params: Any, deadline: float | None) -> PendingRequest:
        """Send the request ``params`` (a generated params class) and record it as pending.

        Raises:
            ProcessClosedError: the process is gone (nothing is pending then).
        """
        pending = self._pending.issue(str(params.METHOD), deadline)
        try:
            self.channel.send(_wire.request(self.wire_id(pending), params))
        except BaseException:
            self._pending.resolve(pending.request_id)
            raise
        return pending

    def notify(self, method: str) -> None:
        """Send a notification without params (``initialized``)."""
        self.channel.send(_wire.notification(method))

    def reply(self, request_id: int | str, result: object) -> None:
        """Answer the server's request ``request_id``."""
        self.channel.send(p.reply(request_id, result))

    def refuse(self, request_id: int | str, code: int, message: str) -> None:
        """Answer the server's request ``request_id`` with an error."""
        self.channel.send({"id": request_id, "error": {"code": code, "message": message}})

    def resolve(self, response: p.Response | p.ErrorResponse) -> PendingRequest | None:
        """The pending request ``response`` answers (now answered), or None."""
        if response.id is None:
            return None
        return self._pending.resolve(f"{_PREFIX}_{response.id}")

    def wire_id(self, pending: PendingRequest) -> int:
        """The id ``pending`` went out with."""
        return int(pending.request_id.rsplit("_", 1)[1])

    def read(
        self, deadline: float | None
    ) -> Message | Malformed | StderrLine | ProcessExited | None:
        """The next thing the process said, decoded; None at ``deadline`` or on a wake.

        Stderr lines and the exit come back as they are.
        """
        output = self.channel.read(deadline)
        if output is None or isinstance(output, ProcessExited | StderrLine):
            return output
        line = output.text
        frame = parse_json_object(line)
        if frame is None:
            return Malformed(line, "not a JSON object")
        try:
            return p.parse_server_message(frame)
        except p.CodexProtocolError as error:
            return Malformed(line, str(error))

    def wake(self) -> None:
        """End a read blocked on another thread."""
        self.channel.wake()

    def kill(self) -> None:
        """Kill the process now."""
        self.channel.kill()

    def close(self, grace: float) -> int | None:
        """End the process in order (stdin EOF, SIGTERM, SIGKILL) and forget what is pending."""
        self._pending.clear()
        return self.channel.close(grace)
