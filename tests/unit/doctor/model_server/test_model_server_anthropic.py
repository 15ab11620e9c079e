from __future__ import annotations

import json
from typing import Any

from agentshim.doctor import model_server as ms
from tests.unit.doctor.model_server.tool_offers import STRING, claude_tool, schema

BASH = claude_tool(
    "Bash",
    schema({"command": STRING, "description": STRING}, ["command"]),
    description="Executes a bash command",
)


def claude_body(*messages: dict[str, Any], stream: bool = True, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "claude-opus-4-8",
        "max_tokens": 64000,
        "system": [{"type": "text", "text": "You are a Claude agent."}],
        "messages": list(messages) or [user("hello")],
        "tools": [BASH],
        **extra,
    }
    if stream:
        body["stream"] = True
    return body


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def names(events: list[tuple[str | None, Any]]) -> list[str | None]:
    return [name for name, _ in events if name != "ping"]


def test_text_stream_has_the_full_event_sequence_and_reassembles(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.Text("Hello from the script, chunked.", chunk_size=5))])
    answer = client.post("/v1/messages?beta=true", claude_body())
    assert answer.status == 200
    assert answer.headers["Content-Type"].startswith("text/event-stream")
    events = answer.events()
    assert names(events) == [
        "message_start",
        "content_block_start",
        *["content_block_delta"] * 7,
        "content_block_stop",
        "message_delta",
        "message_stop",
    ]
    for name, data in events:
        assert data["type"] == name
    text = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert text == "Hello from the script, chunked."
    start = events[0][1]["message"]
    assert start["role"] == "assistant"
    assert start["model"] == "claude-opus-4-8"
    assert start["content"] == []
    delta = next(d for n, d in events if n == "message_delta")
    assert delta["delta"]["stop_reason"] == "end_turn"


def test_usage_maps_to_anthropic_fields(server: ms.ModelServer, client):
    usage = ms.Usage(input=1000, output=50, cache_read=600, cache_write=300, reasoning=20)
    server.set_script([ms.Rule(respond=ms.Text("ok", usage=usage))])
    events = client.post("/v1/messages", claude_body()).events()
    final = next(d for n, d in events if n == "message_delta")["usage"]
    assert final == {
        "input_tokens": 100,
        "cache_creation_input_tokens": 300,
        "cache_read_input_tokens": 600,
        "output_tokens": 50,
    }
    start = events[0][1]["message"]["usage"]
    assert start["input_tokens"] == 100
    assert start["cache_read_input_tokens"] == 600


def test_tool_call_picks_bash_and_streams_input_json_deltas(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(
                respond=ms.Message((ms.Text("I'll run it."), ms.ToolCall(command="echo 'hé llo'"))),
                match=ms.Match(assistant_turns=0),
            )
        ]
    )
    events = client.post("/v1/messages", claude_body()).events()
    starts = [d["content_block"] for n, d in events if n == "content_block_start"]
    assert starts[0] == {"type": "text", "text": ""}
    assert starts[1]["type"] == "tool_use"
    assert starts[1]["name"] == "Bash"
    assert starts[1]["id"].startswith("toolu_")
    partial = "".join(
        d["delta"]["partial_json"]
        for n, d in events
        if n == "content_block_delta" and d["index"] == 1
    )
    assert json.loads(partial) == {"command": "echo 'hé llo'"}
    delta = next(d for n, d in events if n == "message_delta")
    assert delta["delta"]["stop_reason"] == "tool_use"


def test_two_tool_calls_get_distinct_ids(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(
                respond=ms.Message((ms.ToolCall(command="echo a"), ms.ToolCall(command="echo b")))
            )
        ]
    )
    body = client.post("/v1/messages", claude_body(stream=False)).json()
    calls = [block for block in body["content"] if block["type"] == "tool_use"]
    assert [c["input"] for c in calls] == [{"command": "echo a"}, {"command": "echo b"}]
    assert calls[0]["id"] != calls[1]["id"]


def test_non_streaming_request_gets_a_message_object(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.Text("plain answer", usage=ms.Usage(input=7, output=3)))])
    answer = client.post("/v1/messages", claude_body(stream=False))
    assert answer.status == 200
    body = answer.json()
    assert body["type"] == "message"
    assert body["content"] == [{"type": "text", "text": "plain answer"}]
    assert body["stop_reason"] == "end_turn"
    assert body["usage"]["input_tokens"] == 7
    assert body["usage"]["output_tokens"] == 3


def test_structured_output_calls_claudes_structured_output_tool(server: ms.ModelServer, client):
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
        "required": ["name", "age"],
    }
    tool = {"name": "StructuredOutput", "description": "final answer", "input_schema": schema}
    server.set_script(
        [
            ms.Rule(
                respond=ms.StructuredOutput({"name": "Alice", "age": 30}),
                match=ms.Match(schema_requested=True),
            )
        ]
    )
    body = claude_body(stream=False)
    body["tools"] = [BASH, tool]
    answer = client.post("/v1/messages", body).json()
    assert answer["content"][0]["type"] == "tool_use"
    assert answer["content"][0]["name"] == "StructuredOutput"
    assert answer["content"][0]["input"] == {"name": "Alice", "age": 30}
    assert answer["stop_reason"] == "tool_use"


def test_structured_output_without_the_tool_is_json_text(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.StructuredOutput({"k": [1, 2]}))])
    answer = client.post("/v1/messages", claude_body(stream=False)).json()
    assert json.loads(answer["content"][0]["text"]) == {"k": [1, 2]}


def test_sse_error_mid_stream_follows_partial_text(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.SseError(after_text="partial", message="Overloaded"))])
    events = client.post("/v1/messages", claude_body()).events()
    assert events[-1] == (
        "error",
        {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
    )
    said = "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")
    assert said == "partial"
    assert "message_stop" not in names(events)


def test_sse_error_on_a_non_streaming_retry_is_an_overloaded_status(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.SseError(message="Overloaded"))])
    answer = client.post("/v1/messages", claude_body(stream=False))
    assert answer.status == 529
    assert answer.json()["error"] == {"type": "overloaded_error", "message": "Overloaded"}


def test_count_tokens_is_answered(client):
    answer = client.post("/v1/messages/count_tokens", {"model": "m", "messages": [user("hi")]})
    assert answer.status == 200
    assert answer.json() == {"input_tokens": 100}
