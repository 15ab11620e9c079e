"""The request log: every request the server received, in arrival order."""

from __future__ import annotations

import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field

from ._json import JsonValue
from .facts import RequestFacts
from .kinds import Api, RequestKind

__all__ = ["LoggedRequest", "RequestLog"]


@dataclass(frozen=True, slots=True)
class LoggedRequest:
    """One request as received, with what the server made of it.

    ``index`` numbers requests from 0 in arrival order over the server's life.
    ``body`` is the parsed JSON body (None when empty or not JSON; ``raw_body`` keeps the
    bytes). ``rule_index`` is the script rule that answered, or None when a built-in answer
    (side requests, token counts, model lists) or the fallback did.
    """

    index: int
    method: str
    path: str
    query: Mapping[str, str]
    headers: Mapping[str, str]
    body: JsonValue
    raw_body: bytes
    facts: RequestFacts
    rule_index: int | None
    received_at: float = field(default_factory=time.time)

    @property
    def api(self) -> Api | None:
        """The API the request spoke, if recognised."""
        return self.facts.api

    @property
    def kind(self) -> RequestKind:
        """Why the CLI sent it (main turn, title, router, ...)."""
        return self.facts.kind

    def header(self, name: str) -> str | None:
        """A request header by case-insensitive name."""
        wanted = name.lower()
        for key, value in self.headers.items():
            if key.lower() == wanted:
                return value
        return None


class RequestLog:
    """A thread-safe, append-only list of requests with a way to wait for more."""

    def __init__(self) -> None:
        self._entries: list[LoggedRequest] = []
        self._changed = threading.Condition()

    def append(self, entry: LoggedRequest) -> None:
        """Record a request and wake waiters."""
        with self._changed:
            self._entries.append(entry)
            self._changed.notify_all()

    def snapshot(self) -> tuple[LoggedRequest, ...]:
        """Every request so far."""
        with self._changed:
            return tuple(self._entries)

    def clear(self) -> None:
        """Forget every request."""
        with self._changed:
            self._entries.clear()

    def wait_for(self, count: int, timeout: float) -> bool:
        """Block until at least ``count`` requests are logged; False when time ran out."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._entries) >= count, timeout)
