"""InstalledCli: the found, checked, environment-composed agent CLI every transport runs.

Both doors stand on it: an ``Agent`` resolves one (lazily, once) from a provider, an executor
and an env, and builds its transport from it, one-shot or long-lived alike; a ``CliAgent`` is
the script facade over one.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from agentshim.core._checks import seconds
from agentshim.core.clock import Monotonic
from agentshim.core.conversation import Transport
from agentshim.core.errors import CliNotFoundError
from agentshim.core.provider import Provider
from agentshim.execution.env import interactive_env
from agentshim.execution.executor import CommandExecutor
from agentshim.execution.process import Process, SpawnRequest

__all__ = [
    "EnvDefaultsProvider",
    "InstalledCli",
    "LazyCli",
    "TransportFactory",
    "ignore_log_line",
    "required_env",
]


def ignore_log_line(_: str) -> None:
    """Drop a log line (the default logger of every door that takes a ``log``)."""


def _unknown_window(_: str | None) -> int | None:
    """Know no model's context window."""
    return None


@runtime_checkable
class EnvDefaultsProvider(Protocol):
    """A provider that declares environment defaults for its CLI (optional).

    :meth:`InstalledCli.find` adds each of ``env_defaults`` where the env it is given does
    not set it.
    """

    @property
    def env_defaults(self) -> Mapping[str, str]:
        """Variables the CLI should see unless the caller's env sets them."""
        ...


@dataclass(frozen=True, slots=True, kw_only=True)
class InstalledCli:
    """An installed, checked CLI: the provider, where its binary is, what it runs with.

    ``env`` is the CLI's complete environment; ``model`` the default model of its turns;
    ``log`` where diagnostics go; ``monotonic`` the monotonic clock every deadline is read on;
    ``context_window`` the catalogue's window of a model (None when it does not know), for a
    turn whose CLI did not report one (an Agent gives :func:`agentshim.models.context_window_of`).
    Build one with :meth:`find`, which looks the binary up and checks it.
    """

    provider: Provider
    executor: CommandExecutor
    binary_path: str
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    model: str | None = None
    log: Callable[[str], None] = ignore_log_line
    monotonic: Monotonic = time.monotonic
    context_window: Callable[[str | None], int | None] = _unknown_window

    def spawn(self, argv: Sequence[str], env: Mapping[str, str], cwd: str | None = None) -> Process:
        """Start ``argv`` long-lived on the executor, with exactly ``env``, in ``cwd``."""
        return self.executor.spawn(SpawnRequest(list(argv), cwd=cwd, env=dict(env)))

    @classmethod
    def find(
        cls,
        provider: Provider,
        executor: CommandExecutor,
        env: Mapping[str, str] | None = None,
        *,
        model: str | None = None,
        check_timeout: float = 15.0,
        log: Callable[[str], None] = ignore_log_line,
        monotonic: Monotonic = time.monotonic,
        context_window: Callable[[str | None], int | None] = _unknown_window,
    ) -> InstalledCli:
        """Find ``provider``'s binary on the env's PATH, check it, and compose its env.

        ``env=None`` takes the user's interactive shell environment, so the CLI sees the same
        PATH and credentials it does in a terminal. The provider's ``env_defaults`` (see
        :class:`EnvDefaultsProvider`) are added where the env does not set them;
        ``profile.container_env`` is set when running as root, over any value the env gives,
        since some CLIs refuse their permission-bypass flags to root without exactly that value.

        Raises:
            CliNotFoundError: the binary is not on the PATH (with the install command).
            CliCheckError: its ``--version`` check failed.
            InvalidRequestError: ``check_timeout`` is not a positive number of seconds.
        """
        check_timeout = seconds("InstalledCli.find", "check_timeout", check_timeout, positive=True)
        profile = provider.profile
        composed = _compose_env(provider, env)
        try:
            binary_path = executor.find_binary(profile.binary, composed)
        except CliNotFoundError as error:
            install = profile.install_command
            if install is None or error.install is not None:
                raise
            raise CliNotFoundError(
                error.binary, f"{error}; install it with: {install}", install=install
            ) from None
        # A provider may say its binary has no --version to check (an ACP adapter).
        if getattr(provider, "checks_version", True) is not False:
            executor.check_binary(binary_path, composed, timeout=check_timeout)
        return cls(
            provider=provider,
            executor=executor,
            binary_path=binary_path,
            env=composed,
            model=model,
            log=log,
            monotonic=monotonic,
            context_window=context_window,
        )


TransportFactory = Callable[[Callable[[], InstalledCli]], Transport]
"""Builds a provider's transport from a function that resolves its installed CLI.

The CLI is resolved on first use (finding and checking the binary), so a missing CLI fails
the first turn (or ``probe()``), not the construction of the Agent.
"""


class LazyCli:
    """A transport's CLI: a ready InstalledCli, or a function resolved on first use.

    Resolving finds and checks the binary, so a missing CLI fails the first turn rather than
    the construction of the Agent; it happens once, whichever thread asks first.
    """

    __slots__ = ("_cli", "_lock", "_resolve")

    def __init__(self, cli: InstalledCli | Callable[[], InstalledCli]) -> None:
        self._lock = threading.Lock()
        self._cli = cli if isinstance(cli, InstalledCli) else None
        self._resolve = None if isinstance(cli, InstalledCli) else cli

    def get(self) -> InstalledCli:
        """The resolved CLI (raising what resolving raises: CliNotFoundError, ...)."""
        with self._lock:
            if self._cli is None:
                assert self._resolve is not None
                self._cli = self._resolve()
            return self._cli


def _compose_env(provider: Provider, env: Mapping[str, str] | None) -> dict[str, str]:
    composed = dict(interactive_env()) if env is None else dict(env)
    defaults: Mapping[str, str] = (
        provider.env_defaults if isinstance(provider, EnvDefaultsProvider) else {}
    )
    for key, value in defaults.items():
        composed.setdefault(key, value)
    composed.update(required_env(provider))
    return composed


def required_env(provider: Provider) -> Mapping[str, str]:
    """Values ``provider``'s CLI needs to run at all as root; they win over any other value.

    Claude Code refuses its bypass flags to root unless IS_SANDBOX=1, and does not accept an
    inherited IS_SANDBOX=yes.
    """
    return provider.profile.container_env if _running_as_root() else {}


def _running_as_root() -> bool:
    geteuid = getattr(os, "geteuid", None)
    return geteuid is not None and geteuid() == 0
