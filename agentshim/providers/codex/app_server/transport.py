"""CodexAppServerTransport: one long-lived ``codex app-server`` process per conversation.

The transport itself is cheap to import: the generated protocol, and everything that speaks
it, loads when the first conversation opens (``conversation.py``), so ``import agentshim`` and
one-shot Codex turns never pay for it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from agentshim.core.conversation import ConversationSpec, TransportKind
from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.profile import ProviderProfile
from agentshim.providers.codex.provider import CodexProvider
from agentshim.transport.context import ContextSource, TransportContext

from .profile import APP_SERVER_PROFILE

if TYPE_CHECKING:
    from .conversation import CodexAppServerConversation

__all__ = ["CodexAppServerTransport", "Reaper"]

Reaper = Callable[[str], int]
"""Ends every process whose environment carries the given tool marker; returns how many."""


class CodexAppServerTransport:
    """A Transport whose conversations each keep one ``codex app-server`` process.

    ``context`` resolves the installed CLI on first use. ``turn_timeout`` is the budget of a
    turn whose request sets none; ``interrupt_grace`` how long an interrupted turn may take to
    end before its process is killed; ``close_grace`` how long each step of closing a process
    is given. ``reap`` ends the commands an interrupted turn left running (default: found by
    their marker in ``/proc``, where there is one).
    """

    kind = TransportKind.STREAM

    def __init__(
        self,
        context: TransportContext | Callable[[], TransportContext],
        *,
        turn_timeout: float | None = None,
        interrupt_grace: float = 10.0,
        close_grace: float = 5.0,
        reap: Reaper | None = None,
    ) -> None:
        self._source = ContextSource(context)
        self.turn_timeout = turn_timeout
        self.interrupt_grace = interrupt_grace
        self.close_grace = close_grace
        self.reap = reap

    @property
    def profile(self) -> ProviderProfile:
        """Codex CLI's capabilities over app-server."""
        return APP_SERVER_PROFILE

    @property
    def context(self) -> TransportContext:
        """The resolved CLI (found and checked on first use)."""
        return self._source.get()

    def open(self, spec: ConversationSpec) -> CodexAppServerConversation:
        """Open a conversation; its process starts with its first turn.

        Raises:
            ProviderCapabilityError: the CLI's provider is not Codex, or ``spec`` asks for a
                fork (not offered over app-server yet).
            InvalidSessionIdError: ``spec.resume_session_id`` is not safe to pass.
        """
        context = self.context
        provider = context.provider
        if not isinstance(provider, CodexProvider):
            raise ProviderCapabilityError(
                f"the app-server transport speaks Codex's protocol, not "
                f"{provider.profile.display_name}'s"
            )
        if spec.fork:
            raise ProviderCapabilityError(
                "the Codex app-server transport does not fork conversations; fork on "
                "TransportKind.ONE_SHOT"
            )
        from .conversation import CodexAppServerConversation

        return CodexAppServerConversation(
            context,
            provider,
            spec,
            turn_timeout=self.turn_timeout,
            interrupt_grace=self.interrupt_grace,
            close_grace=self.close_grace,
            reap=self.reap,
        )
