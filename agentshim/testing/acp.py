"""Fake ACP agents: a reactive peer with per-agent quirks, and a replay of a recorded one.

``FakeExecutor(peers=AcpPeers([...]))`` makes every spawn an :class:`AcpPeer` playing the next
:class:`AcpPeerTurn` of one shared script, so a conversation's turns keep their order across
a process that died and a new one that loaded the session. The messages copy what the real
agents print (``../shared/transport-captures/{gemini,opencode,copilot}``): JSON-RPC 2.0 lines,
``session/update`` notifications for text and tool calls, ``session/request_permission``
with the agent's options, a ``session/prompt`` response whose ``stopReason`` ends the turn,
and history replayed as updates before a ``session/load`` response. :class:`AcpQuirks` holds
the switches in which the agents differ; :data:`GEMINI_QUIRKS` is Gemini CLI 0.61.0,
:data:`OPENCODE_QUIRKS` opencode 1.18.33 and :data:`COPILOT_QUIRKS` Copilot CLI 1.0.102.

:class:`AcpRecordedPeer` replays a recorded transcript instead: each line written to it
releases the recorded output that followed the matching recorded input.
"""

from __future__ import annotations

import signal
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from agentshim.core.jsonvalues import as_mapping, as_str
from agentshim.execution.process import ProcessExited, SpawnRequest, StdoutLine

from .process import FakePeer, PeerOutput
from .transcript import (
    PeerScript,
    RecordedPeer,
    frame_line,
    json_frame,
    no_tool_input,
    responses_readdressed,
)

__all__ = [
    "COPILOT_QUIRKS",
    "FAKE_MODELS",
    "FAKE_MODES",
    "GEMINI_OPTIONS",
    "GEMINI_QUIRKS",
    "OPENCODE_QUIRKS",
    "AcpPeer",
    "AcpPeerTurn",
    "AcpPeers",
    "AcpQuirks",
    "AcpRecordedPeer",
]


FAKE_MODES: tuple[str, ...] = ("default", "plan")
"""The session modes the fake agent offers; a session starts in the first."""

FAKE_MODELS: tuple[str, ...] = ("fake-small", "fake-large")
"""The models the fake agent offers as its ``model`` setting; a session starts on the first."""

GEMINI_OPTIONS: tuple[Mapping[str, str], ...] = (
    {"optionId": "proceed_always", "name": "Allow for this session", "kind": "allow_always"},
    {"optionId": "proceed_once", "name": "Allow", "kind": "allow_once"},
    {"optionId": "cancel", "name": "Reject", "kind": "reject_once"},
)
"""The options Gemini CLI offers with a permission request (ids ``proceed_*``, ``cancel``)."""


