"""AcpTransport: one long-lived ACP agent process per conversation, every turn on it.

The process starts with the first turn: ``initialize`` (advertising no ``fs`` and no
``terminal``, so the agent uses its own tools), then ``session/new`` with the conversation's
MCP servers, or the dialect's ``attach`` (``session/load``, whose replayed history is
suppressed, or ``session/resume``) when the conversation has an id. Each turn is one ``session/prompt``; the response's ``stopReason`` is the only
end of a turn. ``session/cancel`` interrupts it, and every permission request that is still
open, or arrives after it, is answered ``cancelled`` (an agent may hold the turn open until
it is). When the process dies the turn fails with CliDiedError, keeping the session id, and
the next turn loads the session in a new process.

Threading: a turn runs on the thread that calls :meth:`AcpConversation.turn`, the only one
that reads the process, sends events or calls the approval handler. ``interrupt`` and
``close`` may come from any thread: they write their frame and wake the reader.
"""

from __future__ import annotations

import base64
import dataclasses
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from agentshim.core import lifecycle_kinds as lk
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.attachments import PromptImage, PromptLink
from agentshim.core.clock import Clock, SystemClock
from agentshim.core.conversation import ConversationSpec, TurnStop
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    FailureKind,
    InvalidRequestError,
    ProcessClosedError,
    ProviderCapabilityError,
    SessionResumeError,
)
from agentshim.core.events import (
    ConfigOption,
    ConfigOptionsChanged,
    Emit,
    HistoryReplayed,
    Lifecycle,
    ModeChanged,
    RunFinished,
    SessionStarted,
    ToolKind,
    ToolResult,
    TurnInterrupted,
    UsageReport,
)
from agentshim.core.failures import kind_from_text
from agentshim.core.ids import is_valid_session_id
from agentshim.core.jsonvalues import as_mapping, as_str, list_or_empty
from agentshim.core.mcp import HttpMcpServer, McpServer
from agentshim.core.profile import ProviderProfile
from agentshim.core.stream import parse_json_object
from agentshim.core.turn import StopReason, TurnRequest, TurnResult
from agentshim.core.usage import ProviderUsage, TokenUsage
from agentshim.tools.local import LocalToolServer, refuse_remote_executor, serve_tools
from agentshim.transport.channel import Channel
from agentshim.transport.conversation import (
    LiveTurn,
    ProcessConversation,
    ProcessOptions,
    SharingTransport,
)
from agentshim.transport.correlator import PendingRequest
from agentshim.transport.fixed import refuse_fixed_changes
from agentshim.transport.installed import InstalledCli
from agentshim.transport.shared import (
    ProcessSharing,
    SharedChannel,
    bind_session,
    join_shared,
    once_per_process,
    opening_session,
)
from agentshim.transport.watch import TurnWatch

from .capabilities import (
    SUPPORTED_VERSIONS,
    AgentCapabilities,
    AgentSession,
    read_initialize,
    read_sessions,
)
from .clientside import AcpClientMethods, FileRefused, read_text, write_text
from .dialect import AcpArgv, AcpDialect
from .jsonrpc import (
    METHOD_NOT_FOUND,
    Notification,
    Request,
    Response,
    RpcError,
    error_response,
    notification,
    read_message,
    request,
    result_response,
)
from .sharing import session_of
from .terminals import Terminals
from .updates import UpdateReader, config_options

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "PROTOCOL_VERSION",
    "AcpClientMethods",
    "AcpConversation",
    "AcpTransport",
    "mcp_servers_param",
    "prompt_blocks",
]

PROTOCOL_VERSION = 1
"""The ACP version this client speaks."""

_CLIENT_INFO = {"name": "agentshim", "title": "agentshim", "version": "1"}
_CANCELLED = {"outcome": {"outcome": "cancelled"}}
_INTERNAL_ERROR = -32603
_STOP_REASONS = {reason.value: reason for reason in StopReason}
_NOT_ENABLED = {
    "fs/read_text_file": "AcpClientMethods(read_files=True)",
    "fs/write_text_file": "AcpClientMethods(write_files=True)",
    "elicitation/create": "AcpClientMethods(elicitation=handler)",
}


def mcp_servers_param(servers: Sequence[McpServer]) -> list[dict[str, Any]]:
    """``servers`` in the shape of ``session/new``'s ``mcpServers``."""
    out: list[dict[str, Any]] = []
    for server in servers:
        if isinstance(server, HttpMcpServer):
            headers = [{"name": k, "value": v} for k, v in server.headers.items()]
            out.append(
                {
                    "type": server.transport,
                    "name": server.name,
                    "url": server.url,
                    "headers": headers,
                }
            )
        else:
            env = [{"name": k, "value": v} for k, v in server.env.items()]
            out.append(
                {
                    "name": server.name,
                    "command": server.command,
                    "args": list(server.args),
                    "env": env,
                }
            )
    return out


