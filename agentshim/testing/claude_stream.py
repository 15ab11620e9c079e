"""Fake long-lived Claude Code processes that answer the stream-json protocol reactively.

``FakeExecutor(peers=ClaudeStreamPeers([...]))`` makes every spawn a :class:`ClaudeStreamPeer`
playing the next :class:`ClaudePeerTurn` of one shared script, so a conversation's turns keep
their order across a process that died and a new one that resumed it. The frames copy what
Claude Code 2.1.197 prints (``../shared/transport-captures/claude``): ``system/init`` per
turn, one ``assistant`` line per content block, ``control_request`` ``can_use_tool`` for a
tool that needs permission, the interrupt sequence (``control_response``, the rejected tool
result, the "[Request interrupted by user…]" marker, a ``result`` of
``error_during_execution``), ``control_cancel_request`` for a permission request the
interrupt withdrew, a process-wide ``total_cost_usd``, and exit 1 on a line that is not JSON.

:class:`ClaudeRecordedPeer` replays a recorded transcript instead: each line written to it
releases the recorded output that followed the matching recorded input.

A process sent ``initialize`` with ``sdkMcpServers`` runs a scripted ``mcp__<server>__<tool>``
call through an ``mcp_message`` ``tools/call`` request and reports what the answer holds; one
sent ``hooks`` asks its PreToolUse hook before a tool (a deny or an ``updatedInput`` is
honoured), its PostToolUse hook after one, and its Stop hook before the result, each as a
``hook_callback`` request it waits on, as the a3 capture shows.
"""

from __future__ import annotations

import dataclasses
import json
import signal
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentshim.core.jsonvalues import as_mapping, list_or_empty
from agentshim.execution.process import ProcessExited, SpawnRequest, StderrLine, StdoutLine

from .process import FakePeer, PeerOutput
from .transcript import PeerScript, PeerTurn, RecordedPeer, frame_line, id_replaced, json_frame

__all__ = ["ClaudePeerTurn", "ClaudeRecordedPeer", "ClaudeStreamPeer", "ClaudeStreamPeers"]

CLI_VERSION = "2.1.197"
_MODEL = "claude-opus-4-8[1m]"
_REJECTED = (
    "The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it "
    "was a file edit, the new_string was NOT written to the file). STOP what you are doing and "
    "wait for the user to tell you how to proceed."
)


@dataclass(frozen=True, slots=True)
class ClaudePeerTurn(PeerTurn):
    """One scripted turn of a fake Claude Code process.

    ``text`` is the answer. With ``tool`` set, the model first calls that tool with
    ``tool_input``; ``ask`` makes the CLI ask permission for it (a ``can_use_tool`` request
    the turn waits on; the tool's result echoes the input it was allowed to run with, or the
    deny message); ``hang`` makes the tool run until the turn is interrupted (then ``text``
    is never said); ``die`` makes the process exit with ``die`` (a negative signal number,
    say) once the tool has started. ``error`` makes the result report an API failure with
    that text and ``api_error_status``. ``cost_usd`` is this turn's cost; the result reports
    the process's running total, as the real CLI does.
    """

    ask: bool = False
    hang: bool = False
    die: int | None = None
    error: str | None = None
    api_error_status: int | None = None
    input_tokens: int = 100
    output_tokens: int = 20
    cost_usd: float = 0.001


class ClaudeStreamPeers(PeerScript[ClaudePeerTurn, "ClaudeStreamPeer"]):
    """The processes of one fake Claude Code: a factory for ``FakeExecutor(peers=...)``.

    Every spawned process plays the next turn of ``turns``. A process started with
    ``--resume ID`` carries that id; others make one up (``session_id`` or a numbered one).

    Attributes:
        peers: Every process spawned, in order.
        requests: Their SpawnRequests.
    """

    def __init__(self, turns: Iterable[ClaudePeerTurn], *, session_id: str | None = None) -> None:
        super().__init__(turns)
        self._session_id = session_id

    def __call__(self, request: SpawnRequest) -> ClaudeStreamPeer:
        """Start the next process for ``request``."""
        argv = list(request.argv)
        number = self.count()
        if "--resume" in argv and "--fork-session" not in argv:
            session_id = argv[argv.index("--resume") + 1]
        else:
            session_id = self._session_id or f"00000000-0000-4000-8000-{number:012d}"
            if self._session_id is not None and "--fork-session" in argv:
                session_id = f"{self._session_id}-fork"
        peer = ClaudeStreamPeer(self, session_id, argv)
        self.spawned(request, peer)
        return peer


