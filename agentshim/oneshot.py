"""OneShotTransport: one CLI process per turn, built from an InstalledCli like every transport.

Every turn is one CLI process (an :class:`~agentshim.cli_agent.AgentSession` turn); the
conversation continues by resuming the id the provider named. The CLI runs with its own
sandbox and approvals off, so this transport accepts ``NativePermissions.bypass()`` only (put
it inside a Confinement). A turn cut short by ``interrupt()`` returns a result marked
``interrupted`` and emits ``TurnInterrupted`` instead of raising.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import replace
from pathlib import Path

from agentshim.cli_agent import AgentSession
from agentshim.core.conversation import (
    ConversationSpec,
    Readiness,
    TransportKind,
    TurnSlot,
    TurnStop,
)
from agentshim.core.errors import (
    CliCheckError,
    CliNotFoundError,
    InvalidRequestError,
    ProviderCapabilityError,
)
from agentshim.core.events import Emit
from agentshim.core.permissions import ApprovalPolicy, NativeMode
from agentshim.core.profile import ProviderProfile
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.execution.executor import CommandExecutor
from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.readiness import check_version
from agentshim.transport.installed import InstalledCli, LazyCli

__all__ = ["OneShotConversation", "OneShotTransport", "probe_cli", "probe_installed"]


class OneShotTransport:
    """A Transport that runs one CLI process per turn.

    ``cli`` is the installed CLI, or a function that finds it on first use (then pass
    ``profile``), as every long-lived transport takes it: finding the CLI looks the binary
    up and health-checks it, and a function lets that failure surface on the first turn (or
    in ``probe()``) instead of at construction. ``turn_timeout`` is the default budget of a
    turn whose request sets none; ``cancel_grace`` is how long an interrupted CLI gets
    between SIGTERM and SIGKILL.
    """

    kind = TransportKind.ONE_SHOT

    def __init__(
        self,
        cli: InstalledCli | Callable[[], InstalledCli],
        *,
        profile: ProviderProfile | None = None,
        turn_timeout: float | None = None,
        cancel_grace: float = 5.0,
        check_timeout: float = 15.0,
    ) -> None:
        if isinstance(cli, InstalledCli):
            profile = cli.provider.profile
        elif profile is None:
            raise InvalidRequestError(
                "profile",
                "missing",
                "pass the provider's profile with a function that finds the CLI",
            )
        self._cli = LazyCli(cli)
        self._profile: ProviderProfile = profile
        self.turn_timeout = turn_timeout
        self.cancel_grace = cancel_grace
        self.check_timeout = check_timeout

    @property
    def profile(self) -> ProviderProfile:
        """The provider's static capabilities."""
        return self._profile

    def installed(self) -> InstalledCli:
        """The CLI turns run, found and checked on first use.

        Raises:
            CliNotFoundError: the binary is not on the PATH.
            CliCheckError: its health check failed.
        """
        return self._cli.get()

    def open(self, spec: ConversationSpec) -> OneShotConversation:
        """Open a conversation (resuming ``spec.resume_session_id`` if set); no process starts yet.

        Raises:
            ProviderCapabilityError: ``spec.permissions`` is not bypass.
        """
        check_permissions(self._profile, spec)
        cli = self._cli.get()
        if spec.model is not None and spec.model != cli.model:
            cli = replace(cli, model=spec.model)
        return OneShotConversation(
            cli, spec, timeout=self.turn_timeout, cancel_grace=self.cancel_grace
        )

    def probe(self) -> Readiness:
        """Report whether the CLI is installed, runs, and (where it can tell) is logged in."""
        return probe_installed(self._cli.get, self._profile, timeout=self.check_timeout)


def probe_installed(
    find: Callable[[], InstalledCli], profile: ProviderProfile, *, timeout: float = 15.0
) -> Readiness:
    """Readiness of the CLI ``find`` finds (see :func:`probe_cli`); never calls a model."""
    try:
        cli = find()
    except CliNotFoundError as error:
        return Readiness(profile.name, binary_found=False, detail=str(error))
    except CliCheckError as error:
        return Readiness(profile.name, binary_found=True, binary_path=error.path, detail=str(error))
    return probe_cli(
        cli.provider.profile,
        cli.executor,
        cli.env,
        binary_path=cli.binary_path,
        timeout=timeout,
    )


