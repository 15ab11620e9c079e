"""Agent: a provider's transport plus the permissions, clock, ids and recovery policy its sessions share.

``Agent(name, permissions=..., approvals=...)`` builds the transport for a provider name on an
executor (the host by default, wrapped by a Confinement when one is given); ``Agent(transport,
...)`` uses a ready-made one. ``Agent.session(cwd)`` opens a :class:`~agentshim.session.Session`.
Sessions of one Agent never run turns in the same provider conversation at the same time: the
Agent keeps a lock per (provider, session id).
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from agentshim.cli_agent import CliAgent
from agentshim.core.checkpoints import CheckpointStore
from agentshim.core.clock import Clock, SystemClock
from agentshim.core.conversation import (
    ConversationSpec,
    ProbingTransport,
    Readiness,
    Transport,
    TransportKind,
)
from agentshim.core.errors import AgentShimError, InvalidRequestError, ProviderCapabilityError
from agentshim.core.events import AgentEventHandler
from agentshim.core.ids import IdAllocator, RandomIds
from agentshim.core.locks import KeyedLocks
from agentshim.core.mcp import McpServer, StdioMcpServer
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.profile import ProviderProfile, RenewalBudget
from agentshim.core.session_policy import RetryPolicy, SessionPolicy
from agentshim.core.usage import ProviderUsage
from agentshim.execution.confinement import Confinement, confine
from agentshim.execution.executor import CommandExecutor
from agentshim.execution.host import HostCommandExecutor
from agentshim.oneshot import OneShotTransport, check_permissions
from agentshim.providers import DEFAULT_CATALOG, ProviderCatalog
from agentshim.session import Session

__all__ = ["Agent"]


def _ignore(_: str) -> None:
    """Drop a log line (the default logger)."""


class Agent:
    """One provider, with everything its sessions share.

    ``permissions`` and ``approvals`` are required: what the agent may do is always the
    caller's decision. ``retry`` and ``renewal`` set the recovery policy of every session
    (``Agent.session`` may override ``renewal``).

    Built from a provider name, the transport runs on ``executor`` (host by default); with a
    ``confinement`` every process runs inside it and the confinement supplies the env, so
    passing ``env`` too is an InvalidRequestError. Built from a ready-made Transport, passing
    ``executor``, ``confinement``, ``env``, ``transport`` or ``catalog`` is one too.

    Raises:
        InvalidRequestError: ``permissions`` or ``approvals`` of the wrong type, or options
            that cannot be combined (see above).
        ProviderCapabilityError: the transport cannot honour ``permissions``, or the provider
            has no transport of the requested kind.
    """

    def __init__(
        self,
        provider: str | Transport,
        *,
        permissions: NativePermissions,
        approvals: ApprovalPolicy,
        model: str | None = None,
        executor: CommandExecutor | None = None,
        confinement: Confinement | None = None,
        clock: Clock | None = None,
        ids: IdAllocator | None = None,
        retry: RetryPolicy | None = None,
        renewal: RenewalBudget | None = None,
        event_handlers: Sequence[AgentEventHandler] = (),
        env: Mapping[str, str] | None = None,
        log: Callable[[str], None] | None = None,
        check_timeout: float = 15.0,
        transport: TransportKind | None = None,
        catalog: ProviderCatalog | None = None,
    ) -> None:
        if not isinstance(permissions, NativePermissions):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "permissions",
                f"{permissions!r} is not a NativePermissions",
                f"Agent permissions must be a NativePermissions, not {permissions!r}; build one "
                "with NativePermissions.bypass(), read_only() or workspace_write()",
            )
        if not isinstance(approvals, ApprovalPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "approvals",
                f"{approvals!r} is not an ApprovalPolicy",
                f"Agent approvals must be an ApprovalPolicy (such as ApprovalPolicy.DENY), "
                f"not {approvals!r}",
            )
        self.permissions = permissions
        self.approvals = approvals
        self.model = model
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.ids: IdAllocator = ids if ids is not None else RandomIds()
        self.retry = retry if retry is not None else RetryPolicy()
        self.renewal = renewal
        self.event_handlers: tuple[AgentEventHandler, ...] = tuple(event_handlers)
        self.log: Callable[[str], None] = log or _ignore
        self._confinement = confinement
        # The registry belongs to this Agent: sessions of other Agents are not serialized.
        self._locks = KeyedLocks()

        if not isinstance(provider, str):
            passed = [
                name
                for name, value in (
                    ("executor", executor),
                    ("confinement", confinement),
                    ("env", env),
                    ("transport", transport),
                    ("catalog", catalog),
                )
                if value is not None
            ]
            if passed:
                raise InvalidRequestError(
                    passed[0],
                    "cannot be combined with a ready-made Transport",
                    f"{', '.join(passed)} cannot be combined with a ready-made Transport; "
                    "configure the transport itself",
                )
            self.transport: Transport = provider
            return

        if confinement is not None and env is not None:
            raise InvalidRequestError(
                "env",
                "given with a confinement",
                "pass env or confinement, not both: a confined agent runs with the "
                "confinement's env",
            )
        kind = transport if transport is not None else TransportKind.ONE_SHOT
        chosen_catalog = catalog if catalog is not None else DEFAULT_CATALOG
        profile = chosen_catalog.plugin(provider).profile
        if kind is not TransportKind.ONE_SHOT:
            raise ProviderCapabilityError(
                f"{profile.display_name} has no long-lived stream transport in this version; "
                "use TransportKind.ONE_SHOT"
            )
        check_permissions(profile, ConversationSpec(permissions=permissions, approvals=approvals))
        base = executor if executor is not None else HostCommandExecutor()
        run_on = confine(base, confinement) if confinement is not None else base
        agent_env = dict(confinement.env) if confinement is not None else env
        log_line = self.log

        def build() -> CliAgent:
            return CliAgent(
                provider,
                executor=run_on,
                env=agent_env,
                check_timeout=check_timeout,
                log=log_line,
                catalog=chosen_catalog,
            )

        self.transport = OneShotTransport(build, profile=profile, check_timeout=check_timeout)

    @property
    def profile(self) -> ProviderProfile:
        """The provider's static capabilities."""
        return self.transport.profile

    def probe(self) -> Readiness:
        """Report readiness (binary found, version, login where visible) without a model call."""
        transport = self.transport
        if isinstance(transport, ProbingTransport):
            return transport.probe()
        return Readiness(
            self.profile.name,
            binary_found=False,
            detail="this transport cannot report its readiness",
        )

    def session(
        self,
        cwd: str | None = None,
        *,
        mcp_servers: Sequence[McpServer] = (),
        reasoning_effort: str | None = None,
        checkpoints: CheckpointStore | None = None,
        checkpoint_key: str | None = None,
        idle_release_after: float | None = None,
        resume_session_id: str | None = None,
        previous_usage: ProviderUsage | None = None,
        renewal: RenewalBudget | None = None,
    ) -> Session:
        """Open a Session working in ``cwd`` (a host path).

        When confined, ``cwd`` and the absolute paths of stdio MCP servers are mapped to the
        paths the agent sees. Given ``checkpoints`` and ``checkpoint_key`` the session
        continues the conversation saved under the key (``resume_session_id`` wins over it).

        Raises:
            InvalidRequestError: ``cwd`` (or an MCP server's host path) is not visible inside
                the confinement, only one of checkpoints and checkpoint_key is given, or a
                session setting is invalid.
        """
        spec = ConversationSpec(
            permissions=self.permissions,
            approvals=self.approvals,
            cwd=self._agent_path(cwd) if cwd is not None else None,
            model=self.model,
            mcp_servers=tuple(self._map_server(server) for server in mcp_servers),
            reasoning_effort=reasoning_effort,
            resume_session_id=resume_session_id,
            previous_usage=previous_usage,
        )
        policy = SessionPolicy(
            retry=self.retry,
            renewal=renewal if renewal is not None else self.renewal,
            idle_release_after=idle_release_after,
        )
        return Session(
            self.transport,
            spec,
            policy=policy,
            clock=self.clock,
            ids=self.ids,
            event_handlers=self.event_handlers,
            checkpoints=checkpoints,
            checkpoint_key=checkpoint_key,
            locks=self._locks,
            log=self.log,
        )

    def _agent_path(self, host_path: str) -> str:
        if self._confinement is None:
            return host_path
        try:
            return self._confinement.agent_path(host_path)
        except ValueError as error:
            # A caller's own Confinement may raise a plain ValueError, as its protocol allows.
            if isinstance(error, AgentShimError):
                raise
            raise InvalidRequestError(
                "cwd",
                str(error),
                f"cwd {host_path!r} cannot be seen inside the confinement: {error}",
            ) from error

    def _map_server(self, server: McpServer) -> McpServer:
        if self._confinement is None or not isinstance(server, StdioMcpServer):
            return server
        return replace(
            server,
            command=self._map_mcp_path(server.name, server.command),
            args=tuple(self._map_mcp_path(server.name, arg) for arg in server.args),
        )

    def _map_mcp_path(self, server: str, value: str) -> str:
        """Map an absolute host path; leave anything else, or a path only the agent has."""
        if self._confinement is None or not value.startswith("/"):
            return value
        try:
            return self._confinement.agent_path(value)
        except ValueError:
            if os.path.exists(value):
                raise InvalidRequestError(
                    "mcp_servers",
                    f"{value!r} is not visible inside the confinement",
                    f"MCP server {server!r} (mcp_servers) uses {value!r}, which exists on the "
                    "host but is not visible inside the confinement; mount it or use a path "
                    "inside",
                ) from None
            return value