@dataclass(frozen=True, slots=True)
class AcpQuirks:
    """How a fake agent departs from the protocol's common ground.

    ``announces_permissioned_calls``: a ``tool_call`` update precedes a permission request
    (Gemini CLI sends none: the request is the only announcement). ``cancel_waits_for_answer``:
    with a permission request open, a cancel ends the prompt only once that request is
    answered (Gemini CLI). ``updates_before_session_id``: an update for the new session comes
    before the ``session/new`` response (Copilot CLI). ``exits_on_stdin_eof``: False for an
    agent that keeps running after stdin closes (Gemini CLI with a stdio MCP child).
    ``replays_after_load_response``: of a loaded session's history only the first update
    comes before the ``session/load`` response, the rest after it (Gemini CLI).
    ``reports_cancelled_calls``: a cancel ends a running tool with a final update (Gemini CLI
    reports it ``completed``; Copilot CLI sends none). ``notice``: agent text sent before each
    answer that is the CLI's status, not the model's.

    ``usage`` is where a turn's usage goes in the prompt result: ``quota`` (Gemini CLI's
    ``_meta.quota``, per turn), ``last_call`` (opencode's ``usage``, the last model call, cache
    and reasoning apart from input and output) or ``cumulative`` (Copilot CLI's ``usage``,
    adding up over the process). ``message_ids``: agent chunks carry a ``messageId``
    (opencode). ``vague_title``: a permissioned call is first announced under this title and
    only the request names the command (opencode: ``bash``). ``reject_ends_turn``: a rejected
    call gets a ``failed`` update and the turn ends without the model (opencode, Copilot
    CLI), after ``reject_notice`` when set. ``fails_in_text``: a scripted error is not a
    JSON-RPC error but ``retry_notices`` ``Info:`` chunks, an ``Error: <message>`` chunk and
    ``end_turn`` (Copilot CLI). ``error_data`` is the ``data`` of a JSON-RPC error answering a
    prompt (opencode's ``errorName``). ``cancel_of_silent_call_errors``: a cancel while the
    model has sent nothing answers the prompt with a JSON-RPC error (opencode).
    ``offers_resume``: ``session/resume`` reopens a session without replay (opencode).
    ``lost_error`` is the ``(code, message, data)`` answering a load of a session the agent
    does not have (``{id}`` in the message is the id). ``options`` are those a permission
    request offers.
    """

    announces_permissioned_calls: bool = True
    cancel_waits_for_answer: bool = False
    updates_before_session_id: bool = False
    exits_on_stdin_eof: bool = True
    reports_cancelled_calls: bool = True
    replays_after_load_response: bool = False
    notice: str | None = None
    usage: Literal["quota", "last_call", "cumulative"] = "quota"
    message_ids: bool = False
    vague_title: str | None = None
    reject_ends_turn: bool = False
    reject_notice: str | None = None
    fails_in_text: bool = False
    retry_notices: int = 0
    error_data: Mapping[str, Any] | None = None
    cancel_of_silent_call_errors: bool = False
    offers_resume: bool = False
    lost_error: tuple[int, str, Mapping[str, Any]] = (
        -32603,
        "Internal error",
        {"details": "No previous sessions found for this project."},
    )
    options: tuple[Mapping[str, str], ...] = GEMINI_OPTIONS


GEMINI_QUIRKS = AcpQuirks(
    announces_permissioned_calls=False,
    cancel_waits_for_answer=True,
    replays_after_load_response=True,
)
"""Gemini CLI 0.61.0, as captured."""

OPENCODE_QUIRKS = AcpQuirks(
    usage="last_call",
    message_ids=True,
    vague_title="bash",
    reject_ends_turn=True,
    error_data={"service": "session", "errorName": "APIError"},
    cancel_of_silent_call_errors=True,
    offers_resume=True,
    lost_error=(-32603, "Internal error: OpenCode service failure", {"service": "session"}),
    options=(
        {"optionId": "once", "kind": "allow_once", "name": "Allow once"},
        {"optionId": "always", "kind": "allow_always", "name": "Always allow"},
        {"optionId": "reject", "kind": "reject_once", "name": "Reject"},
    ),
)
"""opencode 1.18.33, as captured."""

COPILOT_QUIRKS = AcpQuirks(
    updates_before_session_id=True,
    reports_cancelled_calls=False,
    usage="cumulative",
    reject_ends_turn=True,
    reject_notice="Info: Operation cancelled by user",
    fails_in_text=True,
    retry_notices=2,
    lost_error=(
        -32002,
        "Resource not found: Session {id} not found",
        {"uri": "Session {id} not found"},
    ),
    options=(
        {"optionId": "allow_once", "kind": "allow_once", "name": "Allow once"},
        {"optionId": "allow_always", "kind": "allow_always", "name": "Always allow"},
        {"optionId": "reject_once", "kind": "reject_once", "name": "Deny"},
    ),
)
"""Copilot CLI 1.0.102, as captured."""


