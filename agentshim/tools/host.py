"""The MCP server side of a set of tools: one JSON-RPC message in, its answer out, in process.

:class:`ToolHost` answers what an MCP client (the CLI) sends: ``initialize``, ``ping``,
``tools/list`` and ``tools/call``; notifications get no answer. A call runs the tool's
function right there, on the calling thread. Whatever goes wrong in it (bad arguments, an
exception, a call that outlasts its timeout) becomes a tool result with ``isError`` the agent
reads; a message that is not JSON-RPC costs only itself. Both routes use it: the local server
(:mod:`agentshim.tools.local`) and Claude Code's in-band ``mcp_message`` requests.

A call's function runs on a thread of its own, started for that call, while the calling
thread waits for it at most the tool's ``timeout``: a function that overruns gets the agent
a timeout error on time, so it holds the turn no longer than its budget. Python cannot stop a
running function, so an overrunning one goes on to its end on its thread (a daemon thread,
which then ends), and its result is dropped.

With ``report_calls`` (what a socket anyone of this user may reach needs), every call the
host runs is reported, whoever made it: a ``ToolCall`` before the function runs and a
``ToolResult`` after (the tool's own name, ``ToolKind.MCP``, an id ``agentshim-tool-<n>``).
Claude Code's in-band route leaves it off: only the CLI can call there, and it reports its
calls itself. With ``approve`` set, each call is first asked: ``ApprovalRequest``
with that id; a denied call does not run and the agent reads the denial as the tool's error.
So a call that reached the tools some way other than through the CLI is still asked and seen.
"""

from __future__ import annotations

import contextvars
import dataclasses
import json
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

from agentshim._version import __version__
from agentshim.core import lifecycle_kinds as lk
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.clock import Monotonic
from agentshim.core.events import AgentEvent, Emit, Lifecycle, ToolCall, ToolKind, ToolResult
from agentshim.core.tool_schema import ArgumentError, bind
from agentshim.core.tools import TOOL_SERVER_NAME, Tool

__all__ = ["PROTOCOL_VERSIONS", "Approve", "ToolHost", "tool_output"]

Approve = Callable[[ApprovalRequest], ApprovalDecision]
"""Decides one tool call before it runs (the caller's approvals, reported by whoever sets it)."""

CALL_ID_PREFIX = "agentshim-tool-"

PROTOCOL_VERSIONS = ("2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05")
"""MCP protocol versions the host speaks, newest first; a client asking another gets the first."""

_METHOD_NOT_FOUND = -32601
_INVALID_PARAMS = -32602
_INVALID_REQUEST = -32600


def _ignore(event: AgentEvent) -> None:
    del event


def tool_output(value: object) -> str:
    """What a function's return value reads as for the agent: text, else compact JSON."""
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        value = dataclasses.asdict(value)
    try:
        return json.dumps(value, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError):
        return str(value)