class AcpTransport(SharingTransport):
    """A Transport whose conversations each keep one ACP agent process.

    ``dialect`` is how the agent speaks ACP; ``context`` resolves the installed CLI on first
    use. ``turn_timeout`` is the budget of a turn whose request sets none;
    ``start_timeout`` (90 s here) how long starting a session (``initialize`` plus
    ``session/new`` or ``session/load``) may take; ``interrupt_grace`` how long a cancelled turn may take to
    end before its process is killed; ``close_grace`` each step of closing a process.
    ``wall_clock`` times a dialect's deferred ``session/load`` and ``waits`` waits for it
    (a wait the turn's stop, its budget and close cut short). ``client`` says
    which client methods (file reads and writes, elicitation) the agent may call; none by
    default. With ``sharing`` the conversations share processes, one ACP session each (see
    :mod:`agentshim.acp.sharing`).
    """

    def __init__(
        self,
        context: InstalledCli | Callable[[], InstalledCli],
        dialect: AcpDialect,
        *,
        wall_clock: Callable[[], float] = time.time,
        waits: Clock | None = None,
        sharing: ProcessSharing | None = None,
        client: AcpClientMethods | None = None,
        **options: Unpack[ProcessOptions],
    ) -> None:
        # An ACP agent's start (initialize, then a session made or loaded) gets longer than
        # the other transports' default.
        options.setdefault("start_timeout", 90.0)
        super().__init__(context, sharing=sharing, session_key=session_of, **options)
        self._lock = threading.Lock()
        self.dialect = dialect
        self.client = client if client is not None else AcpClientMethods()
        self.wall_clock = wall_clock
        self.waits: Clock = waits if waits is not None else SystemClock()
        self._created: dict[str, float] = {}

    def created(self, session_id: str) -> float | None:
        """When (on ``wall_clock``) a conversation of this transport created ``session_id``."""
        with self._lock:
            return self._created.get(session_id)

    def note_created(self, session_id: str) -> None:
        """Record that ``session_id`` was created now."""
        with self._lock:
            self._created[session_id] = self.wall_clock()

    @property
    def profile(self) -> ProviderProfile:
        """The agent's capabilities."""
        return self.dialect.profile

    def open(self, spec: ConversationSpec) -> AcpConversation:
        """Open a conversation; its process starts with its first turn.

        A fork is checked against the agent's capabilities when the process starts.

        Raises:
            ProviderCapabilityError: the agent cannot honour the spec's permissions
                or MCP servers (stdio ones, for an agent that drops them).
            InvalidSessionIdError: the resume id is not safe to pass.
        """
        dialect = self.dialect
        name = dialect.profile.display_name
        if not dialect.stdio_mcp and any(
            not isinstance(server, HttpMcpServer) for server in spec.mcp_servers
        ):
            raise ProviderCapabilityError(
                f"{name} over ACP ignores stdio MCP servers; pass HTTP ones (HttpMcpServer) "
                "or run on TransportKind.ONE_SHOT"
            )
        if spec.tools and not dialect.stdio_mcp and dialect.tools_argv is None:
            raise ProviderCapabilityError(
                f"{name} over ACP ignores stdio MCP servers, and tools are served as one; "
                "run on TransportKind.ONE_SHOT"
            )
        if spec.hooks is not None:
            raise ProviderCapabilityError(
                f"{name} over ACP has no hook callbacks; drop hooks (Claude Code's stream "
                "transport has them)"
            )
        dialect.argv(AcpArgv(binary_path="", model=None, permissions=spec.permissions))
        return AcpConversation(self, spec)


class _Turn(LiveTurn):
    """What the reader knows about the turn in flight."""

    __slots__ = ("prompt_id", "reader", "refused", "response")

    def __init__(self, reader: UpdateReader, emit: Emit, watch: TurnWatch) -> None:
        super().__init__(emit, watch)
        self.reader = reader
        self.prompt_id = ""
        self.response: Response | None = None
        # Client methods the agent called that the caller did not turn on.
        self.refused: list[str] = []

    @property
    def over(self) -> bool:
        """The agent answered the turn's ``session/prompt``."""
        return self.response is not None


