"""Fake ``codex app-server`` processes that answer its JSON-RPC protocol reactively.

``FakeExecutor(peers=CodexAppServerPeers([...]))`` makes every spawn a
:class:`CodexAppServerPeer` playing the next :class:`CodexPeerTurn` of one shared script, so a
conversation's turns keep their order across a process that died and a new one that resumed
its thread. The frames copy what codex-cli 0.171.0 prints
(``tests/fixtures/codex/stream/``): no ``jsonrpc`` member, our ids answered as sent, its own
requests (approvals) numbered from 0, ``turn/start`` answered before ``turn/started``, every
item started then completed, one ``thread/tokenUsage/updated`` per model request with the
thread's running total, ``turn/completed`` as the only end, ``turn/interrupt`` completing
nothing that runs (no ``item/completed`` for it), and ``turn/steer`` delivered as a user
message inside the same turn once the running command ends.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentshim.core.jsonvalues import as_mapping, as_str, list_or_empty
from agentshim.execution.process import ProcessExited, SpawnRequest, StderrLine, StdoutLine

from .process import FakePeer, PeerOutput
from .transcript import PeerScript, RecordedPeer, json_frame, responses_readdressed

__all__ = ["CodexAppServerPeer", "CodexAppServerPeers", "CodexPeerTurn", "CodexRecordedPeer"]

CLI_VERSION = "0.171.0"
_MILLIS = 1796105839888
_WINDOW = 258400
_UNKNOWN_THREAD = -32600


@dataclass(frozen=True, slots=True)
class CodexPeerTurn:
    """One scripted turn of a fake app-server.

    ``text`` is the answer. With ``command`` set, the model first runs that shell command
    (``output`` is what it prints, as ``aggregatedOutput``; only its later lines come as
    deltas, as Codex drops the first); ``approve`` makes Codex ask before running it
    (``item/commandExecution/requestApproval``); ``hang`` makes the command (or, without one,
    the answer's stream) run until the turn is interrupted; ``until_steered`` makes the command
    run until a ``turn/steer`` arrives. ``error`` fails the model call with that
    ``codexErrorInfo`` (a string or an object) and ``error_message``. ``input_tokens`` and
    ``output_tokens`` are each model request's usage; ``phase`` the answer's phase.
    ``title`` names the thread as the answer completes (``thread/name/updated``, shaped as
    0.171.0's schema says: ``threadId`` and ``threadName``, a string or null).
    """

    text: str = "done"
    command: str | None = None
    output: str = ""
    approve: bool = False
    hang: bool = False
    until_steered: bool = False
    error: object = None
    error_message: str = "We're currently experiencing high demand."
    input_tokens: int = 1200
    output_tokens: int = 40
    phase: str | None = None
    title: str | None = None


class CodexAppServerPeers(PeerScript[CodexPeerTurn, "CodexAppServerPeer"]):
    """The processes of one fake Codex: a factory for ``FakeExecutor(peers=...)``.

    Every process plays the next turn of ``turns``. Threads are made up per family
    (UUID-shaped); ``thread/resume`` of an id in ``missing`` fails as Codex does for a thread it
    has no rollout of. Usage totals are kept per thread, across processes, as Codex keeps them
    in the thread's rollout.

    Attributes:
        peers: Every process spawned, in order.
        requests: Their SpawnRequests.
        totals: Each thread's running usage (input, cached, output, reasoning).
        last_turns: Each thread's last turn id.
        names: Each named thread's name (a resumed thread's ``thread.name``).
    """

    def __init__(self, turns: Iterable[CodexPeerTurn], *, missing: Collection[str] = ()) -> None:
        super().__init__(turns)
        self._missing = frozenset(missing)
        self.totals: dict[str, list[int]] = {}
        self.last_turns: dict[str, str] = {}
        self.names: dict[str, str | None] = {}

    def new_id(self) -> str:
        """A fresh UUIDv7-shaped id."""
        return f"01a23040-0000-7000-8000-{self.count():012d}"

    def missing(self, thread_id: str) -> bool:
        """Whether Codex has no rollout of ``thread_id``."""
        return thread_id in self._missing

    def __call__(self, request: SpawnRequest) -> FakePeer:
        """Start the next process for ``request``."""
        peer = CodexAppServerPeer(self, request.argv)
        self.spawned(request, peer)
        return peer


def _line(frame: Mapping[str, Any]) -> StdoutLine:
    return StdoutLine(json.dumps(frame, separators=(",", ":"), ensure_ascii=False) + "\n")


def _note(method: str, params: Mapping[str, Any]) -> StdoutLine:
    return _line({"method": method, "params": dict(params), "emittedAtMs": _MILLIS})


def _usage(counts: Sequence[int]) -> dict[str, int]:
    inp, cached, out, reasoning = counts
    return {
        "totalTokens": inp + out,
        "inputTokens": inp,
        "cachedInputTokens": cached,
        "cacheWriteInputTokens": 0,
        "outputTokens": out,
        "reasoningOutputTokens": reasoning,
    }


def _texts(value: object) -> list[str]:
    """The texts of a ``[{"type": "text", "text"}]`` input."""
    texts: list[str] = []
    for entry in list_or_empty(value):
        part = as_mapping(entry)
        if part is not None and part.get("type") == "text":
            texts.append(str(part.get("text")))
    return texts


class CodexAppServerPeer(FakePeer):
    """One fake ``codex app-server`` process.

    Attributes:
        argv: What it was started with.
        received: Every message written to it, decoded.
        steered: The steered texts it took.
        thread_id: The thread it holds, once one is started or resumed.
    """

    def __init__(self, family: CodexAppServerPeers, argv: Sequence[str]) -> None:
        self._family = family
        self.argv = tuple(argv)
        self.received: list[dict[str, Any]] = []
        self.steered: list[str] = []
        self.thread_id: str | None = None
        self._turn: CodexPeerTurn | None = None
        self._turn_id: str | None = None
        self._phase = "idle"  # idle | streaming | command | approval
        self._calls = 0
        self._server_ids = 0
        self._pending_approval: int | None = None
        self._command_id: str | None = None
        self._queued: list[str] = []

    # -- the FakePeer hooks ----------------------------------------------------------------

    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        """Answer one message the way the app-server does."""
        try:
            sent = json_frame(line)
        except ValueError:
            return [StderrLine(f"ERROR codex_app_server: invalid JSON-RPC message: {line[:40]}\n")]
        if sent is None:
            return []
        self.received.append(sent)
        method = as_str(sent.get("method"))
        request_id = sent.get("id")
        params = as_mapping(sent.get("params")) or {}
        if method is None:
            return self._on_reply(request_id, sent)
        if request_id is None:
            return []  # initialized, or another notification
        handler = {
            "initialize": self._initialize,
            "thread/start": self._thread_start,
            "thread/resume": self._thread_resume,
            "thread/fork": self._thread_fork,
            "thread/unsubscribe": self._thread_unsubscribe,
            "turn/start": self._turn_start,
            "turn/interrupt": self._interrupt,
            "turn/steer": self._steer,
        }.get(method)
        if handler is None:
            return [self._error(request_id, -32601, f"unknown method {method}")]
        return handler(request_id, params)

    def on_stdin_closed(self) -> Iterable[PeerOutput]:
        """Stdin EOF: the app-server exits 0."""
        return (ProcessExited(0),)

    # -- frames ------------------------------------------------------------------------------

    def _result(self, request_id: object, result: Mapping[str, Any]) -> StdoutLine:
        return _line({"id": request_id, "result": dict(result)})

    def _error(self, request_id: object, code: int, message: str) -> StdoutLine:
        return _line({"error": {"code": code, "message": message}, "id": request_id})

    def _thread(self, thread_id: str) -> dict[str, Any]:
        return {
            "id": thread_id,
            "sessionId": thread_id,
            "forkedFromId": None,
            "preview": "",
            "ephemeral": False,
            "historyMode": "paginated",
            "modelProvider": "fake",
            "model": "fake-model",
            "reasoningEffort": None,
            "createdAt": 1796105839,
            "updatedAt": 1796105839,
            "status": {"type": "idle"},
            "path": f"/home/user/.codex/sessions/2026/12/01/rollout-{thread_id}.jsonl",
            "cwd": "/home/user/work",
            "cliVersion": CLI_VERSION,
            "source": "vscode",
            "turns": [],
            "name": self._family.names.get(thread_id),
        }

    def _thread_result(self, thread_id: str) -> dict[str, Any]:
        return {
            "thread": self._thread(thread_id),
            "model": "fake-model",
            "modelProvider": "fake",
            "cwd": "/home/user/work",
            "approvalPolicy": "never",
            "approvalsReviewer": "user",
            "sandbox": {"type": "dangerFullAccess"},
        }

    def _turn_frame(self, status: str, error: object = None) -> dict[str, Any]:
        return {
            "id": self._turn_id,
            "rootTurnId": self._turn_id,
            "items": [],
            "itemsView": "notLoaded",
            "status": status,
            "error": error,
            "startedAt": 1796105839,
            "completedAt": None if status == "inProgress" else 1796105839,
            "durationMs": None if status == "inProgress" else 344,
        }

    def _ids(self) -> dict[str, Any]:
        return {"threadId": self.thread_id, "turnId": self._turn_id}

    def _item(self, event: str, item: Mapping[str, Any]) -> StdoutLine:
        if event == "started":
            stamped = {**item, "startedAtMs": _MILLIS, "completedAtMs": None}
            return _note("item/started", {"item": stamped, **self._ids(), "startedAtMs": _MILLIS})
        stamped = {**item, "startedAtMs": _MILLIS, "completedAtMs": _MILLIS}
        ends = {"contentTokenCount": None, "completedAtMs": _MILLIS}
        return _note("item/completed", {"item": stamped, **self._ids(), **ends})

    def _token_usage(self, counts: Sequence[int] | None) -> StdoutLine:
        thread = self.thread_id or ""
        total = self._family.totals.setdefault(thread, [0, 0, 0, 0])
        if counts is not None:
            for index, value in enumerate(counts):
                total[index] += value
        last = counts if counts is not None else total
        usage = {"total": _usage(total), "last": _usage(last), "modelContextWindow": _WINDOW}
        return _note("thread/tokenUsage/updated", {**self._ids(), "tokenUsage": usage})

    def _message(self, item_id: str, text: str, phase: str | None = None) -> list[PeerOutput]:
        item = {"type": "agentMessage", "id": item_id, "text": "", "phase": phase}
        delta = {**self._ids(), "itemId": item_id, "delta": text}
        return [
            self._item("started", item),
            _note("item/agentMessage/delta", delta),
            self._item("completed", {**item, "text": text}),
        ]

    def _user(self, text: str) -> list[PeerOutput]:
        item: dict[str, Any] = {
            "type": "userMessage",
            "id": self._family.new_id(),
            "clientId": None,
            "content": [{"type": "text", "text": text, "text_elements": []}],
        }
        return [self._item("started", item), self._item("completed", item)]

    def _command(self, turn: CodexPeerTurn, status: str) -> dict[str, Any]:
        done = status != "inProgress"
        return {
            "type": "commandExecution",
            "id": self._command_id,
            "command": f"/bin/bash -lc '{turn.command}'",
            "cwd": "/home/user/work",
            "processId": "48101",
            "source": "unifiedExecStartup",
            "status": status,
            "commandActions": [{"type": "unknown", "command": turn.command}],
            "aggregatedOutput": turn.output if status == "completed" else None,
            "exitCode": 0 if status == "completed" else None,
            "durationMs": 5 if done else None,
        }

    def _end(self, status: str, error: object = None) -> list[PeerOutput]:
        self._phase, self._turn = "idle", None
        return [
            _note(
                "thread/status/changed", {"threadId": self.thread_id, "status": {"type": "idle"}}
            ),
            _note(
                "turn/completed",
                {"threadId": self.thread_id, "turn": self._turn_frame(status, error)},
            ),
        ]

    # -- reactions ---------------------------------------------------------------------------

    def _initialize(self, request_id: object, params: Mapping[str, Any]) -> list[PeerOutput]:
        info = as_mapping(params.get("clientInfo")) or {}
        name = as_str(info.get("name")) or "client"
        agent = f"{name}/{CLI_VERSION} (Debian 12.0.0; x86_64) unknown ({name}; 0.0.1)"
        result = {
            "userAgent": agent,
            "codexHome": "/home/user/.codex",
            "platformFamily": "unix",
            "platformOs": "linux",
        }
        warning = {"summary": "Codex could not find bubblewrap on PATH.", "details": None}
        return [self._result(request_id, result), _note("configWarning", warning)]

    def _thread_start(self, request_id: object, params: Mapping[str, Any]) -> list[PeerOutput]:
        self.thread_id = self._family.new_id()
        result = self._thread_result(self.thread_id)
        return [
            self._result(request_id, result),
            _note("thread/started", {"thread": result["thread"]}),
        ]

    def _thread_resume(self, request_id: object, params: Mapping[str, Any]) -> list[PeerOutput]:
        thread_id = as_str(params.get("threadId")) or ""
        if self._family.missing(thread_id):
            message = f"no rollout found for thread id {thread_id}"
            return [self._error(request_id, _UNKNOWN_THREAD, message)]
        self.thread_id = thread_id
        out: list[PeerOutput] = [self._result(request_id, self._thread_result(thread_id))]
        if thread_id in self._family.totals:
            # The stored total is replayed at once, naming the thread's last turn.
            self._turn_id = self._family.last_turns.get(thread_id, self._family.new_id())
            out.append(self._token_usage(None))
        return out

    def _thread_fork(self, request_id: object, params: Mapping[str, Any]) -> list[PeerOutput]:
        source = as_str(params.get("threadId")) or ""
        if self._family.missing(source):
            message = f"no rollout found for thread id {source}"
            return [self._error(request_id, _UNKNOWN_THREAD, message)]
        self.thread_id = self._family.new_id()
        result = self._thread_result(self.thread_id)
        result["thread"]["forkedFromId"] = source
        out: list[PeerOutput] = [
            self._result(request_id, result),
            _note("thread/started", {"thread": result["thread"]}),
        ]
        if source in self._family.totals:
            # The fork carries the source's history, and so its usage total.
            self._family.totals[self.thread_id] = list(self._family.totals[source])
            self._turn_id = self._family.last_turns.get(source, self._family.new_id())
            out.append(self._token_usage(None))
        return out

    def _thread_unsubscribe(
        self, request_id: object, params: Mapping[str, Any]
    ) -> list[PeerOutput]:
        del params  # every thread is taken as loaded and subscribed
        return [self._result(request_id, {"status": "unsubscribed"})]

    def _turn_start(self, request_id: object, params: Mapping[str, Any]) -> list[PeerOutput]:
        if self._phase != "idle":
            return [self._error(request_id, -32600, "a turn is already running")]
        turn = self._family.next_turn()
        if turn is None:
            return [StderrLine("fake codex: no scripted turn left\n"), ProcessExited(1)]
        self._turn = turn
        self._queued = []
        # One process may hold several threads: the turn runs on the thread it names.
        self.thread_id = as_str(params.get("threadId")) or self.thread_id
        self._turn_id = self._family.new_id()
        self._family.last_turns[self.thread_id or ""] = self._turn_id
        self._calls += 1
        texts = _texts(params.get("input"))
        out: list[PeerOutput] = [
            _note(
                "warning",
                {
                    "threadId": self.thread_id,
                    "message": "Model metadata for `fake-model` not found.",
                },
            ),
            self._result(request_id, {"turn": self._turn_frame("inProgress")}),
            _note(
                "thread/status/changed",
                {"threadId": self.thread_id, "status": {"type": "active", "activeFlags": []}},
            ),
            _note(
                "turn/started", {"threadId": self.thread_id, "turn": self._turn_frame("inProgress")}
            ),
            *self._user(" ".join(texts)),
        ]
        if turn.error is not None:
            error = {
                "message": turn.error_message,
                "codexErrorInfo": turn.error,
                "additionalDetails": None,
                "misalignment": None,
            }
            out.append(_note("error", {"error": error, "willRetry": False, **self._ids()}))
            return out + self._end("failed", error)
        if turn.command is None:
            if turn.hang:
                self._phase = "streaming"
                item: dict[str, Any] = {
                    "type": "agentMessage",
                    "id": f"msg_{self._calls:05d}_0",
                    "text": "",
                }
                delta = {**self._ids(), "itemId": item["id"], "delta": "Thinking"}
                return [*out, self._item("started", item), _note("item/agentMessage/delta", delta)]
            return out + self._answer(turn)
        self._command_id = f"call_{self._calls:05d}_1"
        out += self._message(f"msg_{self._calls:05d}_0", "Running it.")
        out.append(self._item("started", self._command(turn, "inProgress")))
        if turn.approve:
            self._phase = "approval"
            self._pending_approval = self._server_ids
            self._server_ids += 1
            approval = {
                "kind": "command",
                **self._ids(),
                "itemId": self._command_id,
                "startedAtMs": _MILLIS,
                "environmentId": "local",
                "command": f"/bin/bash -lc '{turn.command}'",
                "cwd": "/home/user/work",
                "commandActions": [{"type": "unknown", "command": turn.command}],
                "availableDecisions": ["accept", "cancel"],
            }
            method = "item/commandExecution/requestApproval"
            out.append(_line({"method": method, "id": self._pending_approval, "params": approval}))
            return out
        return out + self._run_command(turn)

    def _run_command(self, turn: CodexPeerTurn) -> list[PeerOutput]:
        self._phase = "command"
        out: list[PeerOutput] = [self._token_usage((100, 0, 10, 0))]
        lines = turn.output.splitlines(keepends=True)
        for chunk in lines[1:]:  # the first chunk never comes as a delta
            delta = {**self._ids(), "itemId": self._command_id, "delta": chunk}
            out.append(_note("item/commandExecution/outputDelta", delta))
        if turn.hang or turn.until_steered:
            return out
        return out + self._finish_command(turn, "completed")

    def _finish_command(self, turn: CodexPeerTurn, status: str) -> list[PeerOutput]:
        out: list[PeerOutput] = [self._item("completed", self._command(turn, status))]
        return out + self._answer(turn)

    def _answer(self, turn: CodexPeerTurn) -> list[PeerOutput]:
        text = turn.text
        out: list[PeerOutput] = []
        if self._queued:
            text = f"{text} (and: {' / '.join(self._queued)})"
            self._queued = []
        out += self._message(f"msg_{self._calls:05d}_9", text, turn.phase)
        out.append(self._token_usage((turn.input_tokens, 0, turn.output_tokens, 0)))
        if turn.title is not None:
            self._family.names[self.thread_id or ""] = turn.title or None
            named = {"threadId": self.thread_id, "threadName": turn.title or None}
            out.append(_note("thread/name/updated", named))
        return out + self._end("completed")

    def _on_reply(self, request_id: object, sent: Mapping[str, Any]) -> list[PeerOutput]:
        turn = self._turn
        if request_id != self._pending_approval or turn is None or self._phase != "approval":
            return []
        self._pending_approval = None
        decision = (as_mapping(sent.get("result")) or {}).get("decision")
        resolved = _note(
            "serverRequest/resolved", {"threadId": self.thread_id, "requestId": request_id}
        )
        if decision == "cancel":
            return [resolved, self._token_usage(None), *self._end("interrupted")]
        if decision != "accept":
            return [resolved, *self._finish_command(turn, "declined")]
        return [resolved, *self._run_command(turn)]

    def _interrupt(self, request_id: object, params: Mapping[str, Any]) -> list[PeerOutput]:
        done = self._result(request_id, {})
        if self._phase == "idle":
            return [done]
        # Nothing running is completed: the command's item stays open.
        return [self._token_usage(None), done, *self._end("interrupted")]

    def _steer(self, request_id: object, params: Mapping[str, Any]) -> list[PeerOutput]:
        if self._phase == "idle" or params.get("expectedTurnId") != self._turn_id:
            return [self._error(request_id, -32600, "no active turn to steer")]
        texts = _texts(params.get("input"))
        text = " ".join(texts)
        self.steered.append(text)
        self._queued.append(text)
        out: list[PeerOutput] = [self._result(request_id, {"turnId": self._turn_id})]
        turn = self._turn
        if turn is not None and turn.until_steered and self._phase == "command":
            out.append(self._item("completed", self._command(turn, "completed")))
            out += self._user(text)
            out += self._answer(turn)
        return out


class CodexRecordedPeer(RecordedPeer):
    """Replays a recorded app-server transcript (``tests/fixtures/codex/stream/<case>``).

    Each message written to it is matched with the next recorded message of the same method
    (a reply to one of its requests with the next recorded reply); recorded messages skipped
    on the way are dropped with their output. The recorded output that followed the match is
    printed, with our request's id in place of the recorded one in its response. At end of
    stdin it prints what the recording printed after its last message and exits.

    Attributes:
        received: Every message written to it, decoded.
    """

    def __init__(self, transcript: Path | str) -> None:
        self.received: list[dict[str, Any]] = []
        super().__init__(transcript)

    def kind(self, frame: Mapping[str, Any]) -> str:
        """A request or notification by its method; our answers to its requests are replies."""
        return as_str(frame.get("method")) or "reply"

    def renamed(
        self, recorded: Mapping[str, Any], sent: Mapping[str, Any], outputs: list[PeerOutput]
    ) -> list[PeerOutput]:
        """The response to the recorded request answers ours, by our id."""
        self.received.append(dict(sent))
        old, new = recorded.get("id"), sent.get("id")
        if old is None or new is None or "method" not in recorded:
            return list(outputs)
        return responses_readdressed(outputs, {old: new}, _line)
