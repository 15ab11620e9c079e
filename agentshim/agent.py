"""Agent: a provider's transport plus the permissions, clock, ids and recovery policy its sessions share.

``Agent(name, permissions=..., approvals=...)`` resolves the provider's installed CLI
(:class:`~agentshim.transport.installed.InstalledCli`, found and checked once, on first use)
on an executor (the host by default, wrapped by a Confinement when one is given) and builds
its transport from it, one-shot or long-lived alike; ``Agent(transport, ...)`` uses a
ready-made Transport. ``Agent.start_session(cwd)`` opens a :class:`~agentshim.session.Session`.
Sessions of one Agent never run turns in the same provider conversation at the same time:
they take the Agent's in-process leases, once per turn. Given ``leases``
(``SqliteStore(path)`` for the processes of one machine), that holds across every worker
process that shares them.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace

from agentshim.cli_agent import catalogue_window, read_session_title
from agentshim.core._checks import instance, model_name, seconds, working_directory
from agentshim.core.approvals import Approvals, ApprovalsArgument, approvals_value
from agentshim.core.clock import Clock, SystemClock
from agentshim.core.conversation import (
    ConversationSpec,
    ProbingTransport,
    Readiness,
    Transport,
    TransportKind,
    directory,
    mcp_server_tuple,
)
from agentshim.core.errors import AgentShimError, InvalidRequestError, ProviderCapabilityError
from agentshim.core.events import EventSink, SessionTitle, event_callbacks
from agentshim.core.hooks import HookCallbacks
from agentshim.core.ids import IdAllocator, RandomIds
from agentshim.core.limits import SpendingLimits, UnknownCost
from agentshim.core.mcp import McpServer, StdioMcpServer
from agentshim.core.permissions import NativePermissions
from agentshim.core.portability import ConversationPorter
from agentshim.core.profile import ProviderProfile, RenewalBudget
from agentshim.core.retry import RetryPolicy
from agentshim.core.session_policy import SessionPolicy
from agentshim.core.sharing import ProcessSharing
from agentshim.core.tools import Tool
from agentshim.core.usage import ProviderUsage
from agentshim.execution.confinement import Confinement, confine
from agentshim.execution.executor import CommandExecutor
from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.state_files import StateFiles
from agentshim.idle import IdleHousekeeper
from agentshim.oneshot import OneShotTransport, check_permissions, probe_installed
from agentshim.otel import Tracing
from agentshim.providers import DEFAULT_CATALOG, ProviderCatalog
from agentshim.providers.catalog import one_shot_over, transport_factories, transports_offered
from agentshim.providers.portability import LazyPorter, porter_for
from agentshim.session import Session
from agentshim.state.checkpoints import CheckpointStore, ConversationBlobs
from agentshim.state.leases import ConversationLeases, InMemoryLeases, LeaseKeeper, kept_leases
from agentshim.transport.installed import InstalledCli, LazyCli, ignore_log_line
from agentshim.transport.per_turn import PerTurnTransport
from agentshim.transport.shared import SharingTransport, WarmingTransport
from agentshim.transport.warm import WarmIdle

__all__ = ["Agent"]


class Agent:
    """One provider, with everything its sessions share.

    ``permissions`` and ``approvals`` are required: what the agent may do is always the
    caller's decision. ``retry`` and ``renewal`` set the recovery policy of every session
    (``start_session`` may override ``renewal``). Each of ``event_handlers`` is an
    AgentEventHandler or a plain function of one event.

    ``provider`` is a provider name, whose transport the Agent builds, or a ready-made
    Transport, which it uses as it is. For a name, the transport runs on ``executor`` (host by
    default); with a ``confinement`` every process runs inside it and the confinement supplies
    the env, so passing ``env`` too is an InvalidRequestError. ``transport`` is the kind of
    transport to build (``TransportKind.ONE_SHOT``, the default), ``check_timeout`` the
    budget of the CLI's health check (15 s), ``catalog`` where the name is looked up.
    ``executor``, ``confinement``, ``env``, ``check_timeout``, ``transport``, ``catalog`` and
    ``share_processes`` build a transport, so they are refused with a ready-made one.

    ``checkpoints`` is the store ``start_session`` uses unless it is given another. ``leases``
    serializes turns across processes: every session then holds a lease on its checkpoint key
    (or, without one, on its provider conversation) for each turn, renewed while it runs and
    expiring ``lease_ttl`` seconds after a crashed holder last renewed it; a turn that cannot
    get it within ``lease_timeout`` seconds (None: waits until it comes free) raises
    LeaseTimeoutError with nothing run. Without ``leases`` the Agent's own in-process leases
    serialize its sessions.

    ``max_cost_usd`` and ``max_tokens`` bound each turn, ``max_session_cost_usd`` and
    ``max_session_tokens`` each session (defaults that ``start_session`` and ``turn`` may
    override); ``unknown_cost`` says whether usage that cannot be priced is refused (the
    default) or allowed under a cost limit. See ``docs/sessions.md``. ``tracing``
    (``agentshim.otel.Tracing``, the ``agentshim[otel]`` extra) traces every turn of every
    session; see ``docs/observability.md``.
    ``portable`` moves conversations between hosts through the checkpoint store: each turn's
    CLI files are saved beside its checkpoint and imported on the host that runs the next
    turn (see ``docs/scaling-out.md``). None (the default) does so when the store spans hosts
    (``PostgresStore``); it needs a store that keeps blobs (``ConversationBlobs``).

    ``share_processes`` (a :class:`~agentshim.core.sharing.ProcessSharing`) lets the
    conversations of a long-lived transport share CLI processes: each is a thread (Codex
    app-server) or an ACP session (Gemini CLI, opencode, Copilot CLI) on one of at most
    ``max_processes`` processes per process-wide configuration. See ``docs/sessions.md``.

    Raises:
        InvalidRequestError: ``provider`` is neither a name nor a Transport, ``permissions``
            or ``approvals`` of the wrong type, both ``env`` and ``confinement``, or a
            setting that builds a transport given with a ready-made one.
        ProviderCapabilityError: the transport cannot honour ``permissions``, the provider
            has no transport of the requested kind, or ``share_processes`` is given for a
            transport that serves one conversation per process.
    """

    def __init__(
        self,
        provider: str | Transport,
        *,
        permissions: NativePermissions,
        approvals: ApprovalsArgument,
        model: str | None = None,
        executor: CommandExecutor | None = None,
        confinement: Confinement | None = None,
        clock: Clock | None = None,
        ids: IdAllocator | None = None,
        retry: RetryPolicy | None = None,
        renewal: RenewalBudget | None = None,
        event_handlers: EventSink | Sequence[EventSink] = (),
        env: Mapping[str, str] | None = None,
        log: Callable[[str], None] | None = None,
        check_timeout: float | None = None,
        transport: TransportKind | None = None,
        catalog: ProviderCatalog | None = None,
        checkpoints: CheckpointStore | None = None,
        leases: ConversationLeases | None = None,
        lease_ttl: float = 30.0,
        lease_timeout: float | None = None,
        stall_timeout: float | None = None,
        approval_timeout: float = 60.0,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
        max_session_cost_usd: float | None = None,
        max_session_tokens: int | None = None,
        unknown_cost: UnknownCost = UnknownCost.REFUSE,
        tracing: Tracing | None = None,
        portable: bool | None = None,
        share_processes: ProcessSharing | None = None,
    ) -> None:
        if not isinstance(provider, (str, Transport)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "provider",
                f"{type(provider).__name__} is neither a provider name nor a Transport",
                "Agent(provider) takes a provider name such as 'claude' or a ready-made "
                f"Transport, not {provider!r:.80}",
            )
        self._share(permissions, approvals, model, clock, ids, retry, renewal, event_handlers, log)
        self._share_state(checkpoints, leases, lease_ttl, lease_timeout)
        self._timeouts(stall_timeout, approval_timeout)
        self.limits = SpendingLimits(
            max_cost_usd, max_tokens, max_session_cost_usd, max_session_tokens, unknown_cost
        )
        self.tracing = tracing
        self.portable = portable
        self._confinement = confinement
        if not isinstance(provider, str):
            building = {
                "executor": executor,
                "confinement": confinement,
                "env": env,
                "check_timeout": check_timeout,
                "transport": transport,
                "catalog": catalog,
                "share_processes": share_processes,
            }
            given = [name for name, value in building.items() if value is not None]
            if given:
                raise InvalidRequestError(
                    given[0],
                    "given with a ready-made Transport",
                    f"{given[0]} builds the transport of a provider name; a ready-made "
                    f"{type(provider).__name__} already has it: drop {given[0]}",
                )
            self.transport: Transport = provider
            ready = provider if isinstance(provider, OneShotTransport) else None
            self._cli: LazyCli | None = LazyCli(ready.installed) if ready is not None else None
            self._check_timeout = ready.check_timeout if ready is not None else 15.0
            return
        transport = TransportKind.ONE_SHOT if transport is None else transport
        catalog = DEFAULT_CATALOG if catalog is None else catalog
        if confinement is not None and env is not None:
            raise InvalidRequestError(
                "env",
                "given with a confinement",
                "pass env or confinement, not both: a confined agent runs with the "
                "confinement's env",
            )
        instance("Agent", "transport", transport, TransportKind, "a TransportKind")
        plugin = catalog.plugin(provider)
        profile = plugin.profile
        factories = transport_factories(plugin)
        offered = transports_offered(plugin)
        if transport not in offered:
            raise ProviderCapabilityError(
                f"{profile.display_name} offers no {transport.value} transport; it offers "
                f"{', '.join(kind.value for kind in offered)}"
            )
        if transport is TransportKind.ONE_SHOT and share_processes is not None:
            raise ProviderCapabilityError(
                "share_processes needs a long-lived transport: pass "
                "transport=TransportKind.LONG_LIVED (one-shot turns start a process each)"
            )
        # An agent with no one-turn command runs a one-shot turn as a conversation of its own.
        per_turn = one_shot_over(plugin) if transport is TransportKind.ONE_SHOT else None
        if transport is TransportKind.ONE_SHOT and per_turn is None:
            check_permissions(
                profile, ConversationSpec(permissions=permissions, approvals=self.approvals)
            )
        base = executor if executor is not None else HostCommandExecutor()
        # A cwd the host runs the CLI in is checked when the session opens, not mid-turn.
        self._host_paths = confinement is None and isinstance(base, HostCommandExecutor)
        run_on = confine(base, confinement) if confinement is not None else base
        agent_env = dict(confinement.env) if confinement is not None else env
        log_line, clock, default_model = self.log, self.clock, self.model
        check_timeout = seconds(
            "Agent",
            "check_timeout",
            15.0 if check_timeout is None else check_timeout,
            positive=True,
        )

        def find() -> InstalledCli:
            return InstalledCli.find(
                plugin.create_provider(),
                run_on,
                agent_env,
                model=default_model,
                check_timeout=check_timeout,
                log=log_line,
                monotonic=clock.monotonic,
                context_window=catalogue_window,
            )

        # The one installed CLI, found and checked on first use, that every transport runs,
        # readiness is probed on, and session titles are read with.
        self._cli = LazyCli(find)
        self._check_timeout = check_timeout
        if transport is TransportKind.ONE_SHOT and per_turn is None:
            self.transport = OneShotTransport(
                self._cli.get, profile=profile, check_timeout=check_timeout
            )
        elif per_turn is not None:
            self.transport = PerTurnTransport(factories[per_turn](self._cli.get))
        else:
            self.transport = factories[transport](self._cli.get)
        if share_processes is not None:
            self._share_processes(share_processes)

    def prewarm(
        self, count: int = 1, *, cwd: str | None = None, idle_release_after: float | None = None
    ) -> None:
        """Start ``count`` CLI processes now, so new sessions' first turns do not start one.

        For the sessions this Agent starts in ``cwd`` with its defaults (its permissions and
        model, no MCP servers or tools); a Codex or ACP process serves sessions of any cwd. Returns once they are started: with ``share_processes``
        (Codex, Gemini CLI, opencode, Copilot CLI) up to ``max_processes`` shared processes,
        each handshaken (for opencode, past its slow first session), which new sessions join;
        on Claude Code's stream transport ``count`` processes, each taken by one new session
        (not a resumed one: Claude Code resumes only with ``--resume`` at launch); on Pi's
        ``count`` processes, each taken by one new session or one resumed session (Pi
        switches to its session's file with ``switch_session``). Warm processes run until :meth:`release_warm`; with ``idle_release_after``, a warm process
        that serves no session for that many seconds is ended then, by the thread that
        releases idle sessions (the Agent's idle housekeeper, on its ``clock``).

        Raises:
            ProviderCapabilityError: the transport keeps no warm processes (one-shot,
                Claude Code's TUI), or an ACP/Codex Agent without ``share_processes``.
            InvalidRequestError: ``count`` is not a whole number of 1 or more, or
                ``idle_release_after`` is not a finite number of seconds above zero.
            CliDiedError / CliTimeoutError: a process could not be started.
        """
        if type(count) is not int or count < 1:
            raise InvalidRequestError("count", f"{count!r} is not a whole number of 1 or more")
        idle = None
        if idle_release_after is not None:
            after = seconds(
                "Agent.prewarm", "idle_release_after", idle_release_after, positive=True
            )
            idle = WarmIdle(self._idle_housekeeper(), after, self.clock.monotonic)
        transport = self.transport
        if not isinstance(transport, WarmingTransport):
            raise ProviderCapabilityError(
                f"{self.profile.display_name} over {type(transport).__name__} keeps no warm "
                "processes; prewarm needs transport=TransportKind.LONG_LIVED on Claude Code or "
                "Pi, or share_processes=ProcessSharing(...) on Codex, Gemini CLI, opencode "
                "or Copilot CLI"
            )
        host_cwd = directory("Agent.prewarm", "cwd", cwd)
        spec = ConversationSpec(
            permissions=self.permissions,
            approvals=self.approvals,
            cwd=self._agent_path(host_cwd) if host_cwd is not None else None,
            model=self.model,
            stall_timeout=self.stall_timeout,
            approval_timeout=self.approval_timeout,
        )
        transport.prewarm(count, spec, idle)

    def release_warm(self) -> None:
        """End the warm processes no session is on (nothing when there are none)."""
        transport = self.transport
        if isinstance(transport, WarmingTransport):
            transport.release_warm()

    def _share_processes(self, sharing: ProcessSharing) -> None:
        instance("Agent", "share_processes", sharing, ProcessSharing, "a ProcessSharing")
        transport = self.transport
        if not isinstance(transport, SharingTransport):
            raise ProviderCapabilityError(
                f"{self.profile.display_name} over {type(transport).__name__} serves one "
                "conversation per process; drop share_processes (Codex app-server and the "
                "ACP agents can share)"
            )
        transport.sharing = sharing

    def _porter_for(self, store: CheckpointStore | None) -> ConversationPorter | None:
        """The porter sessions on ``store`` move their conversations with, if they do."""
        portable = self.portable
        if portable is None:
            portable = bool(getattr(store, "spans_hosts", False))
        source = self._cli
        if not portable or source is None or not isinstance(store, ConversationBlobs):
            return None
        profile = self.profile

        def build() -> ConversationPorter | None:
            cli = source.get()
            return porter_for(profile, StateFiles(cli.executor, cli.env), cli.binary_path)

        return LazyPorter(profile.name, build)

    def _share_state(
        self,
        checkpoints: CheckpointStore | None,
        leases: ConversationLeases | None,
        lease_ttl: float,
        lease_timeout: float | None,
    ) -> None:
        """Check and keep the stores every session of this Agent shares."""
        if checkpoints is not None:
            hint = "a CheckpointStore such as FileCheckpointStore(directory), or None"
            instance("Agent", "checkpoints", checkpoints, CheckpointStore, hint)
        self.checkpoints = checkpoints
        given = kept_leases("Agent", leases, self.log)
        # Without leases of the caller's, the Agent's own in-process ones serialize its
        # sessions (and only its sessions) on every transport.
        self._leases: ConversationLeases = (
            given if given is not None else LeaseKeeper(InMemoryLeases(expires=False), log=self.log)
        )
        self.lease_ttl = seconds("Agent", "lease_ttl", lease_ttl, positive=True)
        self.lease_timeout = (
            None if lease_timeout is None else seconds("Agent", "lease_timeout", lease_timeout)
        )

    def _share(
        self,
        permissions: NativePermissions,
        approvals: ApprovalsArgument,
        model: str | None,
        clock: Clock | None,
        ids: IdAllocator | None,
        retry: RetryPolicy | None,
        renewal: RenewalBudget | None,
        event_handlers: EventSink | Sequence[EventSink],
        log: Callable[[str], None] | None,
    ) -> None:
        """Check and keep what every session of this Agent shares."""
        self.permissions = instance(
            "Agent",
            "permissions",
            permissions,
            NativePermissions,
            "a NativePermissions, built with NativePermissions.bypass(), read_only() or "
            "workspace_write()",
        )
        self.approvals: Approvals = approvals_value("Agent", approvals)
        self.model = model_name("Agent", "model", model)
        self._host_paths = False
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.ids: IdAllocator = ids if ids is not None else RandomIds()
        self.retry = retry if retry is not None else RetryPolicy()
        self.renewal = renewal
        self.event_handlers: tuple[EventSink, ...] = event_callbacks(
            "Agent", "event_handlers", event_handlers
        )
        self.log: Callable[[str], None] = log or ignore_log_line
        # Made with the first session that has idle_release_after: idle release on time.
        self._idle: IdleHousekeeper | None = None
        self._idle_lock = threading.Lock()

    def _timeouts(self, stall_timeout: float | None, approval_timeout: float) -> None:
        self.stall_timeout = (
            None
            if stall_timeout is None
            else seconds("Agent", "stall_timeout", stall_timeout, positive=True)
        )
        self.approval_timeout = seconds(
            "Agent", "approval_timeout", approval_timeout, positive=True
        )

    @property
    def profile(self) -> ProviderProfile:
        """The provider's static capabilities."""
        return self.transport.profile

    def probe(self) -> Readiness:
        """Report readiness (binary found, version, login where visible) without a model call."""
        transport = self.transport
        if isinstance(transport, ProbingTransport):
            return transport.probe()
        if self._cli is not None:
            return probe_installed(self._cli.get, self.profile, timeout=self._check_timeout)
        return Readiness(
            self.profile.name,
            binary_found=False,
            detail="this transport cannot report its readiness",
        )

    def session_title(self, session_id: str, *, timeout: float = 10.0) -> SessionTitle | None:
        """The title the CLI gave conversation ``session_id``; see ``CliAgent.session_title``.

        The probe runs through this Agent's executor (inside its confinement, when it has one).

        Raises:
            ProviderCapabilityError: the Agent runs over a ready-made transport other than a
                OneShotTransport, which has no executor to run the probe on.
            CliNotFoundError, CliCheckError: the CLI is not installed or fails its check.
            InvalidSessionIdError: ``session_id`` is not a safe id.
        """
        if self._cli is None:
            raise ProviderCapabilityError(
                f"this Agent's transport ({type(self.transport).__name__}) runs no commands of "
                "its own, so session titles cannot be read through it; use a CliAgent on the "
                "same executor"
            )
        return read_session_title(self._cli.get(), session_id, timeout=timeout)

    def start_session(
        self,
        cwd: str | None = None,
        *,
        mcp_servers: Sequence[McpServer] = (),
        reasoning_effort: str | None = None,
        checkpoints: CheckpointStore | None = None,
        checkpoint_key: str | None = None,
        idle_release_after: float | None = None,
        session_id: str | None = None,
        previous_usage: ProviderUsage | None = None,
        renewal: RenewalBudget | None = None,
        stall_timeout: float | None = None,
        fork: bool = False,
        tools: Sequence[Tool] = (),
        hooks: HookCallbacks | None = None,
        max_cost_usd: float | None = None,
        max_tokens: int | None = None,
        max_session_cost_usd: float | None = None,
        max_session_tokens: int | None = None,
        unknown_cost: UnknownCost | None = None,
        porter: ConversationPorter | None = None,
    ) -> Session:
        """Open a Session working in ``cwd`` (a host path).

        When confined, ``cwd`` and the absolute paths of stdio MCP servers are mapped to the
        paths the agent sees. Given ``checkpoint_key`` the session continues the conversation
        saved under the key in ``checkpoints`` (by default the Agent's store); ``session_id``
        names a conversation to resume and wins over a saved one, and with ``fork`` the
        session starts a new conversation from that one's history (where the transport can;
        Claude Code can). ``stall_timeout`` overrides the Agent's for this session.
        ``tools`` are Python functions the agent may call in every turn (agentshim.tools);
        ``hooks`` are callbacks on its tool use, where the transport has them. The spending
        limits given here replace the Agent's for this session. ``porter``
        moves the conversation's CLI files between hosts in place of the provider's own (see
        ``portable``; it needs a checkpoint key and a store that keeps blobs).

        Raises:
            InvalidRequestError: ``cwd`` (or an MCP server's host path) is not visible inside
                the confinement, only one of checkpoints and checkpoint_key is given, or a
                session setting is invalid.
        """
        host_cwd = directory("Agent.start_session", "cwd", cwd)
        if self._host_paths:
            working_directory("", "cwd", host_cwd)
        servers = mcp_server_tuple("Agent.start_session", "mcp_servers", mcp_servers)
        spec = ConversationSpec(
            permissions=self.permissions,
            approvals=self.approvals,
            cwd=self._agent_path(host_cwd) if host_cwd is not None else None,
            model=self.model,
            mcp_servers=tuple(self._map_server(server) for server in servers),
            reasoning_effort=reasoning_effort,
            resume_session_id=session_id,
            previous_usage=previous_usage,
            stall_timeout=stall_timeout if stall_timeout is not None else self.stall_timeout,
            approval_timeout=self.approval_timeout,
            fork=fork,
            tools=tools,
            hooks=hooks,
        )
        policy = SessionPolicy(
            retry=self.retry,
            renewal=renewal if renewal is not None else self.renewal,
            idle_release_after=idle_release_after,
        )
        store = (
            checkpoints if checkpoints is not None or checkpoint_key is None else self.checkpoints
        )
        if porter is None and checkpoint_key is not None:
            porter = self._porter_for(store)
        limits = self.limits.overridden(
            max_cost_usd=max_cost_usd,
            max_tokens=max_tokens,
            max_session_cost_usd=max_session_cost_usd,
            max_session_tokens=max_session_tokens,
            unknown_cost=unknown_cost,
        )
        return Session(
            self.transport,
            spec,
            policy=policy,
            clock=self.clock,
            ids=self.ids,
            event_handlers=self.event_handlers,
            checkpoints=store,
            checkpoint_key=checkpoint_key,
            leases=self._leases,
            lease_ttl=self.lease_ttl,
            lease_timeout=self.lease_timeout,
            log=self.log,
            limits=limits,
            tracing=self.tracing,
            porter=porter,
            idle_housekeeper=self._idle_housekeeper() if idle_release_after is not None else None,
        )

    def _idle_housekeeper(self) -> IdleHousekeeper:
        """The one housekeeper of this Agent's idle sessions (its thread runs only when due)."""
        with self._idle_lock:
            if self._idle is None:
                self._idle = IdleHousekeeper(self.clock, log=self.log)
            return self._idle

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