class ClaudeStreamPeer(FakePeer):
    """One fake ``claude -p --input-format stream-json`` process.

    Attributes:
        session_id: The conversation id it reports.
        argv: What it was started with.
        received: Every frame written to it, decoded.
        steered: User messages that arrived while a turn ran (folded into that turn).
        answers: The ``response`` of every answer to one of its permission requests.
    """

    def __init__(self, family: ClaudeStreamPeers, session_id: str, argv: Sequence[str]) -> None:
        self._family = family
        self.session_id = session_id
        self.argv = tuple(argv)
        self.model = _MODEL
        self.received: list[dict[str, Any]] = []
        self.steered: list[str] = []
        self.answers: list[dict[str, Any]] = []
        self._turn: ClaudePeerTurn | None = None
        self._phase = "idle"  # idle | asking | running
        self._ask_id = ""
        self._messages = 0
        self._cost = 0.0
        self.sdk_servers: tuple[str, ...] = ()
        self.hooks: dict[str, list[str]] = {}
        self._waiting: dict[str, Callable[[Mapping[str, Any]], list[PeerOutput]]] = {}
        self._asked = 0

    # -- the FakePeer hooks ----------------------------------------------------------------

    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        """Answer one stdin line the way Claude Code does."""
        try:
            frame = json_frame(line)
        except ValueError:
            text = line.strip()
            message = f"Error parsing streaming input line: {text}: SyntaxError: JSON Parse error"
            return (StderrLine(message + "\n"), ProcessExited(1))
        if frame is None:
            return (StderrLine("Error parsing streaming input line\n"), ProcessExited(1))
        self.received.append(frame)
        kind = frame.get("type")
        if kind == "user":
            return self._on_user(frame)
        if kind == "control_request":
            return self._on_control(frame)
        if kind == "control_response":
            return self._on_answer(frame)
        return ()

    def on_stdin_closed(self) -> Iterable[PeerOutput]:
        """Stdin EOF: a running turn is abandoned here, and the process exits 0."""
        return (ProcessExited(0),)

    def on_terminate(self) -> Iterable[PeerOutput]:
        """SIGTERM: exit 143 at once, printing nothing more (as Claude Code does)."""
        return (ProcessExited(-signal.SIGTERM),)

    # -- frames ------------------------------------------------------------------------------

    def _common(self) -> dict[str, Any]:
        return {"session_id": self.session_id, "uuid": f"uuid-{self._messages}"}

    def _init(self) -> StdoutLine:
        return frame_line(
            {
                "type": "system",
                "subtype": "init",
                "cwd": "/work",
                "session_id": self.session_id,
                "tools": ["Bash", "Edit", "Read", "Write"],
                "mcp_servers": [],
                "model": self.model,
                "permissionMode": "default",
                "apiKeySource": "ANTHROPIC_API_KEY",
                "claude_code_version": CLI_VERSION,
                "uuid": f"init-{self._messages}",
            }
        )

    def _assistant(self, block: Mapping[str, Any]) -> StdoutLine:
        usage = {
            "input_tokens": 300,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 1,
        }
        message = {
            "id": f"msg_{self._messages:05d}",
            "type": "message",
            "role": "assistant",
            "model": "claude-opus-4-8",
            "content": [dict(block)],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": usage,
            "context_management": None,
        }
        return frame_line(
            {"type": "assistant", "message": message, "parent_tool_use_id": None, **self._common()}
        )

    def _user(self, content: list[dict[str, Any]], **extra: Any) -> StdoutLine:
        message = {"role": "user", "content": content}
        return frame_line(
            {
                "type": "user",
                "message": message,
                "parent_tool_use_id": None,
                **self._common(),
                **extra,
            }
        )

    def _tool_id(self) -> str:
        return f"toolu_{self._messages:05d}_1"

    def _result(self, turn: ClaudePeerTurn, text: str | None, *, interrupted: bool) -> StdoutLine:
        if not interrupted:
            self._cost += turn.cost_usd
        usage = {
            "input_tokens": 0 if interrupted else turn.input_tokens,
            "cache_creation_input_tokens": 0,
            "cache_read_input_tokens": 0,
            "output_tokens": 0 if interrupted else turn.output_tokens,
        }
        frame: dict[str, Any] = {
            "type": "result",
            "subtype": "error_during_execution" if interrupted else "success",
            "is_error": interrupted or turn.error is not None,
            "duration_ms": 10,
            "num_turns": 1,
            "session_id": self.session_id,
            "total_cost_usd": round(self._cost, 10),
            "usage": usage,
            "modelUsage": {
                self.model: {"inputTokens": 0, "outputTokens": 0, "costUSD": self._cost}
            },
            "permission_denials": [],
            "terminal_reason": "aborted_tools" if interrupted else "completed",
            "uuid": f"result-{self._messages}",
        }
        if not interrupted:
            frame["result"] = turn.error if turn.error is not None else text
            frame["api_error_status"] = turn.api_error_status
            frame["stop_reason"] = "end_turn"
        else:
            frame["errors"] = ["[ede_diagnostic] result_type=user"]
        return frame_line(frame)

    def _answer_text(self, turn: ClaudePeerTurn) -> str:
        if self.steered:
            return f"{turn.text} (and: {' / '.join(self.steered)})"
        return turn.text

    def _finish(self, turn: ClaudePeerTurn, *, stop_asked: bool = False) -> list[PeerOutput]:
        if "Stop" in self.hooks and not stop_asked:
            fields = {"stop_hook_active": False, "last_assistant_message": turn.text}
            return self._hook("Stop", fields, lambda _: self._finish(turn, stop_asked=True))
        self._phase, self._turn = "idle", None
        text = self._answer_text(turn)
        out: list[PeerOutput] = []
        if turn.error is None:
            out.append(self._assistant({"type": "text", "text": text}))
        else:
            out.append(self._assistant({"type": "text", "text": turn.error}))
        out.append(self._result(turn, text, interrupted=False))
        return out

    # -- reactions ---------------------------------------------------------------------------

    def _on_user(self, frame: Mapping[str, Any]) -> list[PeerOutput]:
        content = (as_mapping(frame.get("message")) or {}).get("content")
        text = content if isinstance(content, str) else json.dumps(content)
        if self._phase != "idle":
            self.steered.append(text)
            return []
        turn = self._family.next_turn()
        if turn is None:
            return [StderrLine("fake Claude Code: no scripted turn left\n"), ProcessExited(1)]
        self._messages += 1
        self.steered = []
        self._turn = turn
        out: list[PeerOutput] = [self._init()]
        if turn.tool is None:
            if turn.hang:
                self._phase = "running"
                return out
            return out + self._finish(turn)
        tool_id = self._tool_id()
        out.append(
            self._assistant(
                {
                    "type": "tool_use",
                    "id": tool_id,
                    "name": turn.tool,
                    "input": dict(turn.tool_input),
                }
            )
        )
        if "PreToolUse" in self.hooks:
            self._phase = "running"
            return out + self._hook(
                "PreToolUse",
                {
                    "tool_name": turn.tool,
                    "tool_input": dict(turn.tool_input),
                    "tool_use_id": tool_id,
                },
                lambda answer: self._after_pre_hook(turn, answer),
            )
        return out + self._use_tool(turn)

    def _hook(
        self,
        event: str,
        fields: Mapping[str, Any],
        then: Callable[[Mapping[str, Any]], list[PeerOutput]],
    ) -> list[PeerOutput]:
        """Ask the hook registered for ``event``; ``then`` gets its answer."""
        self._asked += 1
        request_id = f"hook-{self._asked}"
        self._waiting[request_id] = then
        callback = self.hooks[event][0] if self.hooks[event] else ""
        payload = {"session_id": self.session_id, "hook_event_name": event, **fields}
        request = {"subtype": "hook_callback", "callback_id": callback, "input": payload}
        return [
            frame_line({"type": "control_request", "request_id": request_id, "request": request})
        ]

    def _after_pre_hook(self, turn: ClaudePeerTurn, answer: Mapping[str, Any]) -> list[PeerOutput]:
        output = as_mapping(answer.get("hookSpecificOutput")) or {}
        if output.get("permissionDecision") == "deny":
            reason = str(output.get("permissionDecisionReason") or "denied")
            denied = {
                "type": "tool_result",
                "tool_use_id": self._tool_id(),
                "content": reason,
                "is_error": True,
            }
            return [self._user([denied]), *self._finish(turn)]
        updated = as_mapping(output.get("updatedInput"))
        if updated is not None:
            turn = dataclasses.replace(turn, tool_input=dict(updated))
            self._turn = turn
        return self._use_tool(turn)

    def _use_tool(self, turn: ClaudePeerTurn) -> list[PeerOutput]:
        assert turn.tool is not None
        tool_id = self._tool_id()
        out: list[PeerOutput] = []
        if turn.ask:
            self._phase = "asking"
            self._ask_id = f"ask-{self._messages}"
            out.append(
                frame_line(
                    {
                        "type": "control_request",
                        "request_id": self._ask_id,
                        "request": {
                            "subtype": "can_use_tool",
                            "tool_name": turn.tool,
                            "display_name": turn.tool,
                            "input": dict(turn.tool_input),
                            "description": json.dumps(dict(turn.tool_input))[:80],
                            "permission_suggestions": [],
                            "tool_use_id": tool_id,
                        },
                    }
                )
            )
            return out
        return out + self._run_tool(turn, dict(turn.tool_input))

    def _sdk_call(self, turn: ClaudePeerTurn, args: Mapping[str, Any]) -> list[PeerOutput] | None:
        """Run an ``mcp__<server>__<tool>`` call in band, when ``server`` is in process."""
        assert turn.tool is not None
        parts = turn.tool.split("__")
        if len(parts) != 3 or parts[0] != "mcp" or parts[1] not in self.sdk_servers:
            return None
        self._asked += 1
        request_id = f"mcp-{self._asked}"
        message = {
            "method": "tools/call",
            "params": {"name": parts[2], "arguments": dict(args)},
            "jsonrpc": "2.0",
            "id": self._asked,
        }
        request = {"subtype": "mcp_message", "server_name": parts[1], "message": message}

        def answered(answer: Mapping[str, Any]) -> list[PeerOutput]:
            reply = as_mapping(answer.get("mcp_response")) or {}
            result = as_mapping(reply.get("result")) or {}
            error = as_mapping(reply.get("error"))
            content: list[object] = list_or_empty(result.get("content"))
            text = (
                "".join(str((as_mapping(c) or {}).get("text", "")) for c in content)
                if error is None
                else str(error.get("message", ""))
            )
            failed = bool(result.get("isError")) or error is not None
            return self._tool_done(turn, text, failed=failed, args=args)

        self._waiting[request_id] = answered
        return [
            frame_line({"type": "control_request", "request_id": request_id, "request": request})
        ]

    def _tool_done(
        self, turn: ClaudePeerTurn, text: str, *, failed: bool, args: Mapping[str, Any]
    ) -> list[PeerOutput]:
        result = {
            "type": "tool_result",
            "tool_use_id": self._tool_id(),
            "content": text,
            "is_error": failed,
        }
        out: list[PeerOutput] = [self._user([result])]
        if "PostToolUse" in self.hooks:
            fields = {
                "tool_name": turn.tool,
                "tool_input": dict(args),
                "tool_response": text,
                "tool_use_id": self._tool_id(),
            }
            return out + self._hook("PostToolUse", fields, lambda _: self._finish(turn))
        return out + self._finish(turn)

    def _run_tool(self, turn: ClaudePeerTurn, args: Mapping[str, Any]) -> list[PeerOutput]:
        if turn.die is not None:
            self._phase = "running"
            return [ProcessExited(turn.die)]
        if turn.hang:
            self._phase = "running"
            return []
        self._phase = "running"
        in_band = self._sdk_call(turn, args)
        if in_band is not None:
            return in_band
        return self._tool_done(
            turn, f"ran {json.dumps(dict(args), sort_keys=True)}", failed=False, args=args
        )

    def _on_answer(self, frame: Mapping[str, Any]) -> list[PeerOutput]:
        body_dict = as_mapping(frame.get("response"))
        if body_dict is None:
            return []
        waiting = self._waiting.pop(str(body_dict.get("request_id")), None)
        if waiting is not None:
            answer = dict(as_mapping(body_dict.get("response")) or {})
            self.answers.append(answer)
            return waiting(answer)
        if body_dict.get("request_id") != self._ask_id or self._phase != "asking":
            return []  # a late answer to a withdrawn request is ignored, as the CLI does
        turn = self._turn
        assert turn is not None
        answer = dict(as_mapping(body_dict.get("response")) or {})
        self.answers.append(answer)
        if answer.get("behavior") == "allow":
            args = as_mapping(answer.get("updatedInput")) or turn.tool_input
            return self._run_tool(turn, args)
        message = str(answer.get("message") or "denied")
        self._phase = "running"
        denied = {
            "type": "tool_result",
            "tool_use_id": self._tool_id(),
            "content": message,
            "is_error": True,
        }
        return [self._user([denied], tool_use_result=f"Error: {message}"), *self._finish(turn)]

    def _on_control(self, frame: Mapping[str, Any]) -> list[PeerOutput]:
        request_id = frame.get("request_id")
        body = as_mapping(frame.get("request")) or {}
        subtype = body.get("subtype")
        ok = {
            "type": "control_response",
            "response": {"subtype": "success", "request_id": request_id},
        }
        if subtype == "interrupt":
            return self._interrupted(ok)
        if subtype == "initialize":
            servers: list[object] = list_or_empty(body.get("sdkMcpServers"))
            self.sdk_servers = tuple(str(name) for name in servers)
            for event, matchers in (as_mapping(body.get("hooks")) or {}).items():
                ids: list[str] = []
                for matcher in list_or_empty(matchers):
                    callbacks = list_or_empty((as_mapping(matcher) or {}).get("hookCallbackIds"))
                    ids += [str(i) for i in callbacks]
                self.hooks[event] = ids
            done: dict[str, Any] = {"commands": [], "models": [], "pid": 1}
            answer = {"subtype": "success", "request_id": request_id, "response": done}
            return [frame_line({"type": "control_response", "response": answer})]
        if subtype == "set_model":
            model = body.get("model")
            self.model = str(model) if model else _MODEL
            echo = f"<local-command-stdout>Set model to {self.model}</local-command-stdout>"
            return [
                frame_line(
                    {
                        "type": "user",
                        "message": {"role": "user", "content": echo},
                        **self._common(),
                        "isReplay": True,
                    }
                ),
                frame_line(ok),
            ]
        error = {
            "type": "control_response",
            "response": {
                "subtype": "error",
                "request_id": request_id,
                "error": f"Unsupported control request subtype: {subtype}",
            },
        }
        return [frame_line(error)]

    def _interrupted(self, ok: Mapping[str, Any]) -> list[PeerOutput]:
        turn, phase = self._turn, self._phase
        self._waiting.clear()  # what the turn waited on is withdrawn with it
        if turn is None or phase == "idle":
            return [frame_line(ok)]
        out: list[PeerOutput] = []
        if phase == "asking":
            out.append(frame_line({"type": "control_cancel_request", "request_id": self._ask_id}))
        out.append(frame_line(ok))
        if turn.tool is not None:
            rejected = {
                "type": "tool_result",
                "content": _REJECTED,
                "is_error": True,
                "tool_use_id": self._tool_id(),
            }
            out.append(self._user([rejected], tool_use_result="User rejected tool use"))
            marker = "[Request interrupted by user for tool use]"
        else:
            marker = "[Request interrupted by user]"
        out.append(self._user([{"type": "text", "text": marker}]))
        out.append(self._result(turn, None, interrupted=True))
        self._phase, self._turn = "idle", None
        return out


