"""The MCP server side of a turn's tools: what the CLI asks, and what the agent reads back."""

from __future__ import annotations

import dataclasses
import json
import threading
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim import tool
from agentshim.core.events import AgentEvent, Lifecycle
from agentshim.tools import ToolHost


@tool
def lookup(key: str, count: int = 1) -> str:
    """Look a key up."""
    return f"{key}:{count}"


@tool
def broken(key: str) -> str:
    """Always fails."""
    raise KeyError(key)


@dataclasses.dataclass
class Found:
    key: str
    hits: list[int]


@tool
def structured(key: str) -> Found:
    """Returns a dataclass."""
    return Found(key, [1, 2])


def call(host: ToolHost, name: str, arguments: object, request_id: object = 7) -> Any:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return host.answer(message)


def test_initialize_speaks_the_version_the_client_asks_for_when_it_knows_it() -> None:
    host = ToolHost([lookup])
    known = host.answer(
        {
            "jsonrpc": "2.0",
            "id": 0,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        }
    )
    unknown = host.answer(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "1999-01-01"},
        }
    )
    assert isinstance(known, dict)
    assert isinstance(unknown, dict)
    assert known["result"]["protocolVersion"] == "2025-06-18"
    assert unknown["result"]["protocolVersion"] == "2025-11-25"
    assert known["result"]["capabilities"] == {"tools": {}}
    assert known["result"]["serverInfo"]["name"] == "agentshim"


def test_tools_list_names_every_tool_with_its_schema() -> None:
    answer = ToolHost([lookup, broken]).answer(
        {"jsonrpc": "2.0", "id": "a", "method": "tools/list"}
    )
    assert isinstance(answer, dict)
    listed = answer["result"]["tools"]
    assert [t["name"] for t in listed] == ["lookup", "broken"]
    assert listed[0]["description"] == "Look a key up."
    assert listed[0]["inputSchema"]["required"] == ["key"]
    json.dumps(answer)  # every answer is JSON as it stands


def test_a_call_returns_the_functions_value_as_text_and_structures_as_json() -> None:
    host = ToolHost([lookup, structured])
    assert call(host, "lookup", {"key": "k", "count": 2}) == {
        "jsonrpc": "2.0",
        "id": 7,
        "result": {"content": [{"type": "text", "text": "k:2"}], "isError": False},
    }
    text = call(host, "structured", {"key": "k"})["result"]["content"][0]["text"]
    assert json.loads(text) == {"key": "k", "hits": [1, 2]}


def test_an_exception_is_a_tool_error_the_agent_reads_and_an_event() -> None:
    events: list[AgentEvent] = []
    answer = call(ToolHost([broken], emit=events.append), "broken", {"key": "k"})
    assert answer["result"] == {
        "content": [{"type": "text", "text": "KeyError: 'k'"}],
        "isError": True,
    }
    assert [(e.kind, e.detail) for e in events if isinstance(e, Lifecycle)] == [
        ("tool_failed", "broken: KeyError: 'k'")
    ]


def test_bad_arguments_are_a_tool_error_and_the_function_never_runs() -> None:
    ran: list[object] = []

    @tool
    def count(n: int) -> int:
        """Counts."""
        ran.append(n)
        return n

    answer = call(ToolHost([count]), "count", {"n": "three"})
    assert answer["result"]["isError"] is True
    assert "expected integer" in answer["result"]["content"][0]["text"]
    assert ran == []


def test_a_call_that_outlasts_its_timeout_has_its_result_dropped() -> None:
    now = [100.0]

    @tool(timeout=5)
    def slow() -> str:
        """Takes a while."""
        now[0] += 6
        return "late"

    events: list[AgentEvent] = []
    answer = call(ToolHost([slow], emit=events.append, monotonic=lambda: now[0]), "slow", {})
    assert answer["result"]["isError"] is True
    assert "longer than its timeout of 5 s" in answer["result"]["content"][0]["text"]
    assert [e.kind for e in events if isinstance(e, Lifecycle)] == ["tool_timed_out"]


def test_unknown_tools_and_methods_are_json_rpc_errors_and_notifications_get_nothing() -> None:
    host = ToolHost([lookup])
    assert call(host, "nope", {})["error"]["code"] == -32602
    answer = host.answer({"jsonrpc": "2.0", "id": 3, "method": "resources/list"})
    assert isinstance(answer, dict)
    assert answer["error"]["code"] == -32601
    assert host.answer({"jsonrpc": "2.0", "method": "notifications/initialized"}) is None
    assert host.answer({"jsonrpc": "2.0", "id": 9, "result": {}}) is None  # a response
    assert host.answer({"jsonrpc": "2.0", "id": 1, "method": "ping"}) == {
        "jsonrpc": "2.0",
        "id": 1,
        "result": {},
    }


def test_a_batch_gets_a_list_of_the_answers_it_needs() -> None:
    answer = ToolHost([lookup]).answer(
        [
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 1, "method": "ping"},
        ]
    )
    assert answer == [{"jsonrpc": "2.0", "id": 1, "result": {}}]


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=8), children, max_size=4)
    ),
    max_leaves=20,
)
METHODS = st.sampled_from(["initialize", "ping", "tools/list", "tools/call", "x/y"]) | st.text()


@settings(max_examples=300)
@given(
    message=JSON
    | st.fixed_dictionaries(
        {"jsonrpc": st.just("2.0"), "id": JSON, "method": METHODS},
        optional={"params": JSON | st.fixed_dictionaries({"name": st.text(), "arguments": JSON})},
    )
)
def test_no_message_crashes_the_host_and_every_answer_is_json_with_the_requests_id(
    message: object,
) -> None:
    answer = ToolHost([lookup, broken, structured]).answer(message)
    if answer is None:
        return
    json.dumps(answer)
    if isinstance(message, dict) and "method" in message and isinstance(answer, dict):
        assert answer["id"] == message.get("id")


@settings(max_examples=300)
@given(arguments=JSON)
def test_any_arguments_give_a_result_never_an_exception(arguments: object) -> None:
    answer = call(ToolHost([lookup, broken, structured]), "lookup", arguments)
    result = answer["result"]
    assert isinstance(result["isError"], bool)
    assert result["content"][0]["type"] == "text"


def test_a_call_that_hangs_is_answered_when_its_timeout_passes_not_when_it_returns() -> None:
    release = threading.Event()

    @tool(timeout=0.2)
    def hangs() -> str:
        """Waits until released."""
        release.wait(60)
        return "late"

    events: list[AgentEvent] = []
    answers: list[dict[str, Any]] = []

    def answer() -> None:
        answers.append(call(ToolHost([hangs], emit=events.append), "hangs", {}))

    answerer = threading.Thread(target=answer)
    answerer.start()
    answerer.join(30)
    try:
        assert not answerer.is_alive(), "the call waited for the function, not its timeout"
        (answered,) = answers
        assert answered["result"]["isError"] is True
        assert "within its timeout of 0.2 s" in answered["result"]["content"][0]["text"]
        assert [e.kind for e in events if isinstance(e, Lifecycle)] == ["tool_timed_out"]
    finally:
        release.set()


def test_the_host_says_once_a_client_has_listed_its_tools() -> None:
    host = ToolHost([lookup])
    host.answer({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {}})
    host.answer({"jsonrpc": "2.0", "method": "notifications/initialized"})
    assert not host.listed, "initialized is not listed: the client may not have the tools yet"
    host.answer({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
    assert host.listed
