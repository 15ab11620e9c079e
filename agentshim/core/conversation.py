"""The seams of the session layer: what a conversation is and what opens one.

A :class:`Transport` opens a :class:`Conversation` from a :class:`ConversationSpec`; a
``Session`` drives conversations through its recovery policy and never knows whether each turn
is a fresh CLI process (``TransportKind.ONE_SHOT``) or a message to a long-lived one
(``TransportKind.LONG_LIVED``).
"""

from __future__ import annotations

import enum
import os
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, cast, runtime_checkable

from agentshim.core._checks import instance, seconds, sequence
from agentshim.core.approvals import Approvals, approvals_value
from agentshim.core.errors import InvalidRequestError, SessionStateError
from agentshim.core.events import Emit
from agentshim.core.hooks import HookCallbacks
from agentshim.core.mcp import McpServer
from agentshim.core.permissions import NativePermissions
from agentshim.core.profile import ProviderProfile
from agentshim.core.tools import Tool, tool_tuple
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.core.usage import ProviderUsage

__all__ = [
    "ConfigurableConversation",
    "Conversation",
    "ConversationSpec",
    "ProbingTransport",
    "Readiness",
    "SteerableConversation",
    "Transport",
    "TransportKind",
    "TurnSlot",
    "TurnStop",
]


