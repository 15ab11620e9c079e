"""A fake ACP agent written against the v1 schema: it plays any script of frames.

Each prompt plays the next script: ``session/update`` notifications go out as they are;
a request (a frame with ``method`` and ``id``) waits for the client's answer before the
rest of the script goes on; the prompt's response comes last, with the script's
``stopReason`` and optional ``usage``. Every message the client wrote is kept in
``received``, every answer to its own requests in ``answers`` (by request id).
"""

from __future__ import annotations

import json
import signal
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from agentshim.execution.process import ProcessExited, StdoutLine
from agentshim.testing.process import FakePeer, PeerOutput

SESSION = "sess_0001"


def line(frame: Mapping[str, Any]) -> StdoutLine:
    return StdoutLine(json.dumps(frame, separators=(",", ":")) + "\n")


def update(body: Mapping[str, Any], session: str = SESSION) -> dict[str, Any]:
    """A ``session/update`` notification carrying ``body``."""
    return {
        "jsonrpc": "2.0",
        "method": "session/update",
        "params": {"sessionId": session, "update": dict(body)},
    }


def ask(request_id: int, method: str, **params: Any) -> dict[str, Any]:
    """A request of the agent's (its ``sessionId`` added)."""
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": method,
        "params": {"sessionId": SESSION, **params},
    }


def text(chunk: str, kind: str = "agent_message_chunk") -> dict[str, Any]:
    return update({"sessionUpdate": kind, "content": {"type": "text", "text": chunk}})


@dataclass
class Script:
    """One prompt's frames, and how the prompt ends."""

    frames: list[dict[str, Any]]
    stop_reason: str = "end_turn"
    usage: Mapping[str, Any] | None = None
    error: tuple[int, str] | None = None


@dataclass
class Initialize:
    """What ``initialize`` answers (v1 fields)."""

    protocol_version: object = 1
    agent_capabilities: Mapping[str, Any] = field(
        default_factory=lambda: {
            "loadSession": True,
            "promptCapabilities": {"image": True, "embeddedContext": True},
            "sessionCapabilities": {"close": {}, "list": {}, "resume": {}},
        }
    )
    auth_methods: list[Mapping[str, Any]] = field(default_factory=list[Mapping[str, Any]])


class SchemaAgent(FakePeer):
    """Plays ``scripts``, one per prompt (see the module docstring)."""

    def __init__(self, scripts: Iterable[Script], init: Initialize | None = None) -> None:
        self.scripts = deque(scripts)
        self.init = init or Initialize()
        self.received: list[dict[str, Any]] = []
        self.answers: dict[object, dict[str, Any]] = {}
        self._pending: deque[dict[str, Any]] = deque()
        self._waiting: object = None
        self._prompt_id: object = None
        self._script: Script | None = None

    def on_stdin(self, raw: str) -> Iterable[PeerOutput]:
        frame = json.loads(raw)
        self.received.append(frame)
        method = frame.get("method")
        request_id = frame.get("id")
        if method is None:
            self.answers[request_id] = frame
            if request_id == self._waiting:
                self._waiting = None
                return self._play()
            return ()
        if method == "initialize":
            result = {
                "protocolVersion": self.init.protocol_version,
                "agentCapabilities": dict(self.init.agent_capabilities),
                "authMethods": list(self.init.auth_methods),
                "agentInfo": {"name": "schema-agent", "version": "1.0.0"},
            }
            return (line({"jsonrpc": "2.0", "id": request_id, "result": result}),)
        if method in ("authenticate", "session/set_mode", "session/close"):
            return (line({"jsonrpc": "2.0", "id": request_id, "result": {}}),)
        if method == "session/new":
            return (line({"jsonrpc": "2.0", "id": request_id, "result": {"sessionId": SESSION}}),)
        if method == "session/prompt":
            self._script = self.scripts.popleft()
            self._prompt_id = request_id
            self._pending = deque(self._script.frames)
            return self._play()
        if method == "session/cancel":
            if self._script is None:
                return ()
            self._pending.clear()
            self._waiting = None
            self._script.stop_reason = "cancelled"
            return self._play()
        if request_id is not None:
            error = {"code": -32601, "message": f"Method not found: {method}"}
            return (line({"jsonrpc": "2.0", "id": request_id, "error": error}),)
        return ()

    def _play(self) -> list[PeerOutput]:
        out: list[PeerOutput] = []
        while self._pending:
            frame = self._pending.popleft()
            out.append(line(frame))
            if "method" in frame and "id" in frame:
                self._waiting = frame["id"]
                return out
        script = self._script
        if script is None:
            return out
        self._script = None
        if script.error is not None:
            code, message = script.error
            body = {"code": code, "message": message}
            out.append(line({"jsonrpc": "2.0", "id": self._prompt_id, "error": body}))
            return out
        result: dict[str, Any] = {"stopReason": script.stop_reason}
        if script.usage is not None:
            result["usage"] = dict(script.usage)
        out.append(line({"jsonrpc": "2.0", "id": self._prompt_id, "result": result}))
        return out

    def on_stdin_closed(self) -> Iterable[PeerOutput]:
        return (ProcessExited(0),)

    def on_terminate(self) -> Iterable[PeerOutput]:
        return (ProcessExited(-signal.SIGTERM),)