class ClaudeRecordedPeer(RecordedPeer):
    """Replays a recorded Claude Code transcript (``transcript.jsonl`` of a capture case).

    Each line written to it is matched with the next recorded input of the same kind (a
    user message, a control request of the same subtype, a control response); recorded
    inputs skipped on the way are dropped with their output. The recorded output that
    followed the match is printed, with the request ids of our own control requests put in
    place of the recorded ones. At end of stdin it prints what the recording printed after
    its last input and exits with the recorded status.
    """

    def kind(self, frame: Mapping[str, Any]) -> str:
        """The frame's type; a control request's with its subtype."""
        kind = str(frame.get("type"))
        body = frame.get("request")
        if kind == "control_request" and isinstance(body, dict):
            return f"{kind}:{body.get('subtype')}"  # pyright: ignore[reportUnknownMemberType]
        return kind

    def renamed(
        self, recorded: Mapping[str, Any], sent: Mapping[str, Any], outputs: list[PeerOutput]
    ) -> list[PeerOutput]:
        """``outputs`` with the recorded request id of our control request replaced by ours."""
        return id_replaced(outputs, recorded.get("request_id"), sent.get("request_id"))

    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        """Print the recorded output that answered the matching recorded input.

        A line that is not JSON ends the process, as Claude Code does.
        """
        try:
            json.loads(line)
        except ValueError:
            return (StderrLine("Error parsing streaming input line\n"), ProcessExited(1))
        return super().on_stdin(line)