@dataclass(frozen=True, slots=True)
class AcpPeerTurn:
    """One scripted turn (one ``session/prompt``) of a fake ACP agent.

    ``text`` is the answer, streamed in ``chunks`` pieces. With ``tool`` (a title, such as
    ``"touch x.txt"``) the agent first calls a tool of ACP kind ``tool_kind``; ``ask`` makes
    it ask permission (the turn waits for the answer; a reject answers ``"denied"``, or ends
    the turn where the quirks say so);
    ``hang`` makes the tool, or with no tool the answer, run until cancelled; ``die`` makes
    the process exit with that status once the tool has started. ``error`` is a JSON-RPC
    error ``(code, message)`` answering the prompt (or, for an agent that fails in text,
    its ``Error:`` line). ``summary`` is text streamed as a message of its own before the
    answer (opencode's compaction summary). ``input_tokens`` / ``output_tokens`` (of which
    ``cached_tokens`` / ``thought_tokens``) are the turn's usage, reported where the quirks
    put it.
    """

    text: str = "done"
    tool: str | None = None
    tool_kind: str = "execute"
    raw_input: Mapping[str, Any] = field(default_factory=no_tool_input)
    ask: bool = False
    hang: bool = False
    die: int | None = None
    error: tuple[int, str] | None = None
    chunks: int = 1
    summary: str | None = None
    input_tokens: int = 1200
    output_tokens: int = 32
    cached_tokens: int = 0
    thought_tokens: int = 0


class AcpPeers(PeerScript[AcpPeerTurn, "AcpPeer"]):
    """The processes of one fake ACP agent: a factory for ``FakeExecutor(peers=...)``.

    Every process plays the next turn of ``turns``; sessions and their history outlive the
    process that made them, as the agent's own store does. Loading an id in ``lost`` fails
    as Gemini CLI's does for a session it no longer has.

    Attributes:
        peers: Every process spawned, in order.
        requests: Their SpawnRequests.
        history: Each session's replayable history, by session id.
    """

    def __init__(
        self,
        turns: Iterable[AcpPeerTurn],
        *,
        quirks: AcpQuirks = GEMINI_QUIRKS,
        lost: Iterable[str] = (),
    ) -> None:
        super().__init__(turns)
        self.quirks = quirks
        self.lost = set(lost)
        self.history: dict[str, list[tuple[str, str]]] = {}

    def turn_for(self, prompt: str) -> AcpPeerTurn | None:
        """The turn that answers ``prompt``: the script's next (None when it is used up)."""
        del prompt
        return self.next_turn()

    def new_session_id(self) -> str:
        """A fresh UUID-shaped session id."""
        return f"5e550000-0000-4000-8000-{self.count():012d}"

    def __call__(self, request: SpawnRequest) -> AcpPeer:
        """Start the next process for ``request``."""
        peer = AcpPeer(self, request.argv)
        self.spawned(request, peer)
        return peer


def _result(request_id: object, result: Mapping[str, Any]) -> StdoutLine:
    return frame_line({"jsonrpc": "2.0", "id": request_id, "result": dict(result)})


def _error(request_id: object, code: int, message: str, **data: Any) -> StdoutLine:
    body: dict[str, Any] = {"code": code, "message": message}
    if data:
        body["data"] = data
    return frame_line({"jsonrpc": "2.0", "id": request_id, "error": body})


