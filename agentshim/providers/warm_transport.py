"""The warm pool of a long-lived transport whose processes can start ahead of a conversation.

Claude Code's stream-json and Pi's rpc transports both keep processes started before any
conversation asks (``prewarm``): :class:`WarmTransport` holds them and starts them,
:class:`WarmConversation` takes one that starts exactly as its own would. What a process says
to be ready (its hello) and when a conversation may take one stay each transport's own.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Protocol

from agentshim.core.conversation import ConversationSpec
from agentshim.core.events import Emit
from agentshim.transport.channel import Channel
from agentshim.transport.conversation import (
    ProcessConversation,
    ProcessOptions,
    ProcessTransport,
    TurnT,
)
from agentshim.transport.installed import InstalledCli
from agentshim.transport.warm import WarmIdle, WarmProcesses

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["Hello", "WarmConversation", "WarmTransport"]


class Hello(Protocol):
    """Asks a new process what shows it is ready, and reads (by ``monotonic``) until it answers.

    Raises:
        CliExitError / CliTimeoutError: it ended first, or did not answer in time.
    """

    def __call__(self, channel: Channel, monotonic: Callable[[], float]) -> None:
        """Return once the process on ``channel`` is ready."""
        ...


class WarmTransport(ProcessTransport):
    """A long-lived transport with a pool of processes started ahead (``warm``).

    The constructor's keywords are :class:`~agentshim.transport.conversation.ProcessTransport`'s.
    """

    def __init__(
        self,
        context: InstalledCli | Callable[[], InstalledCli],
        **options: Unpack[ProcessOptions],
    ) -> None:
        super().__init__(context, **options)
        self.warm = WarmProcesses(self.close_grace)

    def release_warm(self) -> None:
        """End the warm processes no conversation took."""
        self.warm.release()

    def _start_warm(
        self,
        count: int,
        launch: tuple[Sequence[str], Mapping[str, str]],
        cwd: str | None,
        hello: Hello,
        idle: WarmIdle | None,
    ) -> None:
        """Start ``count`` processes of ``launch`` (argv, env) in ``cwd``, each ready on return.

        Raises:
            CliDiedError / CliTimeoutError: a process ended or did not answer its hello in time.
        """
        context = self.context
        ready = functools.partial(hello, monotonic=context.monotonic)
        for _ in range(count):
            self.warm.start(context, launch, cwd, ready, idle)


class WarmConversation(ProcessConversation[TurnT]):
    """A conversation of a :class:`WarmTransport`, which may take one of its warm processes."""

    def __init__(self, transport: WarmTransport, spec: ConversationSpec, *, name: str) -> None:
        super().__init__(transport, spec, name=name)
        self._warm = transport.warm

    def _adopt_warm_like(
        self, argv: list[str], env: Mapping[str, str], emit: Emit
    ) -> Channel | None:
        """A warm process started as ``argv`` and ``env`` would start one, now this conversation's.

        None when none waits.
        """
        warm = self._warm.take(argv, self._spec.cwd, env)
        return None if warm is None else self._adopt_warm(warm, argv, emit)