class ToolHost:
    """Answers MCP messages for ``tools`` under the server name ``server_name``.

    ``emit`` receives each call's ``ToolCall`` and ``ToolResult``, and a ``Lifecycle`` event
    (``tool_failed`` or ``tool_timed_out``) when a function raises or overruns its timeout,
    besides the error result the agent gets; ``approve``, when set, decides each call before
    it runs; ``report_calls`` says whether calls are reported (see the module docstring);
    ``monotonic`` times the calls. ``emit`` and ``approve`` may be replaced between turns.
    """

    __slots__ = (
        "_calls",
        "_clock",
        "_listings",
        "_report",
        "_tools",
        "approve",
        "emit",
        "server_name",
    )

    def __init__(
        self,
        tools: Sequence[Tool],
        *,
        server_name: str = TOOL_SERVER_NAME,
        emit: Emit = _ignore,
        approve: Approve | None = None,
        report_calls: bool = False,
        monotonic: Monotonic = time.monotonic,
    ) -> None:
        self._tools = {t.name: t for t in tools}
        self.server_name = server_name
        self.emit = emit
        self.approve = approve
        self._clock = monotonic
        self._calls = 0
        self._report = report_calls
        self._listings = 0

    @property
    def tools(self) -> tuple[Tool, ...]:
        """The tools served, in the order given."""
        return tuple(self._tools.values())

    @property
    def listed(self) -> bool:
        """Whether a client has asked ``tools/list`` (and been answered)."""
        return self._listings > 0

    @property
    def listings(self) -> int:
        """How many ``tools/list`` requests were answered, each with the whole list."""
        return self._listings

    def answer(self, message: object) -> dict[str, Any] | list[dict[str, Any]] | None:
        """The JSON-RPC answer to ``message``; None for a notification or a response.

        A batch (a list) gets a list of answers, or None when none of it needs one. Never
        raises for what the message holds.
        """
        if isinstance(message, list):
            answers = [self.answer(item) for item in cast("list[object]", message)]
            flat = [a for a in answers if isinstance(a, dict)]
            return flat or None
        if not isinstance(message, Mapping):
            return _error(None, _INVALID_REQUEST, "a JSON-RPC message is an object")
        body = cast("Mapping[str, Any]", message)
        method = body.get("method")
        has_id = "id" in body
        if not isinstance(method, str):
            # A response to something we never sent, or garbage: an id gets an error back.
            if has_id and "result" not in body and "error" not in body:
                return _error(body.get("id"), _INVALID_REQUEST, "no method")
            return None
        if not has_id:
            return None  # a notification (notifications/initialized, cancelled, ...)
        request_id = body.get("id")
        given = body.get("params")
        params: Mapping[str, Any] = (
            cast("Mapping[str, Any]", given) if isinstance(given, Mapping) else {}
        )
        if method == "initialize":
            return _result(request_id, self._initialize(params))
        if method == "ping":
            return _result(request_id, {})
        if method == "tools/list":
            self._listings += 1
            return _result(request_id, {"tools": [_listed(t) for t in self._tools.values()]})
        if method == "tools/call":
            name = params.get("name")
            chosen = self._tools.get(name) if isinstance(name, str) else None
            if chosen is None:
                return _error(request_id, _INVALID_PARAMS, f"unknown tool {name!r:.80}")
            return _result(request_id, self.call(chosen, params.get("arguments")))
        return _error(request_id, _METHOD_NOT_FOUND, f"method {method!r:.80} is not supported")

    def _initialize(self, params: Mapping[str, Any]) -> dict[str, Any]:
        asked = params.get("protocolVersion")
        version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
        return {
            "protocolVersion": version,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": self.server_name, "version": __version__},
        }

    def _report_event(self, event: AgentEvent) -> None:
        if self._report:
            self.emit(event)

    def call(self, chosen: Tool, arguments: object) -> dict[str, Any]:
        """Ask, report and run ``chosen`` with ``arguments``; the MCP ``tools/call`` result."""
        self._calls += 1
        call_id = f"{CALL_ID_PREFIX}{self._calls}"
        args: Mapping[str, Any] = (
            dict(cast("Mapping[str, Any]", arguments)) if isinstance(arguments, Mapping) else {}
        )
        given = cast(object, arguments)
        approve = self.approve
        if approve is not None:
            request = ApprovalRequest(chosen.name, args, ToolKind.MCP, call_id, chosen.name)
            decision = approve(request)
            if not decision.allowed:
                text = decision.message or "denied by the caller's approvals"
                self._report_event(ToolCall(call_id, chosen.name, args, ToolKind.MCP))
                self._report_event(_reported(call_id, chosen.name, text, failed=True))
                return _failed(text)
            if decision.args is not None:
                given = args = dict(decision.args)
        self._report_event(ToolCall(call_id, chosen.name, args, ToolKind.MCP))
        started = self._clock()
        result = self._run(chosen, given)
        content = cast("list[dict[str, Any]]", result["content"])
        text = "".join(str(part.get("text", "")) for part in content)
        self._report_event(
            _reported(
                call_id,
                chosen.name,
                text,
                failed=bool(result["isError"]),
                duration_s=self._clock() - started,
            )
        )
        return result

    def _run(self, chosen: Tool, arguments: object) -> dict[str, Any]:
        try:
            kwargs = bind(chosen.function, arguments, derived=chosen.derived)
        except ArgumentError as error:
            return _failed(f"invalid arguments for {chosen.name}: {error}")
        started = self._clock()
        call = _Call(chosen, kwargs)
        if not call.finished(chosen.timeout):
            text = (
                f"{chosen.name} did not return within its timeout of {chosen.timeout:g} s; "
                "the agent was answered without it (the function goes on to its end, and its "
                "result is dropped)"
            )
            self.emit(Lifecycle(lk.TOOL_TIMED_OUT, text))
            return _failed(text)
        if call.error is not None:  # the agent reads it as the tool's error; the turn goes on
            text = f"{type(call.error).__name__}: {call.error}"
            self.emit(Lifecycle(lk.TOOL_FAILED, f"{chosen.name}: {text}"[:2000]))
            return _failed(text)
        value = call.value
        elapsed = self._clock() - started
        if elapsed > chosen.timeout:
            text = (
                f"{chosen.name} took {elapsed:.1f} s, longer than its timeout of "
                f"{chosen.timeout:g} s; its result was dropped"
            )
            self.emit(Lifecycle(lk.TOOL_TIMED_OUT, text))
            return _failed(text)
        return {"content": [{"type": "text", "text": tool_output(value)}], "isError": False}


class _Call:
    """One call of a tool's function, on a thread of its own (see the module docstring)."""

    __slots__ = ("_done", "error", "value")

    def __init__(self, chosen: Tool, kwargs: Mapping[str, Any]) -> None:
        self.value: object = None
        self.error: Exception | None = None
        self._done = threading.Event()
        # In the caller's context: what the turn set up for its tools (an asyncio session's
        # loop, the current trace span) reaches the function on its own thread.
        context = contextvars.copy_context()
        threading.Thread(
            target=context.run,
            args=(self._run, chosen, kwargs),
            name=f"agentshim-tool-{chosen.name}",
            daemon=True,
        ).start()

    def _run(self, chosen: Tool, kwargs: Mapping[str, Any]) -> None:
        try:
            self.value = chosen.function(**kwargs)
        except Exception as error:
            self.error = error
        finally:
            self._done.set()

    def finished(self, timeout: float) -> bool:
        """Wait up to ``timeout`` seconds for the function to return (or raise)."""
        return self._done.wait(timeout)


def _listed(chosen: Tool) -> dict[str, Any]:
    return {
        "name": chosen.name,
        "description": chosen.description,
        "inputSchema": dict(chosen.input_schema),
    }


def _reported(
    call_id: str, name: str, text: str, *, failed: bool, duration_s: float | None = None
) -> ToolResult:
    if failed:
        return ToolResult(call_id, name, "", text, 1, duration_s, ToolKind.MCP)
    return ToolResult(call_id, name, text, "", 0, duration_s, ToolKind.MCP)


def _failed(text: str) -> dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], "isError": True}


def _result(request_id: object, result: Mapping[str, Any]) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "result": dict(result)}


def _error(request_id: object, code: int, message: str) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "error": {"code": code, "message": message}}
