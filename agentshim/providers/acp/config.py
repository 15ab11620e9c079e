"""AcpAgentConfig: any agent that speaks ACP, named by its command line.

What a caller says about an agent agentshim has no provider for: how to start it, what to
call it, its environment, which models and modes it offers, which of its modes each native
permission mode is, and the client methods it may call. Everything else is the protocol's
common ground (:class:`~agentshim.acp.dialect.AcpDialect`'s defaults), read from the agent's
own ``initialize`` answer.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from agentshim.acp.clientside import AcpClientMethods
from agentshim.acp.dialect import AcpArgv, AcpDialect
from agentshim.core._readonly import empty_mapping
from agentshim.core.errors import InvalidRequestError
from agentshim.core.permissions import NativeMode
from agentshim.core.profile import ProviderProfile

__all__ = ["AcpAgentConfig"]

_ALL_MODES = (NativeMode.BYPASS, NativeMode.WORKSPACE_WRITE, NativeMode.READ_ONLY)


def _no_client() -> AcpClientMethods:
    return AcpClientMethods()


@dataclass(frozen=True, slots=True, kw_only=True)
class AcpAgentConfig:
    """An ACP agent, as a caller describes it.

    ``command`` starts it: a list of words, or one string split as a shell would (no shell
    runs it). Its first word is found on PATH; with ``version_check`` it must also answer
    ``--version`` (many ACP adapters do not, so it is off by default). ``name`` is the
    provider name an ``Agent`` is built with; ``display_name`` what messages call it (the
    name by default). ``env`` is added to its environment (credentials go there, never in
    argv). ``models`` and ``modes`` are the model and mode ids it offers, where the caller
    knows them (the agent's own answer names them too). ``permission_modes`` is the agent's
    mode for each native permission mode: a session is switched to it when it starts (an
    agent that starts in a mode that never asks would otherwise never ask). ``auth_method``
    is one of its ``authMethods`` the caller has credentials for: ``authenticate`` is called
    with it. ``notice_prefixes`` mark agent text that is its status, not the answer.
    ``client`` turns on client methods (file reads and writes, elicitation).
    ``cumulative_usage`` says the ``usage`` of its prompt results adds up over the session,
    as the protocol describes it (a turn's share is then the difference).

    Raises:
        InvalidRequestError: an empty name or command, or a word that is not a str.
    """

    name: str
    command: Sequence[str] | str
    display_name: str = ""
    env: Mapping[str, str] = field(default_factory=empty_mapping)
    models: Sequence[str] = ()
    modes: Sequence[str] = ()
    permission_modes: Mapping[NativeMode, str] = field(default_factory=dict[NativeMode, str])
    auth_method: str | None = None
    notice_prefixes: Sequence[str] = ()
    client: AcpClientMethods = field(default_factory=_no_client)
    cumulative_usage: bool = True
    version_check: bool = False

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not self.name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "AcpAgentConfig.name", "is empty", "name the agent (the provider name)"
            )
        words = shlex.split(self.command) if isinstance(self.command, str) else list(self.command)
        if not words or not all(isinstance(word, str) and word for word in words):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "AcpAgentConfig.command",
                f"{self.command!r:.120} is not a command",
                "give the agent's command line, such as 'my-agent --acp' or ['python', 'agent.py']",
            )
        object.__setattr__(self, "command", tuple(words))
        object.__setattr__(self, "env", dict(self.env))
        object.__setattr__(self, "models", tuple(self.models))
        object.__setattr__(self, "modes", tuple(self.modes))
        object.__setattr__(self, "notice_prefixes", tuple(self.notice_prefixes))
        object.__setattr__(self, "permission_modes", dict(self.permission_modes))

    @property
    def words(self) -> tuple[str, ...]:
        """The command line, split into words."""
        return tuple(self.command)

    def profile(self) -> ProviderProfile:
        """The agent's capabilities: resumable, every native permission mode, its binary."""
        return ProviderProfile(
            name=self.name,
            display_name=self.display_name or self.name,
            binary=self.words[0],
            supports_resume=True,
            native_permission_modes=_ALL_MODES,
        )

    def argv(self, args: AcpArgv) -> list[str]:
        """The command line, with the binary as found on PATH; a model goes in band."""
        return [args.binary_path or self.words[0], *self.words[1:], *args.extra_args]

    def is_notice(self, text: str) -> bool:
        """Whether agent text starts with one of the ``notice_prefixes``."""
        return bool(self.notice_prefixes) and text.startswith(tuple(self.notice_prefixes))

    def dialect(self) -> AcpDialect:
        """How this agent speaks ACP: the protocol's common ground, with the caller's switches."""
        return AcpDialect(
            profile=self.profile(),
            argv=self.argv,
            notice=self.is_notice,
            env=self._env,
            cumulative_usage=self.cumulative_usage,
            auth_method=self.auth_method,
            permission_modes=dict(self.permission_modes),
        )

    def _env(self, args: AcpArgv) -> Mapping[str, str]:
        del args
        return dict(self.env)
