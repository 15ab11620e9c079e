"""What a provider's plugin is given to build a long-lived transport."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field

from agentshim.core.clock import Monotonic
from agentshim.core.conversation import Transport
from agentshim.core.provider import Provider
from agentshim.execution.executor import CommandExecutor
from agentshim.execution.process import Process, SpawnRequest

__all__ = ["ContextSource", "TransportContext", "TransportFactory"]


def _ignore(_: str) -> None:
    """Drop a log line."""


def _unknown_window(_: str | None) -> int | None:
    """Know no model's context window."""
    return None


@dataclass(frozen=True, slots=True, kw_only=True)
class TransportContext:
    """An installed, checked CLI: the provider, where its binary is, what it runs with.

    ``env`` is the CLI's complete environment; ``model`` the agent's default model;
    ``clock`` the monotonic clock every deadline is read on; ``context_window`` the
    catalogue's window of a model (None when it does not know), for a turn whose CLI did not
    report one (an Agent gives :func:`agentshim.models.context_window_of`).
    """

    provider: Provider
    executor: CommandExecutor
    binary_path: str
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    model: str | None = None
    log: Callable[[str], None] = _ignore
    clock: Monotonic = time.monotonic
    context_window: Callable[[str | None], int | None] = _unknown_window

    def spawn(self, argv: Sequence[str], env: Mapping[str, str], cwd: str | None = None) -> Process:
        """Start ``argv`` long-lived on the executor, with exactly ``env``, in ``cwd``."""
        return self.executor.spawn(SpawnRequest(list(argv), cwd=cwd, env=dict(env)))


TransportFactory = Callable[[Callable[[], TransportContext]], Transport]
"""Builds a provider's long-lived transport from a function that resolves its context.

The context is resolved on first use (finding and checking the binary), so a missing CLI
fails the first turn, as on the one-shot path, not the construction of the Agent.
"""


class ContextSource:
    """A transport's CLI: a ready TransportContext, or a function resolved on first use.

    Resolving finds and checks the binary, so a missing CLI fails the first turn rather than
    the construction of the Agent; it happens once, whichever thread asks first.
    """

    __slots__ = ("_context", "_lock", "_resolve")

    def __init__(self, context: TransportContext | Callable[[], TransportContext]) -> None:
        self._lock = threading.Lock()
        self._context = context if isinstance(context, TransportContext) else None
        self._resolve = None if isinstance(context, TransportContext) else context

    def get(self) -> TransportContext:
        """The resolved context (raising what resolving raises: CliNotFoundError, ...)."""
        with self._lock:
            if self._context is None:
                assert self._resolve is not None
                self._context = self._resolve()
            return self._context