class TransportKind(enum.Enum):
    """How a transport talks to the provider's CLI."""

    ONE_SHOT = "one_shot"
    """One CLI process per turn; the conversation continues by resuming its id."""
    LONG_LIVED = "long_lived"
    """One long-lived CLI process per conversation, where the provider has one."""
    TUI = "tui"
    """One long-lived interactive CLI per conversation, driven on a terminal (Claude Code)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConversationSpec:
    """Everything fixed for the lifetime of one conversation.

    ``permissions`` and ``approvals`` have no default: what the agent may do is always the
    caller's decision. ``resume_session_id`` continues an existing provider conversation (None starts a
    fresh one); ``previous_usage`` is that conversation's last reported usage, which providers
    with cumulative counters need as a baseline. ``mcp_servers`` and ``reasoning_effort`` apply
    to every turn whose request does not set its own.

    ``approvals`` is an ApprovalPolicy, an
    :class:`~agentshim.core.approvals.ApprovalHandler` or a function of an ApprovalRequest;
    a handler answering later than ``approval_timeout`` seconds counts as a deny.
    ``stall_timeout`` (None: off) stops a turn whose CLI prints nothing for that long and
    fails it with TurnStalledError. ``fork`` makes the first turn start a new conversation
    from the history of ``resume_session_id`` instead of continuing it. ``tools`` are
    Python functions the agent may call in every turn (see :mod:`agentshim.tools`);
    ``hooks`` are callbacks on its tool use, where the transport has them (Claude Code's
    stream transport; others refuse them).
    """

    permissions: NativePermissions
    approvals: Approvals
    cwd: str | None = None
    model: str | None = None
    mcp_servers: Sequence[McpServer] = ()
    reasoning_effort: str | None = None
    resume_session_id: str | None = None
    previous_usage: ProviderUsage | None = None
    stall_timeout: float | None = None
    approval_timeout: float = 60.0
    fork: bool = False
    tools: Sequence[Tool] = ()
    hooks: HookCallbacks | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "approvals", approvals_value("ConversationSpec", self.approvals))
        if self.stall_timeout is not None:
            seconds("ConversationSpec", "stall_timeout", self.stall_timeout, positive=True)
        seconds("ConversationSpec", "approval_timeout", self.approval_timeout, positive=True)
        if self.fork and self.resume_session_id is None:
            raise InvalidRequestError(
                "ConversationSpec.fork",
                "set without resume_session_id",
                "fork=True starts a new conversation from an existing one's history: pass "
                "the session id to fork as resume_session_id",
            )
        object.__setattr__(self, "cwd", directory("ConversationSpec", "cwd", self.cwd))
        servers = mcp_server_tuple("ConversationSpec", "mcp_servers", self.mcp_servers)
        object.__setattr__(self, "mcp_servers", servers)
        if self.tools != ():
            object.__setattr__(self, "tools", tool_tuple("ConversationSpec", "tools", self.tools))
        if self.hooks is not None:
            instance("ConversationSpec", "hooks", self.hooks, HookCallbacks, "HookCallbacks")


_SERVERS = "MCP servers such as (StdioMcpServer(...),)"


def directory(owner: str, field: str, value: object) -> str | None:
    """``value`` as a path string: a str or os.PathLike, or None.

    Raises:
        InvalidRequestError: ``value`` is of another type.
    """
    if value is None:
        return None
    given: object = value
    if isinstance(value, os.PathLike):
        given = os.fspath(cast("os.PathLike[str]", value))
    return instance(owner, field, given, str, "a directory path (a str or os.PathLike) or None")


def mcp_server_tuple(owner: str, field: str, value: object) -> tuple[McpServer, ...]:
    """``value``'s items as a tuple of MCP servers; refuses None, a string or a non-iterable.

    Raises:
        InvalidRequestError: ``value`` is not a sequence.
    """
    return cast("tuple[McpServer, ...]", sequence(owner, field, value, _SERVERS))


class TurnStop:
    """One turn's stop request, shared by every layer the turn passes through.

    ``request()`` may be called from any thread, any number of times, before the turn runs or
    while it runs. A stop requested before a layer is ready to act on it is not lost: each
    layer ``attach``-es its action (end the turn, terminate the process) once it can act, and
    an action attached after the request runs at once. Every action runs at most once. This is
    the one place where "the stop came before the process existed" is handled.

    It is also a :class:`~agentshim.core.clock.StopSignal`, so a retry wait ends on it.
    """

    def __init__(self) -> None:
        self._guard = threading.Lock()
        self._fired = threading.Event()
        self._actions: list[Callable[[], None]] = []

    def request(self) -> None:
        """Stop the turn: run every attached action, and every one attached from now on."""
        with self._guard:
            if self._fired.is_set():
                return
            self._fired.set()
            actions, self._actions = self._actions, []
        for action in actions:
            action()

    def attach(self, action: Callable[[], None]) -> Callable[[], None]:
        """Run ``action`` when the stop is requested (now, if it already was).

        Returns a function that detaches ``action`` again (when the layer can no longer act,
        such as a process that has exited).
        """
        with self._guard:
            if not self._fired.is_set():
                self._actions.append(action)
                return lambda: self._detach(action)
        action()
        return do_nothing

    def _detach(self, action: Callable[[], None]) -> None:
        with self._guard:
            if action in self._actions:
                self._actions.remove(action)

    def is_set(self) -> bool:
        """True once the stop was requested."""
        return self._fired.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the stop is requested or ``timeout`` passes; True if it was requested."""
        return self._fired.wait(timeout)


def do_nothing() -> None:
    """An action that does nothing: what detaches an action that already ran, for one."""


class TurnSlot:
    """Lets a conversation run one turn at a time until it is closed; thread-safe.

    For a :class:`Conversation` implementation: ``begin`` claims the slot for a turn and
    returns the turn's stop, ``end`` frees the slot, ``interrupt`` requests the running turn's
    stop (nothing when no turn runs), ``close`` refuses every later turn. ``name`` is what
    error messages call the conversation.
    """

    def __init__(self, name: str = "this conversation") -> None:
        self._name = name
        self._lock = threading.Lock()
        self._stop: TurnStop | None = None
        self._closed = False

    @property
    def closed(self) -> bool:
        """Whether ``close()`` was called."""
        return self._closed

    @property
    def running(self) -> bool:
        """Whether a turn holds the slot."""
        return self._stop is not None

    def begin(self, stop: TurnStop | None = None) -> TurnStop:
        """Claim the slot for a turn that ``stop`` stops (a fresh TurnStop when None); return it.

        Raises:
            SessionStateError: the conversation is closed, or a turn is already running.
        """
        turn_stop = stop if stop is not None else TurnStop()
        with self._lock:
            if self._closed:
                raise SessionStateError(f"{self._name} is closed; open a new one")
            if self._stop is not None:
                raise SessionStateError(f"a turn is already running in {self._name}")
            self._stop = turn_stop
        return turn_stop

    def end(self) -> None:
        """Free the slot when the turn is over, however it ended."""
        with self._lock:
            self._stop = None

    def interrupt(self) -> None:
        """Request the running turn's stop; nothing when no turn runs."""
        with self._lock:
            stop = self._stop
        if stop is not None:
            stop.request()

    def close(self) -> None:
        """Refuse every later turn; idempotent (a running turn goes on)."""
        with self._lock:
            self._closed = True