class AcpConversation(ProcessConversation[_Turn]):
    """One ACP session on one long-lived agent process.

    A Conversation, not a SteerableConversation: ACP has no message that adds to a running
    turn, so ``Session.steer`` raises ProviderCapabilityError. An interrupt is
    ``session/cancel``. Besides the failures every long-lived conversation has, a turn raises
    ProviderCapabilityError for a model other than the process's, SessionResumeError when
    the agent no longer has the session to load, CliExitError when it answered the prompt
    with an error (classified kind), ApprovalRequiredError when a permission request met
    ApprovalPolicy.FAIL_TURN, and ProviderCapabilityError when the agent called a client
    method the caller did not turn on (:class:`AcpClientMethods`).

    ``set_mode`` and ``set_config_option`` change the session's mode and settings: the
    change is sent before the next prompt (after the process starts, for the first one), and
    a refusal fails that turn. ``modes``, ``mode`` and ``config`` are what the agent last
    said of them.
    """

    _unanswered = "no prompt response {grace:g} s after session/cancel; killing the process"

    def __init__(self, transport: AcpTransport, spec: ConversationSpec) -> None:
        super().__init__(transport, spec, name=transport.dialect.profile.display_name)
        self._transport = transport
        self._dialect = transport.dialect
        self._early: list[Mapping[str, Any]] = []
        # The last usage the process reported, for an agent whose reports add up.
        self._reported: TokenUsage | None = None
        # The conversation's tools, served to the process as a local MCP server while it runs.
        self._serving: LocalToolServer | None = None
        self._capabilities: AgentCapabilities | None = None
        self._modes: tuple[str, ...] = ()
        self._mode: str | None = None
        self._config: tuple[ConfigOption, ...] = ()
        # Settings asked for since the last prompt, sent before the next one.
        self._settings: list[tuple[str, dict[str, Any]]] = []
        # The terminals the agent runs during a turn; none outlives it.
        self._terminals: Terminals | None = None

    # -- modes and settings ----------------------------------------------------------------

    @property
    def capabilities(self) -> AgentCapabilities | None:
        """What the agent's ``initialize`` answer offered; None before the process started."""
        return self._capabilities

    @property
    def modes(self) -> tuple[str, ...]:
        """The mode ids the agent offers for this session (empty when it named none)."""
        return self._modes

    @property
    def mode(self) -> str | None:
        """The session's current mode, as the agent last said."""
        return self._mode

    def set_mode(self, mode_id: str) -> None:
        """Put the session in mode ``mode_id`` (``session/set_mode``) before the next prompt.

        Raises:
            InvalidRequestError: ``mode_id`` is not a str, or not one the agent offers (when
                it has said which it offers).
        """
        if not isinstance(mode_id, str) or not mode_id:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError("mode_id", "is not a mode id", "pass a mode id (a str)")
        if self._modes and mode_id not in self._modes:
            raise InvalidRequestError(
                "mode_id",
                f"{mode_id!r:.80} is not a mode of this session",
                f"{self._name} offers the modes {', '.join(self._modes)}",
            )
        with self._lock:
            self._settings.append(("session/set_mode", {"modeId": mode_id}))

    @property
    def config(self) -> tuple[ConfigOption, ...]:
        """The session's settings, as the agent last reported them."""
        return self._config

    def set_config_option(self, option_id: str, value: str | bool) -> None:
        """Set the session's setting ``option_id`` (``session/set_config_option``) before the next prompt.

        ``value`` is a select's value id, or a bool for a boolean setting.

        Raises:
            InvalidRequestError: not a str id, a value neither a str nor a bool, or (when the
                agent has listed its settings) a setting or choice it does not have.
        """
        if not isinstance(option_id, str) or not option_id:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError("option_id", "is not a setting id", "pass its id (a str)")
        if not isinstance(value, (str, bool)):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "value", "is neither a str nor a bool", "pass a value id (str) or a bool"
            )
        known = {option.option_id: option for option in self._config}
        option = known.get(option_id)
        if known and option is None:
            raise InvalidRequestError(
                "option_id",
                f"{option_id!r:.80} is not a setting of this session",
                f"{self._name} has the settings {', '.join(known)}",
            )
        if option is not None and option.choices and value not in option.choices:
            raise InvalidRequestError(
                "value",
                f"{value!r:.80} is not a choice of {option_id}",
                f"choose one of {', '.join(option.choices)}",
            )
        params: dict[str, Any] = {"configId": option_id, "value": value}
        if isinstance(value, bool):
            params["type"] = "boolean"
        with self._lock:
            self._settings.append(("session/set_config_option", params))

    def list_sessions(self, cwd: str | None = None) -> tuple[AgentSession, ...]:
        """The sessions the agent keeps (``session/list``), every page; in ``cwd`` if given.

        Runs between turns, on the conversation's process (started, with its session, if none
        runs yet).

        Raises:
            ProviderCapabilityError: the agent does not offer ``session/list``.
            SessionStateError: a turn is running, or the conversation is closed.
            CliExitError: the agent answered with an error.
        """
        self._slot.begin(None)
        try:
            channel = self._ensure_process(_ignore_event)
            capabilities = self._capabilities
            if capabilities is None or not capabilities.list_sessions:
                raise ProviderCapabilityError(
                    f"{self._name} does not offer session/list (its initialize answer says so)"
                )
            found: list[AgentSession] = []
            cursor: str | None = None
            deadline = self._clock() + self._start_timeout
            while True:
                params: dict[str, Any] = {}
                if cwd is not None:
                    params["cwd"] = cwd
                if cursor is not None:
                    params["cursor"] = cursor
                response = self._request(channel, "session/list", params, deadline, _ignore_event)
                self._early.clear()  # nothing of a turn's: not kept for the next one
                if response.error is not None:
                    raise self._failure(channel, response.error, "session/list")
                page, cursor = read_sessions(response.result or {})
                found.extend(page)
                if cursor is None or not page:
                    return tuple(found)
        finally:
            self._slot.end()

    def _shut_down(self) -> None:
        """Close the agent's session where it offers ``session/close``, then the process."""
        channel = self._channel
        capabilities = self._capabilities
        if (
            channel is not None
            and channel.exit is None
            and capabilities is not None
            and capabilities.close_session
            and self._dialect.close_session
            and self._session_id is not None
        ):
            try:
                self._request(
                    channel,
                    "session/close",
                    {"sessionId": self._session_id},
                    self._clock() + self._close_grace,
                    _ignore_event,
                )
            except AgentShimError:
                pass  # the process is ended next whatever the agent answered
        super()._shut_down()

    def _model_option(self) -> ConfigOption | None:
        return next((option for option in self._config if option.category == "model"), None)

    def _current_model(self) -> str | None:
        """The model the session runs on: the agent's model setting, else the process's."""
        option = self._model_option()
        return option.value if option is not None and option.value else self._model

    def warm(self) -> None:
        """Join (or start) a shared process and open the conversation's session on it now.

        The process stays running, warm, when the conversation closes.
        """
        channel = self._ensure_process(lambda _: None)
        if isinstance(channel, SharedChannel):
            channel.keep_warm()

    def _refuse(self, request: TurnRequest) -> None:
        switched = request.model is not None and request.model != self._current_model()
        # A model the agent offers as a session setting is switched in band before the turn;
        # before the first process it is not known yet whether it has such a setting.
        in_band = self._capabilities is None or self._model_option() is not None
        also = ("model",) if switched and not in_band else ()
        refuse_fixed_changes(self._name, request, self._spec, also=also, takes=("attachments",))

    # -- the turn ------------------------------------------------------------------------

    _forks_count_as_resumed = True

    def _before_turn(self, channel: Channel, request: TurnRequest, emit: Emit) -> None:
        # What the agent says between turns is read with the next turn (set aside till then).
        self._apply_settings(channel, request, emit)

    def _new_turn(self, request: TurnRequest, emit: Emit, watch: TurnWatch, resumed: bool) -> _Turn:
        dialect = self._dialect
        reader = UpdateReader(
            emit, dialect.notice, failed=dialect.failed, superseded=dialect.superseded_messages
        )
        turn = _Turn(reader, emit, watch)
        if self._serving is not None:
            self._serving.host.emit = emit
            self._serving.host.approve = self._tool_approvals(turn)
        # What the agent said since the last turn was set aside for this one.
        early, self._early = self._early, []
        for update in early:
            reader.read(update)
        return turn

    def _turn_frame(self, turn: _Turn, request: TurnRequest) -> Mapping[str, Any]:
        session_id = self._session_id
        assert session_id is not None
        pending = self._issue("session/prompt", None)
        turn.prompt_id = pending.request_id
        prompt = prompt_blocks(self._name, request, self._capabilities)
        return request_frame(
            pending.request_id, "session/prompt", sessionId=session_id, prompt=prompt
        )

    def _send_and_read(
        self, channel: Channel, turn: _Turn, frame: Mapping[str, Any], stop: TurnStop
    ) -> None:
        try:
            super()._send_and_read(channel, turn, frame, stop)
        finally:
            terminals, self._terminals = self._terminals, None
            if terminals is not None:
                terminals.release_all()

    def _apply_settings(self, channel: Channel, request: TurnRequest, emit: Emit) -> None:
        """Send the modes and settings asked for since the last prompt, and the turn's model.

        Raises:
            ProviderCapabilityError: the turn names another model and the agent has no model
                setting.
            InvalidRequestError: the agent refused a mode, setting or model.
        """
        with self._lock:
            settings, self._settings = self._settings, []
        if request.model is not None and request.model != self._current_model():
            option = self._model_option()
            if option is None:
                refuse_fixed_changes(self._name, request, self._spec, also=("model",))
            elif option.choices and request.model not in option.choices:
                raise InvalidRequestError(
                    "TurnRequest.model",
                    f"{request.model!r:.80} is not a model {self._name} offers",
                    f"{self._name} offers the models {', '.join(option.choices)}",
                )
            else:
                settings.append(
                    (
                        "session/set_config_option",
                        {"configId": option.option_id, "value": request.model},
                    )
                )
        deadline = self._clock() + self._start_timeout
        for method, params in settings:
            response = self._request(
                channel, method, {"sessionId": self._session_id, **params}, deadline, emit
            )
            if response.error is not None:
                raise InvalidRequestError(
                    "mode_id" if method == "session/set_mode" else "option_id",
                    f"refused by {self._name}: {response.error.describe()}",
                    f"{self._name} answered {method} with an error; choose a mode or setting "
                    "it offers",
                )
            if method == "session/set_mode":
                self._mode = as_str(params.get("modeId"))
                emit(ModeChanged(self._mode or ""))
                continue
            self._config = config_options((response.result or {}).get("configOptions"))
            emit(ConfigOptionsChanged(self._config))

    def _session_state(self, result: Mapping[str, Any], emit: Emit) -> None:
        """Keep the modes and settings a session answer names, and report them.

        A session not in the mode the dialect names for the conversation's permissions is
        put in it before the first prompt.
        """
        self._read_session_state(result, emit)
        wanted = self._dialect.permission_modes.get(self._spec.permissions.mode)
        if wanted and wanted != self._mode:
            with self._lock:
                self._settings.insert(0, ("session/set_mode", {"modeId": wanted}))

    def _read_session_state(self, result: Mapping[str, Any], emit: Emit) -> None:
        modes = as_mapping(result.get("modes"))
        if modes is not None:
            self._modes = tuple(
                mode_id
                for entry in list_or_empty(modes.get("availableModes"))
                if (mode_id := as_str((as_mapping(entry) or {}).get("id")))
            )
            current = as_str(modes.get("currentModeId"))
            if current:
                self._mode = current
                emit(ModeChanged(current))
        if result.get("configOptions") is not None:
            self._config = config_options(result.get("configOptions"))
            emit(ConfigOptionsChanged(self._config))

    def _client_capabilities(self) -> dict[str, Any]:
        return self._transport.client.capabilities()

    def _report_replay(self, emit: Emit) -> None:
        """Report the history a reopened session replayed, kept out of any answer."""
        replayed, self._early = self._early, []
        if not replayed:
            return
        roles = {
            "user_message_chunk": "user",
            "agent_message_chunk": "assistant",
            "agent_thought_chunk": "thought",
        }
        for update in replayed:
            kind = as_str(update.get("sessionUpdate")) or ""
            if kind in roles:
                content = as_mapping(update.get("content")) or {}
                text = as_str(content.get("text"))
                if text:
                    emit(HistoryReplayed(roles[kind], text))
            elif kind == "tool_call":
                emit(HistoryReplayed("tool", as_str(update.get("title")) or "tool"))
        emit(Lifecycle(lk.REPLAY_SUPPRESSED, f"{len(replayed)} updates of the loaded history"))

    # -- starting a session ----------------------------------------------------------------

    def _open_process(self, emit: Emit) -> Channel:
        context, spec = self._context, self._spec
        args = AcpArgv(
            binary_path=context.binary_path, model=self._model, permissions=spec.permissions
        )
        argv = self._dialect.argv(args)
        env = {**context.env, **self._dialect.env(args)}
        if spec.tools:
            refuse_remote_executor(context.executor)
            self._serving = serve_tools(spec.tools, emit=emit)
            on_argv = self._dialect.tools_argv
            if not self._dialect.stdio_mcp and on_argv is not None:
                # session/new would drop the bridge; the command line installs it.
                installed = on_argv(self._serving.server)
                argv += installed.argv
                env.update(installed.env)
        pool = None if spec.tools else self._transport.pool()
        if pool is not None:
            self._announce_respawn(emit)  # a shared process reports it as its own does
            channel = join_shared(pool, argv, env, emit)
            self._adopt_channel(channel)
        else:
            channel = self._start_process(argv, env, emit, side=self._serving)
        self._reported = None
        self._handshake(channel, emit)
        return channel

    def _handshake(self, channel: Channel, emit: Emit) -> None:
        deadline = self._clock() + self._start_timeout
        capabilities = once_per_process(channel, lambda: self._initialize(channel, emit, deadline))
        self._capabilities = capabilities
        self._open_session(channel, capabilities, emit, deadline)

    def _initialize(self, channel: Channel, emit: Emit, deadline: float) -> AgentCapabilities:
        """``initialize`` (and ``authenticate``): on a shared process, once for all."""
        init = self._request(
            channel,
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "clientCapabilities": self._client_capabilities(),
                "clientInfo": _CLIENT_INFO,
            },
            deadline,
            emit,
        )
        if init.error is not None:
            raise self._failure(channel, init.error, "initialize")
        capabilities = read_initialize(init.result or {})
        self._capabilities = capabilities
        if not capabilities.supported:
            spoken = ", ".join(str(version) for version in SUPPORTED_VERSIONS)
            raise ProviderCapabilityError(
                f"{self._name} answered initialize with ACP version "
                f"{capabilities.protocol_version!r}; agentshim speaks version {spoken}: use a "
                "release of the agent that speaks it"
            )
        emit(Lifecycle(lk.ACP_INITIALIZED, capabilities.describe()))
        self._authenticate(channel, capabilities, deadline)
        return capabilities

    def _open_session(
        self, channel: Channel, capabilities: AgentCapabilities, emit: Emit, deadline: float
    ) -> None:
        cwd = os.path.abspath(self._spec.cwd) if self._spec.cwd else os.getcwd()
        served = (
            () if self._serving is None or not self._dialect.stdio_mcp else (self._serving.server,)
        )
        servers = mcp_servers_param((*self._spec.mcp_servers, *served))
        if self._session_id is None:
            with opening_session(channel):
                response = self._request(
                    channel, "session/new", {"cwd": cwd, "mcpServers": servers}, deadline, emit
                )
            if response.error is not None:
                raise self._failure(channel, response.error, "session/new")
            session_id = _named_session(channel, response, "session/new")
            self._session_id = session_id
            bind_session(channel, session_id)
            self._transport.note_created(session_id)
            emit(SessionStarted(session_id))
            self._session_state(response.result or {}, emit)
            return
        session_id = self._session_id
        bind_session(channel, session_id)
        if self._fork:
            self._fork_session(channel, capabilities, session_id, cwd, servers, deadline, emit)
            return
        attach = self._attach_method(capabilities)
        self._defer_load(session_id, emit)
        with opening_session(channel):
            response = self._request(
                channel,
                attach,
                {"sessionId": session_id, "cwd": cwd, "mcpServers": servers},
                deadline,
                emit,
            )
        if response.error is None and self._dialect.replay_settle > 0:
            # The replay may go on after the answer: every update before our first prompt is
            # history, counted with the rest and dropped.
            self._drain_between_turns(
                channel, emit, settle=self._dialect.replay_settle, deadline=deadline
            )
        self._report_replay(emit)
        if response.error is not None:
            raise self._session_failure(channel, response.error, attach, session_id)
        self._session_state(response.result or {}, emit)

    def _fork_session(
        self,
        channel: Channel,
        capabilities: AgentCapabilities,
        session_id: str,
        cwd: str,
        servers: list[dict[str, Any]],
        deadline: float,
        emit: Emit,
    ) -> None:
        """Start a new session from ``session_id``'s history (``session/fork``).

        Raises:
            ProviderCapabilityError: the agent does not offer ``session/fork``.
        """
        if not capabilities.fork_session:
            raise ProviderCapabilityError(
                f"{self._name} does not offer session/fork (its initialize answer says so); "
                "continue the conversation instead, or start a fresh one"
            )
        params = {"sessionId": session_id, "cwd": cwd, "mcpServers": servers}
        response = self._request(channel, "session/fork", params, deadline, emit)
        if response.error is not None:
            raise self._session_failure(channel, response.error, "session/fork", session_id)
        forked = _named_session(channel, response, "session/fork")
        self._session_id, self._fork = forked, False
        self._transport.note_created(forked)
        emit(SessionStarted(forked))
        self._session_state(response.result or {}, emit)

    def _attach_method(self, capabilities: AgentCapabilities) -> str:
        """The method that reopens the session, as the dialect says and the agent offers.

        Raises:
            ProviderCapabilityError: the agent offers no way to reopen a session.
        """
        attach = self._dialect.attach
        if attach == "auto":
            if capabilities.resume_session:
                return "session/resume"
            if capabilities.load_session:
                return "session/load"
        elif attach == "session/resume" or capabilities.load_session:
            return attach
        raise ProviderCapabilityError(
            f"{self._name} cannot reopen a session (its initialize answer offers neither "
            "session/load nor session/resume); keep the conversation on one Session, or "
            "start a fresh one"
        )

    def _authenticate(
        self, channel: Channel, capabilities: AgentCapabilities, deadline: float
    ) -> None:
        """Call ``authenticate`` with the caller's method, when the agent lists it.

        Raises:
            ProviderCapabilityError: the caller named a method the agent does not list.
            CliExitError: the agent refused the authentication (kind AUTH).
        """
        method = self._dialect.auth_method
        if method is None:
            return
        listed = [entry.method_id for entry in capabilities.auth_methods]
        if method not in listed:
            raise ProviderCapabilityError(
                f"{self._name} offers no auth method {method!r} (it lists "
                f"{', '.join(listed) or 'none'}); name one of those, or none"
            )
        response = self._request(
            channel, "authenticate", {"methodId": method}, deadline, _ignore_event
        )
        if response.error is not None:
            raise self._refused(
                channel, f"authenticate: {response.error.describe()}", FailureKind.AUTH
            )

    def _defer_load(self, session_id: str, emit: Emit) -> None:
        """Wait for the next wall-clock minute before loading a session made in this one."""
        if not self._dialect.load_in_a_later_minute:
            return
        created = self._transport.created(session_id)
        if created is None:
            return
        now = self._transport.wall_clock()
        if int(now // 60) != int(created // 60):
            return
        wait = 60.0 - (now % 60.0) + 1.0
        emit(
            Lifecycle(
                lk.LOAD_DEFERRED,
                f"waiting {wait:.0f} s: {self._name} loses a session loaded in the minute it "
                "was created",
            )
        )
        # Cut short by the turn's stop, its budget, or close (the load then meets the kill).
        self._transport.waits.wait(wait, self._start_stop)

    def _request(
        self,
        channel: Channel,
        method: str,
        params: Mapping[str, Any],
        deadline: float,
        emit: Emit,
    ) -> Response:
        """Send ``method`` and read until its response; updates meanwhile are kept aside."""
        return self._call(
            channel,
            method,
            lambda pending: request(pending.request_id, method, params),
            emit,
            deadline=deadline,
        )

    def _answer_of(
        self, channel: Channel, pending: PendingRequest, line: str, emit: Emit
    ) -> Response | None:
        message = _message_of(line)
        if isinstance(message, Response):
            with self._lock:
                answered = self._requests.resolve(message.request_id)
            if answered is not None and answered.request_id == pending.request_id:
                return message
            return None
        self._set_aside(channel, message)
        return None

    def _between_turns(self, channel: Channel, line: str, emit: Emit) -> float:
        self._set_aside(channel, _message_of(line))
        return 0.0

    def _update_of(self, message: Notification) -> Mapping[str, Any] | None:
        """The update ``message`` carries for this conversation's session, else None.

        An update naming another session (an agent serving several) is not this one's; one
        that names none, or comes before the session has an id, is kept.
        """
        if message.method != "session/update":
            return None
        named = as_str(message.params.get("sessionId"))
        if named is not None and self._session_id is not None and named != self._session_id:
            return None
        return as_mapping(message.params.get("update"))

    def _set_aside(
        self, channel: Channel, message: Notification | Request | Response | None
    ) -> None:
        """Keep an update read before the turn's prompt for it; refuse a request meanwhile.

        Anything else (a response nobody waits for, a line that is no message) is dropped.

        Before session/new answers, an agent may already speak of the session; during
        session/load this is the replayed history.
        """
        if isinstance(message, Notification):
            update = self._update_of(message)
            if update is not None:
                self._early.append(update)
        elif isinstance(message, Request):
            self._refuse_request(channel, message)

    def _failure(self, channel: Channel, error: RpcError, method: str) -> CliExitError:
        return self._refused(
            channel, f"{method}: {error.describe()}", self._dialect.classify(error)
        )

    def _session_failure(
        self, channel: Channel, error: RpcError, method: str, session_id: str
    ) -> CliExitError:
        """What ``error``, answering ``method`` about ``session_id``, raises.

        SessionResumeError where it says the agent no longer has the session; else the
        method's failure, of the kind the dialect reads in it.
        """
        if self._dialect.session_lost(error):
            return SessionResumeError(
                channel.argv,
                1,
                stderr="".join(self._stderr),
                session_id=session_id,
                detail=error.describe(),
            )
        return self._failure(channel, error, method)

    def _refuse_request(self, channel: Channel, message: Request) -> None:
        if message.method == "session/request_permission":
            frame = result_response(message.request_id, _CANCELLED)
        else:
            text = f"agentshim does not offer {message.method}"
            frame = error_response(message.request_id, METHOD_NOT_FOUND, text)
        try:
            channel.send(frame)
        except (ProcessClosedError, InvalidRequestError):
            pass

    # -- reading a turn --------------------------------------------------------------------

    def _on_line(self, channel: Channel, turn: _Turn, line: str) -> None:
        message = _message_of(line)
        if message is None:
            turn.emit(Lifecycle(lk.MALFORMED_FRAME, line.strip()[:200]))
        elif isinstance(message, Response):
            with self._lock:
                answered = self._requests.resolve(message.request_id)
            if answered is not None and answered.request_id == turn.prompt_id:
                turn.response = message
        elif isinstance(message, Notification):
            if message.method == "$/cancel_request":
                # Its requests are answered as they come, on this thread: nothing is left
                # to abandon by the time the cancel is read.
                turn.emit(Lifecycle(lk.REQUEST_CANCELLED, str(message.params.get("requestId"))))
                return
            update = self._update_of(message)
            if update is not None:
                turn.reader.read(update)
        elif message.method == "session/request_permission":
            self._on_permission(channel, turn, message)
        elif self._transport.client.offers(message.method):
            self._on_client_method(channel, turn, message)
        else:
            if message.method in _NOT_ENABLED or message.method.startswith("terminal/"):
                turn.refused.append(message.method)
            self._refuse_request(channel, message)

    def _on_client_method(self, channel: Channel, turn: _Turn, message: Request) -> None:
        """Carry out a client method the caller turned on, confined to the workspace."""
        workspace = os.path.abspath(self._spec.cwd) if self._spec.cwd else os.getcwd()
        client = self._transport.client
        params = message.params
        try:
            if message.method == "fs/read_text_file":
                content = read_text(workspace, params, client.max_read_bytes)
                frame = result_response(message.request_id, {"content": content})
            elif message.method == "fs/write_text_file":
                frame = self._write_file(turn, workspace, message)
            elif message.method.startswith("terminal/"):
                frame = result_response(message.request_id, self._terminal(workspace, message))
            else:
                frame = result_response(message.request_id, self._elicit(turn, params))
        except FileRefused as refusal:
            turn.emit(Lifecycle(lk.CLIENT_METHOD_REFUSED, f"{message.method}: {refusal}"))
            frame = error_response(message.request_id, -32602, str(refusal))
        try:
            channel.send(frame)
        except (ProcessClosedError, InvalidRequestError):
            pass

    def _terminal(self, workspace: str, message: Request) -> Mapping[str, Any]:
        """Run a ``terminal/*`` method through the conversation's executor."""
        with self._lock:
            if self._terminals is None:
                self._terminals = Terminals(
                    self._context.executor,
                    self._context.env,
                    workspace,
                    self._transport.client.max_output_bytes,
                )
            terminals = self._terminals
        return terminals.handle(message.method, message.params)

    def _stop_in_band(self, turn: _Turn, now: float) -> Callable[[], None] | None:
        deliver = super()._stop_in_band(turn, now)
        terminals = self._terminals
        if deliver is None or terminals is None:
            return deliver

        def stop() -> None:
            # A wait on a terminal holds the reading thread: ending the commands frees it.
            terminals.kill_all()
            deliver()

        return stop

    def _write_file(self, turn: _Turn, workspace: str, message: Request) -> dict[str, Any]:
        """Ask the approvals about a write, then write; a deny is the agent's error to see."""
        path = as_str(message.params.get("path")) or ""
        content = message.params.get("content")
        asked = ApprovalRequest(
            tool="fs/write_text_file",
            args={"path": path, "content": content if isinstance(content, str) else ""},
            kind=ToolKind.FILE_CHANGE,
            description=f"write {path}",
        )
        answer = self._decide(turn, asked)
        self._approval_sent(turn, asked, answer)
        if not answer.decision.allowed:
            reason = answer.decision.message or "denied by the client's approvals"
            return error_response(message.request_id, _INTERNAL_ERROR, reason)
        write_text(workspace, message.params)
        return result_response(message.request_id, {})

    def _elicit(self, turn: _Turn, params: Mapping[str, Any]) -> Mapping[str, Any]:
        """The caller's answer to an elicitation; a handler that fails cancels it."""
        handler = self._transport.client.elicitation
        assert handler is not None
        try:
            answer = handler(params)
        except Exception as error:  # the caller's code must not break the turn
            turn.emit(Lifecycle(lk.ELICITATION_FAILED, str(error)[:200]))
            return {"action": "cancel"}
        if not isinstance(answer, Mapping) or as_str(answer.get("action")) is None:  # pyright: ignore[reportUnnecessaryIsInstance]
            return {"action": "cancel"}
        return dict(answer)

    def _on_permission(self, channel: Channel, turn: _Turn, message: Request) -> None:
        params = message.params
        tool_call = as_mapping(params.get("toolCall")) or {}
        call = turn.reader.announce(tool_call)
        # What is asked about is the request's own toolCall: an agent may have announced the
        # call earlier under a vaguer title (opencode: "bash", then the command).
        tool = as_str(tool_call.get("title")) or call.tool
        raw = as_mapping(tool_call.get("rawInput"))
        args: dict[str, Any] = dict(raw) if raw else {"title": tool}
        request_ = ApprovalRequest(
            tool=tool, args=args, kind=call.kind, tool_id=call.tool_id, description=tool
        )
        answer = self._decide(turn, request_)
        if turn.interrupted:
            # A cancel that came while the handler ran wins: the agent waits for this answer.
            cancelled = ApprovalDecision.deny("the turn was cancelled")
            answer = dataclasses.replace(answer, decision=cancelled, decided_by="interrupted")
            outcome: Mapping[str, Any] = _CANCELLED
        else:
            decision, outcome = _outcome(answer.decision, request_, params)
            answer = dataclasses.replace(answer, decision=decision)
        frame = result_response(message.request_id, outcome)
        self._answer_approval(channel, turn, request_, answer, frame)

    def _interrupt_frame(self, turn: _Turn) -> Mapping[str, Any]:
        return notification("session/cancel", {"sessionId": self._session_id})

    # -- the result ------------------------------------------------------------------------

    def _conclude(
        self, channel: Channel, turn: _Turn, request: TurnRequest, resumed: bool, started: float
    ) -> TurnResult:
        response = turn.response
        exit_status = channel.exit
        stderr = "".join(self._stderr)
        if exit_status is not None and response is None:
            turn.emit(RunFinished(exit_status.returncode))
        self._raise_for_reading(turn, channel.argv)
        if response is None and not turn.interrupted:
            assert exit_status is not None
            raise self._died(exit_status, kind_from_text(stderr) or FailureKind.OTHER)
        if response is not None and response.error is not None and turn.interrupted:
            # The error answers our cancel (opencode cancelling a model call that has not
            # started to answer says "Internal service failure"): the turn was interrupted.
            turn.emit(Lifecycle(lk.CANCEL_ANSWERED_WITH_ERROR, response.error.describe()))
            response = Response(response.request_id, {"stopReason": "cancelled"}, None)
        if response is not None and response.error is not None:
            error = response.error
            if self._dialect.session_lost(error):
                raise SessionResumeError(
                    channel.argv,
                    1,
                    stderr=stderr,
                    session_id=self._session_id,
                    detail=f"session/prompt: {error.describe()}",
                )
            raise self._failure(channel, error, "session/prompt")
        result = response.result if response is not None else None
        said = as_str((result or {}).get("stopReason")) or "cancelled"
        stop_reason = _STOP_REASONS.get(said, StopReason.END_TURN)
        if said not in _STOP_REASONS:
            turn.emit(Lifecycle(lk.STOP_REASON, said))
        interrupted = turn.interrupted
        if interrupted:
            stop_reason = StopReason.CANCELLED
        elif stop_reason is StopReason.CANCELLED:
            # The agent ended the turn itself (codex-acp does on a denied command): not an
            # interrupt of the caller's.
            turn.emit(Lifecycle(lk.CANCELLED_BY_AGENT, "the agent cancelled its own turn"))
        why = "cancelled with the turn" if interrupted else "the turn ended without its end"
        for call in turn.reader.open_calls():
            # Agents send no end for a call the turn's end stopped; the caller still sees one.
            turn.emit(ToolResult(call.tool_id, call.tool, stderr=why, kind=call.kind))
        if interrupted:
            turn.emit(TurnInterrupted("interrupted on request"))
        usage = self._turn_usage(result, several_calls=bool(turn.reader.calls))
        failure = turn.reader.failure
        if failure is not None and not interrupted:
            kind, text = failure
            raise CliExitError(
                channel.argv,
                1,
                stderr=stderr,
                kind=kind,
                detail=f"{self._name} ended the turn with a failure: {text[:500]}",
            )
        if turn.refused and not interrupted:
            asked = sorted(set(turn.refused))
            enable = sorted(
                {_NOT_ENABLED.get(method, "AcpClientMethods(terminal=True)") for method in asked}
            )
            raise ProviderCapabilityError(
                f"{self._name} called {', '.join(asked)}, which this conversation did not "
                f"turn on; to allow it, pass {' / '.join(enable)} to the transport "
                "(AcpAgentConfig.client for the generic provider)"
            )
        if turn.reader.mode is not None:
            self._mode = turn.reader.mode
        if turn.reader.config is not None:
            self._config = turn.reader.config
        if usage is not None:
            turn.emit(UsageReport(usage, cost_usd=usage.total_cost_usd))
        context = turn.reader.context
        return self._turn_result(
            turn.reader.text,
            usage,
            started=started,
            resumed=resumed,
            interrupted=interrupted,
            stop_reason=stop_reason,
            context_tokens=context[0] if context else None,
            context_window=context[1] if context else None,
        )

    def _turn_usage(
        self, result: Mapping[str, Any] | None, *, several_calls: bool
    ) -> ProviderUsage | None:
        """The turn's usage; for an agent whose reports add up, this turn's share of them."""
        usage = self._dialect.usage(result) if result is not None else None
        if usage is not None and not usage.provider:
            usage = dataclasses.replace(usage, provider=self._dialect.profile.name)
        if usage is not None and several_calls and self._dialect.usage_of_last_call:
            # The report is the last model call's; the calls before the tool's are not in it.
            return dataclasses.replace(usage, increment_known=False)
        if usage is None or not self._dialect.cumulative_usage:
            return usage
        baseline, self._reported = self._reported, usage.tokens
        share = usage.tokens.minus(baseline) if baseline is not None else usage.tokens
        if share is None:
            # Less than before: not a report of this process's running total.
            return dataclasses.replace(usage, tokens=TokenUsage(), increment_known=False)
        return dataclasses.replace(usage, tokens=dataclasses.replace(share, turns=1))


def prompt_blocks(
    name: str, request: TurnRequest, capabilities: AgentCapabilities | None
) -> list[dict[str, Any]]:
    """The ``prompt`` of ``session/prompt``: the text, then each attachment as its block.

    Raises:
        ProviderCapabilityError: an image or a resource's text for an agent whose
            ``initialize`` answer does not take it (resource links every agent takes).
    """
    blocks: list[dict[str, Any]] = [{"type": "text", "text": request.prompt}]
    image = capabilities is not None and capabilities.image
    embedded = capabilities is not None and capabilities.embedded_context
    for item in request.attachments:
        if isinstance(item, PromptImage):
            if not image:
                raise ProviderCapabilityError(
                    f"{name} does not take images in a prompt (its initialize answer says "
                    "so); drop the PromptImage"
                )
            data = base64.b64encode(item.data).decode("ascii")
            blocks.append({"type": "image", "data": data, "mimeType": item.mime_type})
        elif isinstance(item, PromptLink):
            link: dict[str, Any] = {"type": "resource_link", "uri": item.uri, "name": item.name}
            if item.mime_type:
                link["mimeType"] = item.mime_type
            blocks.append(link)
        else:
            if not embedded:
                raise ProviderCapabilityError(
                    f"{name} does not take a resource's text in a prompt (its initialize "
                    "answer says so); pass a PromptLink to it instead"
                )
            resource: dict[str, Any] = {"uri": item.uri, "text": item.text}
            if item.mime_type:
                resource["mimeType"] = item.mime_type
            blocks.append({"type": "resource", "resource": resource})
    return blocks


def _named_session(channel: Channel, response: Response, method: str) -> str:
    """The session id ``method``'s answer names.

    Raises:
        CliExitError: it names none, or one not safe to pass on (kind OTHER).
    """
    session_id = as_str((response.result or {}).get("sessionId"))
    if session_id is None or not is_valid_session_id(session_id):
        raise CliExitError(
            channel.argv,
            1,
            kind=FailureKind.OTHER,
            detail=f"{method} named no usable session id ({session_id!r:.80})",
        )
    return session_id


def _ignore_event(event: object) -> None:
    """Drop an event: nothing of a turn's happens outside one."""
    del event


def _message_of(line: str) -> Notification | Request | Response | None:
    """The JSON-RPC message on ``line``; None for a line that is not one."""
    frame = parse_json_object(line)
    return read_message(frame) if frame is not None else None


def request_frame(request_id: str, method: str, **params: Any) -> dict[str, Any]:
    """Our request ``method`` with ``params`` given as keywords."""
    return request(request_id, method, params)


def _outcome(
    decision: ApprovalDecision, request_: ApprovalRequest, params: Mapping[str, Any]
) -> tuple[ApprovalDecision, Mapping[str, Any]]:
    """The option that carries ``decision``, and the decision as it will be reported.

    ACP answers by choosing one of the agent's options: an allow takes ``allow_once`` (else
    ``allow_always``), a deny ``reject_once`` (else ``reject_always``). An allow that
    rewrites the arguments cannot be carried (ACP has no such answer), so it is denied.
    """
    if (
        decision.allowed
        and decision.args is not None
        and dict(decision.args) != dict(request_.args)
    ):
        decision = ApprovalDecision.deny(
            "denied: ACP cannot run a tool with rewritten arguments; allow it as asked or deny it"
        )
    wanted = (
        ("allow_once", "allow_always") if decision.allowed else ("reject_once", "reject_always")
    )
    options = [as_mapping(option) or {} for option in list_or_empty(params.get("options"))]
    for kind in wanted:
        for option in options:
            option_id = as_str(option.get("optionId"))
            if option.get("kind") == kind and option_id is not None:
                return decision, {"outcome": {"outcome": "selected", "optionId": option_id}}
    if decision.allowed:
        decision = ApprovalDecision.deny("denied: the agent offered no option to allow it")
    return decision, _CANCELLED
