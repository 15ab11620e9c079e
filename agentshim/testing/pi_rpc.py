"""Fake long-lived Pi processes that answer the ``--mode rpc`` protocol reactively.

``FakeExecutor(peers=PiRpcPeers([...]))`` makes every spawn a :class:`PiRpcPeer` playing the
next :class:`PiPeerTurn` of one shared script, so a conversation's turns keep their order
across a process that died and a new one that resumed it. The frames copy what Pi 0.73.1
prints (``../shared/transport-captures/pi``): a ``response`` per command (without ``id``
for a line it cannot read or a command it does not know), ``get_state`` naming the session,
``prompt`` accepted before ``agent_start``, the run ending at ``agent_end``, usage on every
assistant ``message_end``, ``steer``/``follow_up`` queued (``queue_update``) and run inside
the same run, and ``abort`` ending the run (the tool's "Command aborted", an empty
``aborted`` assistant message) before its own response.

``PiRpcPeers(..., cli_version="1.6.0")`` speaks Pi 1.x instead (as recorded from 1.6.0 in
``tests/fixtures/pi/stream-1.6.0/``): ``prompt``, ``steer`` and ``follow_up`` responses carry
a ``disposition``, ``message_update`` carries the running usage and the delta only,
``agent_end`` says ``willRetry``, and every run ends with ``agent_settled`` (``aborted`` after
an abort, before the abort's response). A version from 0.80.4 to 0.98 settles without a
disposition.

:class:`PiRecordedPeer` replays a recorded transcript instead: each command written to it
releases the recorded output that followed the matching recorded command.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentshim.core.jsonvalues import as_mapping
from agentshim.doctor.clis import version_key
from agentshim.execution.process import ProcessExited, SpawnRequest, StderrLine, StdoutLine

from .process import FakePeer, PeerOutput
from .transcript import PeerScript, PeerTurn, RecordedPeer, frame_line, id_replaced, json_frame

__all__ = ["PiPeerTurn", "PiRecordedPeer", "PiRpcPeer", "PiRpcPeers"]

CLI_VERSION = "0.73.1"
_PROVIDER = "fake"
_MODEL = "claude-fake-1"
_MILLIS = 1796106234422
_SETTLES_FROM = (0, 80, 4)
_DISPOSITION_FROM = (0, 99)
_BUSY = (
    "Agent is already processing. Specify streamingBehavior ('steer' or 'followUp') to queue "
    "the message."
)


@dataclass(frozen=True, slots=True)
class PiPeerTurn(PeerTurn):
    """One scripted turn of a fake Pi process.

    ``text`` is the answer. With ``tool`` set, the model first calls that tool with
    ``tool_input``; ``hang`` makes the tool (or, without a tool, the answer's stream) run
    until the turn is aborted (then ``text`` is never said); ``until_steered`` makes the
    tool run until a ``steer`` or ``follow_up`` arrives, which Pi then hands the model as the
    next user message (the answer says ``text (and: <message>)``); ``die`` makes the process
    exit with ``die`` (a negative signal number, say) once the tool has started. ``error`` is
    the ``errorMessage`` of a failed model call (``"401 {...}"``), ending the run at once;
    ``retries`` makes Pi retry it that many times after the run's ``agent_end``, as it does
    for a 5xx (``auto_retry_start``, a new run failing the same way, then ``auto_retry_end``
    giving up).
    ``input_tokens``, ``output_tokens`` and ``cost_usd`` are the answer's usage.
    ``handled`` (Pi 1.x) makes the prompt's response say ``"handled"``: no run starts.
    """

    handled: bool = False
    hang: bool = False
    until_steered: bool = False
    die: int | None = None
    error: str | None = None
    retries: int = 0
    input_tokens: int = 100
    output_tokens: int = 20
    cost_usd: float = 0.001


class PiRpcPeers(PeerScript[PiPeerTurn, "PiRpcPeer"]):
    """The processes of one fake Pi: a factory for ``FakeExecutor(peers=...)``.

    Every spawned process plays the next turn of ``turns``. A process started with
    ``--session ID`` carries that id, one started with ``--fork ID`` a new one
    (``ID-fork``); others make one up (``session_id`` or a numbered one). A ``--session``
    id in ``missing`` makes the process fail as Pi does for a session it does not have.

    Attributes:
        peers: Every process spawned, in order.
        requests: Their SpawnRequests.
    """

    def __init__(
        self,
        turns: Iterable[PiPeerTurn],
        *,
        session_id: str | None = None,
        missing: Collection[str] = (),
        cli_version: str = CLI_VERSION,
    ) -> None:
        super().__init__(turns)
        self._session_id = session_id
        self._missing = frozenset(missing)
        key = version_key(cli_version) or ()
        self.settles = key >= _SETTLES_FROM
        """Runs end with ``agent_settled`` (Pi 0.80.4 and later)."""
        self.disposes = key >= _DISPOSITION_FROM
        """Responses to prompts and steers carry a ``disposition`` (Pi 0.99 and later)."""

    def missing(self, session_id: str) -> bool:
        """Whether Pi has no session ``session_id``."""
        return session_id in self._missing

    def __call__(self, request: SpawnRequest) -> FakePeer:
        """Start the next process for ``request``."""
        argv = list(request.argv)
        made_up = self._session_id or f"01a23046-0000-7000-8000-{self.count():012d}"
        if "--session" in argv:
            session_id = argv[argv.index("--session") + 1]
        elif "--fork" in argv:
            session_id = f"{argv[argv.index('--fork') + 1]}-fork"
        else:
            session_id = made_up
        if session_id in self._missing:
            self.spawned(request, None)
            return _MissingSession(session_id)
        peer = PiRpcPeer(self, session_id, argv)
        self.spawned(request, peer)
        return peer


class _MissingSession(FakePeer):
    """``pi --session ID`` for a session Pi does not have: stderr, exit 1, at start."""

    def __init__(self, session_id: str) -> None:
        self._session_id = session_id

    def on_start(self) -> Iterable[PeerOutput]:
        return (StderrLine(f"No session found matching '{self._session_id}'\n"), ProcessExited(1))


def _usage(input_tokens: int, output_tokens: int, cost: float) -> dict[str, Any]:
    return {
        "input": input_tokens,
        "output": output_tokens,
        "cacheRead": 0,
        "cacheWrite": 0,
        "totalTokens": input_tokens + output_tokens,
        "cost": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": cost},
    }


class PiRpcPeer(FakePeer):
    """One fake ``pi --mode rpc`` process.

    Attributes:
        session_id: The conversation id ``get_state`` reports.
        argv: What it was started with.
        model: The model it runs (``set_model`` changes it; an id starting ``unknown`` is
            refused as Pi refuses a model it does not know).
        received: Every command written to it, decoded.
        steered: The ``steer`` and ``follow_up`` messages it took, in order.
    """

    def __init__(self, family: PiRpcPeers, session_id: str, argv: Sequence[str]) -> None:
        self._family = family
        self.session_id = session_id
        self.argv = tuple(argv)
        self.model = _MODEL
        self.provider = _PROVIDER
        self.received: list[dict[str, Any]] = []
        self.steered: list[str] = []
        self._queued: list[str] = []
        self._turn: PiPeerTurn | None = None
        self._phase = "idle"  # idle | streaming | tool
        self._calls = 0

    # -- the FakePeer hooks ----------------------------------------------------------------

    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        """Answer one command the way Pi does."""
        try:
            sent = json_frame(line)
        except ValueError:
            error = f"Failed to parse command: {line.strip()[:40]!r} is not valid JSON"
            return [
                frame_line(
                    {"type": "response", "command": "parse", "success": False, "error": error}
                )
            ]
        if sent is None:
            return []
        self.received.append(sent)
        kind = str(sent.get("type"))
        command_id = sent.get("id")
        handler = {
            "get_state": self._get_state,
            "prompt": self._prompt,
            "steer": self._steer,
            "follow_up": self._steer,
            "abort": self._abort,
            "set_model": self._set_model,
            "switch_session": self._switch_session,
        }.get(kind)
        if kind == "extension_ui_response":
            return []
        if handler is None:
            error = f"Unknown command: {kind}"
            return [
                frame_line({"type": "response", "command": kind, "success": False, "error": error})
            ]
        return handler(command_id, sent)

    def on_stdin_closed(self) -> Iterable[PeerOutput]:
        """Stdin EOF: Pi exits 0 at once, even mid-turn."""
        return (ProcessExited(0),)

    def on_terminate(self) -> Iterable[PeerOutput]:
        """SIGTERM: exit 143 at once, printing nothing more (as Pi does)."""
        return (ProcessExited(-signal.SIGTERM),)

    # -- frames ------------------------------------------------------------------------------

    def _response(self, command_id: object, kind: str, **fields: Any) -> StdoutLine:
        frame: dict[str, Any] = {"id": command_id, "type": "response", "command": kind}
        frame.update({"success": True, **fields})
        return frame_line(frame)

    def _assistant(
        self, content: list[dict[str, Any]], stop: str, usage: dict[str, Any], **extra: Any
    ) -> dict[str, Any]:
        return {
            "role": "assistant",
            "content": content,
            "api": "anthropic-messages",
            "provider": self.provider,
            "model": self.model,
            "usage": usage,
            "stopReason": stop,
            "timestamp": _MILLIS,
            **extra,
        }

    def _user(self, text: str) -> list[PeerOutput]:
        message = {
            "role": "user",
            "content": [{"type": "text", "text": text}],
            "timestamp": _MILLIS,
        }
        return [
            frame_line({"type": "message_start", "message": message}),
            frame_line({"type": "message_end", "message": message}),
        ]

    def _message(self, message: Mapping[str, Any]) -> list[PeerOutput]:
        start: dict[str, Any] = {**message, "content": []}
        return [
            frame_line({"type": "message_start", "message": start}),
            frame_line({"type": "message_end", "message": dict(message)}),
        ]

    def _tool_id(self) -> str:
        return f"toolu_{self._calls:05d}_1"

    # -- reactions ---------------------------------------------------------------------------

    def _get_state(self, command_id: object, sent: Mapping[str, Any]) -> list[PeerOutput]:
        data = {
            "model": {"id": self.model, "provider": self.provider, "api": "anthropic-messages"},
            "thinkingLevel": "off",
            "isStreaming": self._phase != "idle",
            "sessionFile": f"/home/user/.pi/agent/sessions/--work--/{self.session_id}.jsonl",
            "sessionId": self.session_id,
            "messageCount": 0,
            "pendingMessageCount": len(self._queued),
        }
        return [self._response(command_id, "get_state", data=data)]

    def _switch_session(self, command_id: object, sent: Mapping[str, Any]) -> list[PeerOutput]:
        # A session file is <time>_<id>.jsonl; the id is what follows the last "_".
        name = str(sent.get("sessionPath")).rsplit("/", 1)[-1].removesuffix(".jsonl")
        session_id = name.rsplit("_", 1)[-1]
        if self._phase != "idle":
            return [self._response(command_id, "switch_session", success=False, error=_BUSY)]
        if self._family.missing(session_id):
            error = f"Session file not found: {sent.get('sessionPath')}"
            return [self._response(command_id, "switch_session", success=False, error=error)]
        self.session_id = session_id
        return [self._response(command_id, "switch_session", data={"cancelled": False})]

    def _set_model(self, command_id: object, sent: Mapping[str, Any]) -> list[PeerOutput]:
        provider, model = str(sent.get("provider")), str(sent.get("modelId"))
        if model.startswith("unknown"):
            error = f"Model not found: {provider}/{model}"
            return [self._response(command_id, "set_model", success=False, error=error)]
        self.provider, self.model = provider, model
        data = {"id": model, "provider": provider, "api": "anthropic-messages"}
        return [self._response(command_id, "set_model", data=data)]

    def _prompt(self, command_id: object, sent: Mapping[str, Any]) -> list[PeerOutput]:
        if self._phase != "idle":
            return [self._response(command_id, "prompt", success=False, error=_BUSY)]
        turn = self._family.next_turn()
        if turn is None:
            return [StderrLine("fake pi: no scripted turn left\n"), ProcessExited(1)]
        self._turn = turn
        self._queued = []
        if turn.handled and self._family.disposes:
            self._turn = None
            return [self._response(command_id, "prompt", data={"disposition": "handled"})]
        out: list[PeerOutput] = [self._response(command_id, "prompt", **self._disposed("started"))]
        out += [frame_line({"type": "agent_start"}), frame_line({"type": "turn_start"})]
        out += self._user(str(sent.get("message")))
        if turn.error is not None:
            failed = self._assistant([], "error", _usage(0, 0, 0), errorMessage=turn.error)
            out += [*self._message(failed), *self._end(failed, retrying=turn.retries > 0)]
            for attempt in range(1, turn.retries + 1):
                retry = {"attempt": attempt, "maxAttempts": turn.retries, "delayMs": 1}
                out.append(
                    frame_line({"type": "auto_retry_start", **retry, "errorMessage": turn.error})
                )
                out += [frame_line({"type": "agent_start"}), frame_line({"type": "turn_start"})]
                out += [*self._message(failed), *self._end(failed, retrying=attempt < turn.retries)]
            if turn.retries:
                end = {"success": False, "attempt": turn.retries, "finalError": turn.error}
                out.append(frame_line({"type": "auto_retry_end", **end}))
                out += self._settled()
            return out
        if turn.tool is None:
            if turn.hang:
                self._phase = "streaming"
                return out
            return out + self._answer(turn)
        self._calls += 1
        call = {
            "type": "toolCall",
            "id": self._tool_id(),
            "name": turn.tool,
            "arguments": dict(turn.tool_input),
        }
        request = self._assistant([call], "toolUse", _usage(300, 30, 0))
        out += self._message(request)
        ids = {"toolCallId": call["id"], "toolName": turn.tool, "args": dict(turn.tool_input)}
        out.append(frame_line({"type": "tool_execution_start", **ids}))
        out.append(
            frame_line({"type": "tool_execution_update", **ids, "partialResult": {"content": []}})
        )
        if turn.die is not None:
            return [*out, ProcessExited(turn.die)]
        self._phase = "tool"
        if turn.hang or turn.until_steered:
            return out
        ran = f"ran {json.dumps(dict(turn.tool_input), sort_keys=True)}"
        return out + self._tool_done(ran) + self._answer(turn)

    def _tool_done(self, output: str, *, failed: bool = False) -> list[PeerOutput]:
        turn = self._turn
        assert turn is not None
        assert turn.tool is not None
        ids = {"toolCallId": self._tool_id(), "toolName": turn.tool}
        content = [{"type": "text", "text": output}]
        out: list[PeerOutput] = [
            frame_line(
                {
                    "type": "tool_execution_end",
                    **ids,
                    "args": dict(turn.tool_input),
                    "result": {"content": content, "details": {}},
                    "isError": failed,
                }
            )
        ]
        result = {"role": "toolResult", **ids, "content": content, "isError": failed}
        out += [
            frame_line({"type": "message_start", "message": result}),
            frame_line({"type": "message_end", "message": result}),
            frame_line({"type": "turn_end", "message": {}, "toolResults": [result]}),
            frame_line({"type": "turn_start"}),
        ]
        return out

    def _answer(self, turn: PiPeerTurn) -> list[PeerOutput]:
        out: list[PeerOutput] = []
        text = turn.text
        if self._queued:
            out.append(frame_line({"type": "queue_update", "steering": [], "followUp": []}))
            for queued in self._queued:
                out += self._user(queued)
            text = f"{text} (and: {' / '.join(self._queued)})"
            self._queued = []
        usage = _usage(turn.input_tokens, turn.output_tokens, turn.cost_usd)
        final = self._assistant([{"type": "text", "text": text}], "stop", usage)
        start: dict[str, Any] = {**final, "content": []}
        out.append(frame_line({"type": "message_start", "message": start}))
        if self._family.disposes:
            # 1.x: the running usage first, the delta only.
            delta = {"type": "text_delta", "contentIndex": 0, "delta": text}
            update = {"type": "message_update", "usage": usage, "assistantMessageEvent": delta}
        else:
            delta = {"type": "text_delta", "contentIndex": 0, "delta": text, "partial": final}
            update = {"type": "message_update", "assistantMessageEvent": delta, "message": final}
        out.append(frame_line(update))
        out.append(frame_line({"type": "message_end", "message": final}))
        return out + self._end(final)

    def _end(
        self, final: Mapping[str, Any], *, retrying: bool = False, aborted: bool = False
    ) -> list[PeerOutput]:
        """A run's end; ``retrying``: Pi retries it after this ``agent_end`` (no settle yet)."""
        self._phase, self._turn = "idle", None
        end: dict[str, Any] = {"type": "agent_end", "messages": [dict(final)]}
        if self._family.settles:
            end["willRetry"] = retrying
        out: list[PeerOutput] = [
            frame_line({"type": "turn_end", "message": dict(final), "toolResults": []}),
            frame_line(end),
        ]
        return out if retrying else out + self._settled(aborted=aborted)

    def _settled(self, *, aborted: bool = False) -> list[PeerOutput]:
        if not self._family.settles:
            return []
        return [frame_line({"type": "agent_settled", "aborted": aborted})]

    def _disposed(self, disposition: str) -> dict[str, Any]:
        """The ``data`` a 1.x response carries for input Pi ``disposition``-ed."""
        return {"data": {"disposition": disposition}} if self._family.disposes else {}

    def _steer(self, command_id: object, sent: Mapping[str, Any]) -> list[PeerOutput]:
        kind = str(sent.get("type"))
        text = str(sent.get("message"))
        self.steered.append(text)
        self._queued.append(text)
        steering = self._queued if kind == "steer" else []
        follow = self._queued if kind != "steer" else []
        out: list[PeerOutput] = [
            frame_line({"type": "queue_update", "steering": steering, "followUp": follow}),
            self._response(command_id, kind, **self._disposed("queued")),
        ]
        turn = self._turn
        if turn is not None and turn.until_steered and self._phase == "tool":
            out += self._tool_done("(no output)")
            out += self._answer(turn)
        return out

    def _abort(self, command_id: object, sent: Mapping[str, Any]) -> list[PeerOutput]:
        phase = self._phase
        self._queued = []
        done = self._response(command_id, "abort")
        if phase == "idle":
            return [done]
        aborted = self._assistant(
            [], "aborted", _usage(0, 0, 0), errorMessage="Request was aborted."
        )
        out: list[PeerOutput] = []
        if phase == "tool":
            out += self._tool_done("Command aborted", failed=True)
            out += self._message(aborted)
        else:
            partial = self._assistant(
                [{"type": "text", "text": "partial "}],
                "aborted",
                _usage(0, 0, 0),
                errorMessage="Request was aborted.",
            )
            out.append(frame_line({"type": "message_end", "message": partial}))
        return [*out, *self._end(aborted, aborted=True), done]


def _response_id(command_id: str) -> str:
    """How a response line of Pi's begins when it answers ``command_id``."""
    return f'{{"id":{json.dumps(command_id)},'


class PiRecordedPeer(RecordedPeer):
    """Replays a recorded Pi rpc transcript (``transcript.jsonl`` of a capture case).

    Each command written to it is matched with the next recorded command of the same type;
    recorded commands skipped on the way are dropped with their output. The recorded output
    that followed the match is printed, with our command's id in place of the recorded one.
    Recorded commands listed in ``folded`` (by their recorded id) were sent by the recorder
    mid-run, and a transport would not send them: their output, less their own response, is
    printed as part of the command before them. A ``get_state`` that matches nothing before
    the next recorded prompt is answered with the recording's first ``get_state`` data. At
    end of stdin it prints what the recording printed after its last command and exits with
    the recorded status.

    Attributes:
        received: Every command written to it, decoded.
    """

    def __init__(self, transcript: Path | str, *, folded: Collection[str] = ()) -> None:
        self._folded = frozenset(folded)
        self._state: dict[str, Any] = {}
        self.received: list[dict[str, Any]] = []
        super().__init__(transcript)

    def folds(self, recorded: Mapping[str, Any]) -> bool:
        """A command the recorder sent mid-run (named in ``folded``)."""
        return recorded.get("id") in self._folded

    def answers_folded(self, line: str, folded: set[str]) -> bool:
        """The response to one of the step's folded commands."""
        return any(line.startswith(f'{{"id":{json.dumps(old)},"type":"response"') for old in folded)

    def heard(self, line: str) -> None:
        """Keep the first recorded ``get_state`` data."""
        self._remember_state(line)

    def _remember_state(self, line: str) -> None:
        if self._state or '"command":"get_state"' not in line:
            return
        try:
            frame = as_mapping(json.loads(line)) or {}
        except ValueError:
            return
        self._state = dict(as_mapping(frame.get("data")) or {})

    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        """Print the recorded output that answered the matching recorded command."""
        sent = self.decode(line)
        if sent is None:
            return ()
        self.received.append(dict(sent))
        kind = sent.get("type")
        if kind == "get_state" and not self._next_is("get_state"):
            data = dict(self._state)
            return [
                frame_line(
                    {
                        "id": sent.get("id"),
                        "type": "response",
                        "command": "get_state",
                        "success": True,
                        "data": data,
                    }
                )
            ]
        return self.replay(line, sent)

    def _next_is(self, kind: str) -> bool:
        """Whether a recorded ``kind`` comes before the next recorded prompt."""
        for step in self.upcoming():
            recorded = step.recorded or {}
            if recorded.get("type") == kind:
                return True
            if recorded.get("type") == "prompt":
                return False
        return False

    def renamed(
        self, recorded: Mapping[str, Any], sent: Mapping[str, Any], outputs: list[PeerOutput]
    ) -> list[PeerOutput]:
        """``outputs`` with the recorded id of the command's response replaced by ours."""
        return id_replaced(outputs, recorded.get("id"), sent.get("id"), _response_id, count=1)
