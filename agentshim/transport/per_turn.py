"""PerTurnTransport: one-shot turns on a long-lived transport, a conversation per turn.

For an agent whose only way to run a turn is a long-lived protocol (an ACP agent), a one-shot
turn is a conversation opened, prompted once and closed: the process starts with the turn and
ends with it. The next turn opens another conversation on the same session id, which the agent
reopens, so a Session continues as it does on any one-shot transport.
"""

from __future__ import annotations

import dataclasses
import threading
from typing import Any

from agentshim.core.conversation import (
    ConfigurableConversation,
    Conversation,
    ConversationSpec,
    Transport,
    TurnStop,
)
from agentshim.core.errors import ProviderCapabilityError, SessionStateError
from agentshim.core.events import Emit
from agentshim.core.profile import ProviderProfile
from agentshim.core.turn import TurnRequest, TurnResult

__all__ = ["PerTurnConversation", "PerTurnTransport"]


class PerTurnTransport:
    """A Transport whose every turn runs on a conversation of ``inner`` of its own.

    ``inner`` is the long-lived transport; its refusals (permissions, MCP servers, ...) are
    the same, since each turn's conversation is opened with the same spec.
    """

    def __init__(self, inner: Transport) -> None:
        self.inner = inner

    @property
    def profile(self) -> ProviderProfile:
        """The provider's capabilities (the inner transport's)."""
        return self.inner.profile

    def open(self, spec: ConversationSpec) -> PerTurnConversation:
        """A conversation that opens and closes one of ``inner``'s for each turn."""
        # Checked now, as a one-shot transport checks at open: the first turn would fail anyway.
        self.inner.open(spec).close()
        return PerTurnConversation(self.inner, spec)


class PerTurnConversation:
    """Each turn opens a conversation of the inner transport, runs, and closes it.

    The first turn continues (or forks) the spec's session; every later one continues the
    session the previous turn named. ``interrupt`` stops the turn that runs; ``close``
    closes its conversation too, and refuses later turns.
    """

    def __init__(self, inner: Transport, spec: ConversationSpec) -> None:
        self._inner = inner
        self._spec = spec
        self._lock = threading.Lock()
        self._session_id = spec.resume_session_id
        self._running: Conversation | None = None
        self._closed = False
        # Every mode and setting asked for, applied to each turn's conversation in order.
        self._settings: list[tuple[str, tuple[Any, ...]]] = []

    def set_mode(self, mode_id: str) -> None:
        """Put every later turn's session in mode ``mode_id``.

        Raises:
            ProviderCapabilityError: the inner transport's conversations have no modes.
        """
        self._setting("set_mode", mode_id)

    def set_config_option(self, option_id: str, value: str | bool) -> None:
        """Set the setting ``option_id`` to ``value`` for every later turn.

        Raises:
            ProviderCapabilityError: the inner transport's conversations have no settings.
        """
        self._setting("set_config_option", option_id, value)

    def _setting(self, method: str, *args: Any) -> None:
        probe = self._inner.open(self._spec)
        probe.close()
        if not isinstance(probe, ConfigurableConversation):
            raise ProviderCapabilityError(
                f"{self._inner.profile.display_name} conversations have no modes or settings"
            )
        with self._lock:
            self._settings.append((method, args))

    @property
    def session_id(self) -> str | None:
        """The session the last turn ran in (the spec's before the first)."""
        return self._session_id

    def turn(self, request: TurnRequest, emit: Emit, stop: TurnStop | None = None) -> TurnResult:
        """Open a conversation on the session, run ``request`` on it, close it.

        Raises:
            SessionStateError: the conversation is closed.
            AgentShimError: what the inner conversation's turn raises.
        """
        first = self._session_id == self._spec.resume_session_id
        spec = dataclasses.replace(
            self._spec,
            resume_session_id=self._session_id,
            fork=self._spec.fork and first,
        )
        with self._lock:
            if self._closed:
                raise SessionStateError("this conversation is closed; open a new one")
            conversation = self._inner.open(spec)
            self._running = conversation
            settings = list(self._settings)
        if settings and isinstance(conversation, ConfigurableConversation):
            for method, args in settings:
                getattr(conversation, method)(*args)
        try:
            return conversation.turn(request, emit, stop)
        finally:
            # Kept also when the turn failed: a session the agent named is still the one to
            # continue (a process that died mid-turn left it behind).
            self._session_id = conversation.session_id or self._session_id
            with self._lock:
                self._running = None
            conversation.close()

    def interrupt(self) -> None:
        """Stop the running turn; nothing when idle (thread-safe)."""
        running = self._running_now()
        if running is not None:
            running.interrupt()

    def close(self) -> None:
        """Refuse later turns and close the running turn's conversation (idempotent)."""
        running = self._running_now(closing=True)
        if running is not None:
            running.close()

    def _running_now(self, *, closing: bool = False) -> Conversation | None:
        """The running turn's conversation, if any; with ``closing``, refuse later turns first."""
        with self._lock:
            if closing:
                self._closed = True
            return self._running