@runtime_checkable
class Conversation(Protocol):
    """One provider conversation, turn by turn.

    ``turn`` runs on the caller's thread and delivers every event through ``emit`` on that
    thread. A turn ends early when its ``stop`` is requested (then it returns a result marked
    ``interrupted`` or raises ``TurnCancelledError``) and the conversation is kept; a stop
    requested before the turn began ends it as soon as it begins. ``interrupt`` may be called
    from any thread: it requests the running turn's stop; with no turn running it does
    nothing. ``close`` is idempotent; a turn on a closed conversation raises
    ``SessionStateError``.
    """

    @property
    def session_id(self) -> str | None:
        """The provider's id for this conversation; None until the provider names one."""
        ...

    def turn(self, request: TurnRequest, emit: Emit, stop: TurnStop | None = None) -> TurnResult:
        """Run one turn and return its result; failures raise typed AgentShimErrors."""
        ...

    def interrupt(self) -> None:
        """Request the running turn's stop, keeping the conversation; thread-safe."""
        ...

    def close(self) -> None:
        """Release whatever the conversation holds; idempotent."""
        ...


@runtime_checkable
class SteerableConversation(Conversation, Protocol):
    """A conversation that accepts messages while a turn runs (long-lived transports only)."""

    def steer(self, text: str) -> None:
        """Send ``text`` into the running turn; thread-safe."""
        ...


@runtime_checkable
class ConfigurableConversation(Conversation, Protocol):
    """A conversation whose agent has modes and settings a caller may change (ACP agents).

    A change applies from the next turn on: it is sent before that turn's prompt, and the
    agent's refusal fails that turn.
    """

    def set_mode(self, mode_id: str) -> None:
        """Put the session in the agent's mode ``mode_id`` from the next turn on."""
        ...

    def set_config_option(self, option_id: str, value: str | bool) -> None:
        """Set the agent's session setting ``option_id`` to ``value`` from the next turn on."""
        ...


@runtime_checkable
class Transport(Protocol):
    """Opens conversations with one provider."""

    @property
    def profile(self) -> ProviderProfile:
        """The provider's static capabilities."""
        ...

    def open(self, spec: ConversationSpec) -> Conversation:
        """Open a conversation; raise ProviderCapabilityError for a spec it cannot honour."""
        ...


@dataclass(frozen=True, slots=True)
class Readiness:
    """Whether a provider's CLI is ready to run turns, found out without calling a model.

    ``authenticated`` is True when credentials were seen (an API-key variable or a login file),
    and None when agentshim cannot tell (a login kept in a system keychain, say); it is never
    a guess.
    """

    provider: str
    binary_found: bool
    binary_path: str | None = None
    version: str | None = None
    authenticated: bool | None = None
    detail: str = ""

    @property
    def ready(self) -> bool:
        """True when the binary runs and nothing says it is logged out."""
        return self.binary_found and self.version is not None and self.authenticated is not False


@runtime_checkable
class ProbingTransport(Transport, Protocol):
    """A transport that can report its CLI's readiness."""

    def probe(self) -> Readiness:
        """Check the binary, its version and (where it can tell) its login; never runs a turn."""
        ...