class AcpPeer(FakePeer):
    """One fake ACP agent process (``gemini --acp`` by default quirks).

    Attributes:
        argv: What it was started with.
        received: Every message written to it, decoded.
        answers: The ``result`` of every answer to one of its permission requests.
        client_capabilities: What ``initialize`` advertised.
        session_id: The session it serves, once created or loaded.
    """

    def __init__(self, family: AcpPeers, argv: Sequence[str]) -> None:
        self._family = family
        self._quirks = family.quirks
        self.argv = tuple(argv)
        self.received: list[dict[str, Any]] = []
        self.answers: list[dict[str, Any]] = []
        self.client_capabilities: Mapping[str, Any] | None = None
        self.session_id: str | None = None
        # Every session this process holds; a prompt runs on the one it names.
        self.sessions: list[str] = []
        self.mode = FAKE_MODES[0]
        self.model = FAKE_MODELS[0]
        self._turn: AcpPeerTurn | None = None
        self._prompt_id: object = None
        self._phase = "idle"  # idle | asking | running
        self._ask_id = -1
        self._asks = 0
        self._cancel_pending = False
        self._calls = 0
        self._messages = 0
        # What the process has reported so far, for an agent whose usage adds up.
        self._totals = {"input": 0, "output": 0, "cached": 0, "thought": 0}

    # -- the FakePeer hooks ----------------------------------------------------------------

    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        """Answer one stdin line the way the agent does."""
        try:
            frame = json_frame(line)
        except ValueError:
            frame = None
        if frame is None:
            return (_error(None, -32700, "Parse error"),)
        self.received.append(frame)
        method = as_str(frame.get("method"))
        params = as_mapping(frame.get("params")) or {}
        if method is None:
            return self._on_answer(frame)
        request_id = frame.get("id")
        if method == "initialize":
            self.client_capabilities = as_mapping(params.get("clientCapabilities"))
            return (self._initialized(request_id),)
        if method == "session/new":
            return self._new(request_id)
        if method == "session/load":
            return self._load(request_id, as_str(params.get("sessionId")) or "")
        if method == "session/resume" and self._quirks.offers_resume:
            return self._load(request_id, as_str(params.get("sessionId")) or "", replay=False)
        if method == "session/prompt":
            return self._prompt(request_id, params)
        if method == "session/set_mode":
            return self._set_mode(request_id, as_str(params.get("modeId")) or "")
        if method == "session/set_config_option":
            return self._set_option(request_id, params)
        if method == "session/cancel":
            return self._cancel()
        if request_id is not None:
            return (_error(request_id, -32601, f'"Method not found": {method}'),)
        return ()

    def on_stdin_closed(self) -> Iterable[PeerOutput]:
        """Stdin EOF: exit 0, unless the quirk keeps it running."""
        return (ProcessExited(0),) if self._quirks.exits_on_stdin_eof else ()

    def on_terminate(self) -> Iterable[PeerOutput]:
        """SIGTERM: exit at once."""
        return (ProcessExited(-signal.SIGTERM),)

    # -- messages ----------------------------------------------------------------------------

    def _update(self, update: Mapping[str, Any]) -> StdoutLine:
        params = {"sessionId": self.session_id, "update": dict(update)}
        return frame_line({"jsonrpc": "2.0", "method": "session/update", "params": params})

    def _text(self, text: str, message: int | None = None) -> StdoutLine:
        chunk: dict[str, Any] = {
            "sessionUpdate": "agent_message_chunk",
            "content": {"type": "text", "text": text},
        }
        if self._quirks.message_ids and message is not None:
            chunk["messageId"] = f"msg_{message:04d}"
        return self._update(chunk)

    def _new_message(self) -> int:
        self._messages += 1
        return self._messages

    def _initialized(self, request_id: object) -> StdoutLine:
        return _result(
            request_id,
            {
                "protocolVersion": 1,
                "agentInfo": {"name": "fake-acp", "title": "Fake ACP agent", "version": "0.0.1"},
                "agentCapabilities": {
                    "loadSession": True,
                    "promptCapabilities": {"image": True, "embeddedContext": True},
                    "mcpCapabilities": {"http": True, "sse": True},
                },
                "authMethods": [],
            },
        )

    def _state(self) -> dict[str, Any]:
        """The ``modes`` and ``configOptions`` of a session answer (valid v1 shapes)."""
        return {
            "modes": {
                "currentModeId": self.mode,
                "availableModes": [{"id": mode, "name": mode.title()} for mode in FAKE_MODES],
            },
            "configOptions": self._options(),
        }

    def _options(self) -> list[dict[str, Any]]:
        return [
            {
                "id": "model",
                "name": "Model",
                "category": "model",
                "type": "select",
                "currentValue": self.model,
                "options": [{"value": model, "name": model} for model in FAKE_MODELS],
            }
        ]

    def _set_mode(self, request_id: object, mode: str) -> list[PeerOutput]:
        if mode not in FAKE_MODES:
            return [_error(request_id, -32602, f"Invalid params: no mode {mode}")]
        self.mode = mode
        update = {"sessionUpdate": "current_mode_update", "currentModeId": mode}
        return [self._update(update), _result(request_id, {})]

    def _set_option(self, request_id: object, params: Mapping[str, Any]) -> list[PeerOutput]:
        value = as_str(params.get("value"))
        if params.get("configId") != "model" or value not in FAKE_MODELS:
            return [_error(request_id, -32602, "Invalid params: no such setting or value")]
        self.model = value
        return [_result(request_id, {"configOptions": self._options()})]

    def _commands(self) -> StdoutLine:
        update: dict[str, Any] = {
            "sessionUpdate": "available_commands_update",
            "availableCommands": [],
        }
        return self._update(update)

    def _new(self, request_id: object) -> list[PeerOutput]:
        self.session_id = self._family.new_session_id()
        self.sessions.append(self.session_id)
        self._family.history[self.session_id] = []
        out: list[PeerOutput] = []
        if self._quirks.updates_before_session_id:
            out.append(self._commands())
        out.append(_result(request_id, {"sessionId": self.session_id, **self._state()}))
        out.append(self._commands())
        return out

    def _load(
        self, request_id: object, session_id: str, *, replay: bool = True
    ) -> list[PeerOutput]:
        if session_id in self._family.lost:
            code, message, data = self._quirks.lost_error
            body: dict[str, Any] = {"code": code, "message": message.format(id=session_id)}
            if data:
                body["data"] = {k: str(v).format(id=session_id) for k, v in data.items()}
            return [frame_line({"jsonrpc": "2.0", "id": request_id, "error": body})]
        self.session_id = session_id
        self.sessions.append(session_id)
        history = self._family.history.setdefault(session_id, [])
        if not replay:
            return [_result(request_id, {"configOptions": []})]
        out: list[PeerOutput] = []
        for role, text in history:
            kind = "user_message_chunk" if role == "user" else "agent_message_chunk"
            out.append(
                self._update({"sessionUpdate": kind, "content": {"type": "text", "text": text}})
            )
        answer = _result(request_id, self._state())
        if self._quirks.replays_after_load_response and out:
            return [out[0], answer, *out[1:]]
        return [*out, answer]

    def _tool_call(self, turn: AcpPeerTurn, status: str) -> dict[str, Any]:
        call: dict[str, Any] = {
            "toolCallId": f"call_{self._calls}",
            "status": status,
            "title": turn.tool,
            "kind": turn.tool_kind,
            "content": [],
            "locations": [],
        }
        if turn.raw_input:
            call["rawInput"] = dict(turn.raw_input)
        return call

    def _prompt(self, request_id: object, params: Mapping[str, Any]) -> list[PeerOutput]:
        named = as_str(params.get("sessionId"))
        if self._phase == "idle" and named in self.sessions:
            self.session_id = named
        if named != self.session_id:
            return [_error(request_id, -32602, f"Session not found: {params.get('sessionId')}")]
        prompt = [as_mapping(item) or {} for item in params.get("prompt") or ()]
        text = "".join(as_str(item.get("text")) or "" for item in prompt)
        turn = self._family.turn_for(text)
        if turn is None:
            return [_error(request_id, -32603, "Internal error", details="no scripted turn left")]
        assert self.session_id is not None
        self._family.history[self.session_id].append(("user", text))
        self._turn, self._prompt_id = turn, request_id
        if turn.error is not None:
            return self._failed(request_id, turn.error)
        out: list[PeerOutput] = []
        if self._quirks.notice is not None:
            out.append(self._text(self._quirks.notice))
        if turn.summary is not None:
            out.append(self._text(turn.summary, self._new_message()))
        if turn.tool is None:
            if turn.hang:
                self._phase = "running"
                # An agent that errs on a cancel does so while the model has said nothing.
                if self._quirks.cancel_of_silent_call_errors:
                    return out
                return [*out, self._text("thinking", self._new_message())]
            return out + self._finish(turn.text)
        self._calls += 1
        if turn.ask:
            if self._quirks.announces_permissioned_calls:
                call = self._tool_call(turn, "pending")
                if self._quirks.vague_title is not None:
                    call["title"] = self._quirks.vague_title
                    call.pop("rawInput", None)
                out.append(self._update({"sessionUpdate": "tool_call", **call}))
            self._phase = "asking"
            self._ask_id = self._asks
            self._asks += 1
            ask = {
                "sessionId": self.session_id,
                "options": [dict(option) for option in self._quirks.options],
                "toolCall": self._tool_call(turn, "pending"),
            }
            out.append(
                frame_line(
                    {
                        "jsonrpc": "2.0",
                        "id": self._ask_id,
                        "method": "session/request_permission",
                        "params": ask,
                    }
                )
            )
            return out
        update = {"sessionUpdate": "tool_call", **self._tool_call(turn, "in_progress")}
        return [*out, self._update(update), *self._run_tool(turn)]

    def _run_tool(self, turn: AcpPeerTurn) -> list[PeerOutput]:
        self._phase = "running"
        if turn.die is not None:
            return [ProcessExited(turn.die)]
        if turn.hang:
            return []
        done = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": f"call_{self._calls}",
            "status": "completed",
            "content": [
                {"type": "content", "content": {"type": "text", "text": f"ran {turn.tool}"}}
            ],
        }
        return [self._update(done), *self._finish(turn.text)]

    def _failed(self, request_id: object, error: tuple[int, str]) -> list[PeerOutput]:
        self._phase, self._turn = "idle", None
        quirks = self._quirks
        if not quirks.fails_in_text:
            code, message = error
            return [_error(request_id, code, message, **(quirks.error_data or {}))]
        retrying = "Info: Request failed due to a transient API error. Retrying..."
        out: list[PeerOutput] = [self._text(retrying) for _ in range(quirks.retry_notices)]
        out.append(self._text(f"Error: {error[1]}"))
        out.append(_result(request_id, {"stopReason": "end_turn", **self._usage(None)}))
        return out

    def _usage(self, turn: AcpPeerTurn | None) -> dict[str, Any]:
        """The usage members of a prompt result, for ``turn`` (None: a turn that spent none)."""
        spent = {"input": 0, "output": 0, "cached": 0, "thought": 0}
        if turn is not None:
            spent = {
                "input": turn.input_tokens,
                "output": turn.output_tokens,
                "cached": turn.cached_tokens,
                "thought": turn.thought_tokens,
            }
        style = self._quirks.usage
        if style == "quota":
            if turn is None:
                return {}
            usage = {"input_tokens": spent["input"], "output_tokens": spent["output"]}
            quota = {
                "token_count": usage,
                "model_usage": [{"model": "gemini-3.8-flash", "token_count": usage}],
            }
            return {"_meta": {"quota": quota}}
        if style == "cumulative":
            for key, value in spent.items():
                self._totals[key] += value
            spent = dict(self._totals)
            counted = {
                "inputTokens": spent["input"],
                "outputTokens": spent["output"],
                "cachedReadTokens": spent["cached"],
                "thoughtTokens": spent["thought"],
            }
        else:
            counted = {
                "inputTokens": spent["input"] - spent["cached"],
                "outputTokens": spent["output"] - spent["thought"],
                "cachedReadTokens": spent["cached"],
                "thoughtTokens": spent["thought"],
            }
        counted["totalTokens"] = spent["input"] + spent["output"]
        return {"usage": counted}

    def _finish(self, text: str) -> list[PeerOutput]:
        turn = self._turn
        assert turn is not None
        pieces = max(turn.chunks, 1)
        size = -(-len(text) // pieces) or 1
        message = self._new_message()
        out: list[PeerOutput] = [
            self._text(text[i : i + size], message) for i in range(0, len(text), size)
        ]
        assert self.session_id is not None
        self._family.history[self.session_id].append(("agent", text))
        out.append(_result(self._prompt_id, {"stopReason": "end_turn", **self._usage(turn)}))
        self._phase, self._turn = "idle", None
        return out

    def _rejected(self) -> list[PeerOutput]:
        """A rejected call that ends the turn, with no further model call."""
        failed = {
            "sessionUpdate": "tool_call_update",
            "toolCallId": f"call_{self._calls}",
            "status": "failed",
            "rawOutput": {"message": "The user rejected this tool call.", "code": "rejected"},
        }
        out: list[PeerOutput] = [self._update(failed)]
        if self._quirks.reject_notice is not None:
            out.append(self._text(self._quirks.reject_notice))
        out.append(_result(self._prompt_id, {"stopReason": "end_turn", **self._usage(None)}))
        self._phase, self._turn = "idle", None
        return out

    def _cancelled(self) -> list[PeerOutput]:
        silent = self._turn is not None and self._turn.tool is None and self._phase == "running"
        self._phase, self._turn, self._cancel_pending = "idle", None, False
        if silent and self._quirks.cancel_of_silent_call_errors:
            return [_error(self._prompt_id, -32603, "Internal error: Internal service failure")]
        result = {"stopReason": "cancelled"}
        if self._quirks.usage != "quota":
            result.update(self._usage(None))
        return [_result(self._prompt_id, result)]

    def _on_answer(self, frame: Mapping[str, Any]) -> list[PeerOutput]:
        if frame.get("id") != self._ask_id or self._phase != "asking":
            return []
        result = dict(as_mapping(frame.get("result")) or {})
        self.answers.append(result)
        outcome = as_mapping(result.get("outcome")) or {}
        turn = self._turn
        assert turn is not None
        if self._cancel_pending or outcome.get("outcome") == "cancelled":
            if self._cancel_pending:
                return self._cancelled()
            self._phase = "running"  # cancelled without a cancel: the turn waits for one
            return []
        chosen = as_str(outcome.get("optionId")) or ""
        kinds = {option.get("optionId"): option.get("kind") for option in self._quirks.options}
        if (kinds.get(chosen) or "").startswith("allow"):
            return self._run_tool(turn)
        if self._quirks.reject_ends_turn:
            return self._rejected()
        # Rejected: the model is told and answers again.
        return self._finish("denied")

    def _cancel(self) -> list[PeerOutput]:
        if self._phase == "idle":
            return []
        if self._phase == "asking" and self._quirks.cancel_waits_for_answer:
            self._cancel_pending = True
            return []
        out: list[PeerOutput] = []
        turn = self._turn
        running = turn is not None and turn.tool is not None and self._phase == "running"
        if running and self._quirks.reports_cancelled_calls:
            stopped = {
                "sessionUpdate": "tool_call_update",
                "toolCallId": f"call_{self._calls}",
                "status": "completed",
                "content": [
                    {
                        "type": "content",
                        "content": {"type": "text", "text": "Command cancelled by user."},
                    }
                ],
            }
            out.append(self._update(stopped))
        return out + self._cancelled()


class AcpRecordedPeer(RecordedPeer):
    """Replays a recorded ACP transcript (``transcript.jsonl`` of a capture case).

    Each message written to it is matched with the next recorded input of the same kind (the
    same method, or an answer); recorded inputs skipped on the way are dropped with their
    output. The recorded output that followed the match is printed, with the id of the
    recorded request in each response put back as the id we sent. At end of stdin it prints
    what is left, then exits 0 (the recording's process was stopped by a signal). Recorded
    request ids are numbers, ours strings; the mapping is kept for the whole replay.

    Attributes:
        written: Every line written to it.
    """

    def __init__(self, transcript: Path | str) -> None:
        self._ids: dict[object, object] = {}
        self.written: list[str] = []
        super().__init__(transcript, exits_when_killed=False)

    def kind(self, frame: Mapping[str, Any]) -> str:
        """The request's or notification's method; ``answer`` for a response."""
        return as_str(frame.get("method")) or "answer"

    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        """Print the recorded output that answered the matching recorded input."""
        self.written.append(line)
        return super().on_stdin(line)

    def renamed(
        self, recorded: Mapping[str, Any], sent: Mapping[str, Any], outputs: list[PeerOutput]
    ) -> list[PeerOutput]:
        """``outputs`` with each response to a recorded request of ours addressed to our id."""
        if "method" in sent and sent.get("id") is not None:
            self._ids[recorded.get("id")] = sent.get("id")
        return responses_readdressed(outputs, self._ids)