def check_permissions(profile: ProviderProfile, spec: ConversationSpec) -> None:
    """Refuse a spec whose native permissions (or hooks) the one-shot path cannot honour."""
    if spec.hooks is not None:
        raise ProviderCapabilityError(
            f"{profile.display_name} one-shot turns cannot call hook callbacks back; drop "
            "hooks, or use Claude Code's TransportKind.LONG_LIVED, which has them"
        )
    if not isinstance(spec.approvals, ApprovalPolicy):
        raise ProviderCapabilityError(
            f"{profile.display_name} one-shot turns run with approvals off, so an approval "
            "handler would never be asked; pass an ApprovalPolicy, or use "
            "TransportKind.LONG_LIVED where the provider offers it"
        )
    mode = spec.permissions.mode
    if mode is not NativeMode.BYPASS:
        raise ProviderCapabilityError(
            f"{profile.display_name} one-shot turns run with the CLI's own sandbox and "
            f"approvals off: only NativePermissions.bypass() is possible there, not "
            f"{mode.value}; run the agent inside a Confinement with bypass(), or use a "
            "transport that supports this mode"
        )


class OneShotConversation:
    """One provider conversation over an AgentSession: one CLI process per turn."""

    def __init__(
        self,
        cli: InstalledCli,
        spec: ConversationSpec,
        *,
        timeout: float | None = None,
        cancel_grace: float = 5.0,
    ) -> None:
        # No leases here: the Session above takes them, once per turn, for every transport.
        self._session = AgentSession(
            cli,
            cwd=spec.cwd,
            timeout=timeout,
            session_id=spec.resume_session_id,
            previous_usage=spec.previous_usage,
            cancel_grace=cancel_grace,
            stall_timeout=spec.stall_timeout,
            fork=spec.fork,
        )
        self._spec = spec
        self._slot = TurnSlot()

    @property
    def session_id(self) -> str | None:
        """The provider's id for this conversation; None until a turn names one."""
        return self._session.session_id

    def turn(self, request: TurnRequest, emit: Emit, stop: TurnStop | None = None) -> TurnResult:
        """Run one turn as one CLI process; events go to ``emit`` on this thread.

        The outcome is ``AgentSession.turn``'s: a stop (``interrupt()`` or ``stop``) that
        comes before the CLI starts makes the turn raise TurnCancelledError with nothing run;
        once the CLI runs, it is stopped and the turn returns a result marked ``interrupted``.

        Raises:
            SessionStateError: the conversation is closed, or a turn is already running.
            TurnCancelledError: stopped before the CLI started.
            AgentShimError: the turn failed (unless it was interrupted while the CLI ran).
        """
        turn_stop = self._slot.begin(stop)
        try:
            return self._session.turn(self._with_defaults(request), on_event=emit, stop=turn_stop)
        finally:
            self._slot.end()

    def _with_defaults(self, request: TurnRequest) -> TurnRequest:
        spec = self._spec
        if not request.mcp_servers and spec.mcp_servers:
            request = replace(request, mcp_servers=tuple(spec.mcp_servers))
        if not request.tools and spec.tools:
            request = replace(request, tools=tuple(spec.tools))
        if request.reasoning_effort is None and spec.reasoning_effort is not None:
            request = replace(request, reasoning_effort=spec.reasoning_effort)
        return request

    def interrupt(self) -> None:
        """Stop the running turn's process (SIGTERM, SIGKILL after the grace); thread-safe."""
        self._slot.interrupt()

    def close(self) -> None:
        """Refuse further turns; idempotent. There is no process between turns to stop."""
        self._slot.close()


def probe_cli(
    profile: ProviderProfile,
    executor: CommandExecutor,
    env: Mapping[str, str],
    *,
    binary_path: str | None = None,
    timeout: float = 15.0,
) -> Readiness:
    """Find the CLI, run ``--version``, and look for credentials; never calls a model.

    Credentials count as seen when one of the profile's API-key variables is set in ``env``
    or, on the host, one of its login files exists under ``$HOME``; otherwise
    ``authenticated`` is None (a keychain login, say, is invisible from here).
    """
    name = profile.name
    if binary_path is None:
        try:
            binary_path = executor.find_binary(profile.binary, env)
        except CliNotFoundError as error:
            return Readiness(name, binary_found=False, detail=str(error))
    try:
        version = check_version(executor, binary_path, env, timeout=timeout)
    except CliCheckError as error:
        return Readiness(name, True, binary_path, detail=f"--version failed: {error.detail}")
    authenticated = _credentials_seen(
        profile, env, on_host=isinstance(executor, HostCommandExecutor)
    )
    return Readiness(
        name,
        True,
        binary_path,
        version=version or "unknown",
        authenticated=authenticated,
        detail="" if authenticated else "credentials not visible from here",
    )


def _credentials_seen(
    profile: ProviderProfile, env: Mapping[str, str], *, on_host: bool
) -> bool | None:
    if any(env.get(var) for var in profile.auth_env_vars):
        return True
    if on_host:
        home = env.get("HOME") or os.path.expanduser("~")
        if any((Path(home) / relative).is_file() for relative in profile.auth_files):
            return True
    return None
