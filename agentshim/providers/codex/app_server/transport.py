"""CodexAppServerTransport: one long-lived ``codex app-server`` process per conversation.

The transport itself is cheap to import: the generated protocol, and everything that speaks
it, loads when the first conversation opens (``conversation.py``), so ``import agentshim`` and
one-shot Codex turns never pay for it.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from agentshim.core.conversation import ConversationSpec
from agentshim.core.errors import ProviderCapabilityError
from agentshim.providers.codex.provider import CodexProvider
from agentshim.transport.context import TransportContext
from agentshim.transport.conversation import ProcessOptions, ProcessTransport
from agentshim.transport.shared import PoolSlot, ProcessPool, ProcessSharing, prewarm_pool
from agentshim.transport.warm import WarmIdle

from .profile import APP_SERVER_PROFILE

if TYPE_CHECKING:
    from typing_extensions import Unpack

    from .conversation import CodexAppServerConversation

__all__ = ["CodexAppServerTransport", "Reaper"]

Reaper = Callable[[str], int]
"""Ends every process whose environment carries the given tool marker; returns how many."""


def _thread_of(params: Mapping[str, Any]) -> str | None:
    """The thread an app-server frame is about (every thread event names its ``threadId``)."""
    thread = params.get("threadId")
    return thread if isinstance(thread, str) else None


class CodexAppServerTransport(ProcessTransport):
    """A Transport whose conversations each keep one ``codex app-server`` process.

    The keywords are :class:`~agentshim.transport.conversation.ProcessTransport`'s, and
    ``reap``, which ends the commands an interrupted turn left running (default: every process
    carrying the conversation's marker, found in ``/proc`` where there is one).

    With ``sharing`` the conversations share processes: each is a thread on one of at most
    ``sharing.max_processes`` processes per process-wide configuration (the environment and
    the MCP servers' ``--config`` flags; the conversation's cwd, permissions, model and tool
    marker go per thread). A conversation with tools of its own keeps a process of its own.
    See ``docs/sessions.md``.
    """

    def __init__(
        self,
        context: TransportContext | Callable[[], TransportContext],
        *,
        reap: Reaper | None = None,
        sharing: ProcessSharing | None = None,
        **options: Unpack[ProcessOptions],
    ) -> None:
        super().__init__(context, **options)
        self.reap = reap
        self.sharing = sharing
        self._pools = PoolSlot(_thread_of)

    def pool(self) -> ProcessPool | None:
        """The shared processes of this transport's conversations; None when not sharing."""
        return self._pools.get(self.sharing, self.context, close_grace=self.close_grace)

    profile = APP_SERVER_PROFILE
    """Codex CLI's capabilities over app-server."""

    def prewarm(self, count: int, spec: ConversationSpec, idle: WarmIdle | None = None) -> None:
        """Start ``count`` processes for conversations like ``spec`` and keep them warm.

        Each is started and handshaken (``initialize``, one thread made and left) before
        this returns, so a new conversation's first turn starts without spawning. At most
        ``sharing.max_processes`` are started. With ``idle``, one that serves no conversation
        for ``idle.after`` seconds is ended.

        Raises:
            ProviderCapabilityError: the transport does not share processes.
            CliDiedError / CliTimeoutError: a process could not be started.
        """
        prewarm_pool(self.pool(), lambda: self.open(spec), count, idle)

    def release_warm(self) -> None:
        """End the warm processes no conversation is on."""
        pool = self.pool()
        if pool is not None:
            pool.cool()

    def open(self, spec: ConversationSpec) -> CodexAppServerConversation:
        """Open a conversation; its process starts with its first turn.

        Raises:
            ProviderCapabilityError: the CLI's provider is not Codex, or ``spec`` asks for
                hook callbacks (none are offered over app-server). A fork (``spec.fork`` with
                ``resume_session_id``) opens with ``thread/fork``: a new thread with that
                one's history, which the conversation then continues.
            InvalidSessionIdError: ``spec.resume_session_id`` is not safe to pass.
        """
        provider = self._provider(CodexProvider, "Codex's app-server protocol")
        if spec.hooks is not None:
            raise ProviderCapabilityError(
                "Codex has no hook callbacks agentshim can register; drop hooks (Claude Code's "
                "stream transport has them)"
            )
        from .conversation import CodexAppServerConversation

        return CodexAppServerConversation(self, provider, spec, reap=self.reap, pool=self.pool())
