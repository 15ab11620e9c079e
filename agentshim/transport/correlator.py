"""Requests sent to a CLI that await its response, each with a deadline.

Pure bookkeeping, no I/O and no lock: the transport holds its own lock around it, and reads
a request's deadline to decide how long its wait for the answer may block.
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["Correlator", "PendingRequest"]


@dataclass(frozen=True, slots=True)
class PendingRequest:
    """A request that awaits its response: its id, what it asked, when it gives up."""

    request_id: str
    subtype: str
    deadline: float | None


class Correlator:
    """Issues request ids, and pairs each response with the request it answers.

    Ids are ``<prefix>_<n>``, unique for the correlator's life. A response to an id that is
    not pending (never issued, already answered, or cleared) pairs with nothing.
    """

    def __init__(self, prefix: str) -> None:
        self._prefix = prefix
        self._count = 0
        self._pending: dict[str, PendingRequest] = {}

    def issue(self, subtype: str, deadline: float | None) -> PendingRequest:
        """Record a new request of ``subtype`` that gives up at ``deadline`` (None: never)."""
        self._count += 1
        request = PendingRequest(f"{self._prefix}_{self._count}", subtype, deadline)
        self._pending[request.request_id] = request
        return request

    def resolve(self, request_id: object) -> PendingRequest | None:
        """The pending request ``request_id`` answers (now answered), or None."""
        if type(request_id) is not str:
            return None
        return self._pending.pop(request_id, None)

    def pending(self, subtype: str) -> PendingRequest | None:
        """The oldest pending request of ``subtype``, or None."""
        for request in self._pending.values():
            if request.subtype == subtype:
                return request
        return None

    def clear(self) -> None:
        """Forget every pending request (the process they went to is gone)."""
        self._pending.clear()

    def __len__(self) -> int:
        return len(self._pending)
