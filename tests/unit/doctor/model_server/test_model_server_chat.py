from __future__ import annotations

import json
from typing import Any

from agentshim.doctor import model_server as ms
from tests.unit.doctor.model_server.tool_offers import STRING, chat_tool, schema

BASH = chat_tool(
    "bash", schema({"command": STRING, "description": STRING}, ["command", "description"])
)


def chat_body(
    *messages: dict[str, Any], include_usage: bool = True, **extra: Any
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "fake-model",
        "messages": list(messages)
        or [
            {"role": "system", "content": "You are opencode."},
            {"role": "user", "content": "Say hello."},
        ],
        "tools": [BASH],
        "stream": True,
        **extra,
    }
    if include_usage:
        body["stream_options"] = {"include_usage": True}
    return body


def test_text_chunks_usage_chunk_and_done(server: ms.ModelServer, client):
    usage = ms.Usage(input=120, output=30, cache_read=20, reasoning=5)
    server.set_script([ms.Rule(respond=ms.Text("Hello there", chunk_size=3, usage=usage))])
    events = client.post("/v1/chat/completions", chat_body()).events()
    assert events[-1] == (None, "[DONE]")
    chunks = [d for _, d in events[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    text = "".join(c["choices"][0]["delta"].get("content", "") for c in chunks if c["choices"])
    assert text == "Hello there"
    finish = [c["choices"][0]["finish_reason"] for c in chunks if c["choices"]]
    assert finish[-1] == "stop"
    assert all(f is None for f in finish[:-1])
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"] == {
        "prompt_tokens": 120,
        "completion_tokens": 30,
        "total_tokens": 150,
        "prompt_tokens_details": {"cached_tokens": 20},
        "completion_tokens_details": {"reasoning_tokens": 5},
    }


def test_no_usage_chunk_unless_asked(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.Text("hi"))])
    events = client.post("/v1/chat/completions", chat_body(include_usage=False)).events()
    assert all("usage" not in d for _, d in events[:-1])


def test_tool_call_deltas_reassemble_with_required_description(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(
                respond=ms.Message(
                    (ms.ToolCall(command="echo one"), ms.ToolCall(command="echo two"))
                )
            )
        ]
    )
    events = client.post("/v1/chat/completions", chat_body()).events()
    calls: dict[int, dict[str, Any]] = {}
    for _, data in events[:-1]:
        if not data["choices"]:
            continue
        for delta in data["choices"][0]["delta"].get("tool_calls", []):
            slot = calls.setdefault(delta["index"], {"arguments": ""})
            if "id" in delta:
                slot["id"] = delta["id"]
                slot["name"] = delta["function"]["name"]
            slot["arguments"] += delta["function"]["arguments"]
    assert sorted(calls) == [0, 1]
    assert [calls[i]["name"] for i in (0, 1)] == ["bash", "bash"]
    assert json.loads(calls[0]["arguments"]) == {
        "command": "echo one",
        "description": "Run echo one",
    }
    assert json.loads(calls[1]["arguments"])["command"] == "echo two"
    assert calls[0]["id"] != calls[1]["id"]
    finish = [d["choices"][0]["finish_reason"] for _, d in events[:-1] if d["choices"]]
    assert finish[-1] == "tool_calls"


def test_non_streaming_completion(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.ToolCall(command="pwd"))])
    body = client.post("/v1/chat/completions", chat_body(stream=False)).json()
    choice = body["choices"][0]
    assert choice["finish_reason"] == "tool_calls"
    assert choice["message"]["content"] is None
    call = choice["message"]["tool_calls"][0]
    assert call["function"]["name"] == "bash"
    assert json.loads(call["function"]["arguments"])["command"] == "pwd"
    assert body["usage"]["prompt_tokens"] == 100


def test_tool_result_message_counts_as_last_input(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(respond=ms.Text("after tool"), match=ms.Match(last_input_is_tool_result=True)),
            ms.Rule(respond=ms.Text("first")),
        ]
    )
    history = [
        {"role": "user", "content": "go"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "ok"},
    ]
    body = client.post("/v1/chat/completions", chat_body(*history, stream=False)).json()
    assert body["choices"][0]["message"]["content"] == "after tool"


def test_opencode_title_request_gets_builtin_title(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.Text("main answer"))])
    title = chat_body(
        {"role": "system", "content": "You are a title generator. You output ONLY a thread title."},
        {"role": "user", "content": "Say hello."},
        tools=[],
    )
    events = client.post("/v1/chat/completions", title).events()
    text = "".join(
        d["choices"][0]["delta"].get("content", "") for _, d in events[:-1] if d["choices"]
    )
    assert text == "Scripted session"
    assert server.requests[-1].kind is ms.RequestKind.TITLE
    assert server.rule_uses == (0,)


def test_sse_error_is_an_error_data_line(server: ms.ModelServer, client):
    server.set_script(
        [ms.Rule(respond=ms.SseError(after_text="half", message="boom", error_type="server_error"))]
    )
    events = client.post("/v1/chat/completions", chat_body()).events()
    assert events[-1][1] == {
        "error": {"message": "boom", "type": "server_error", "param": None, "code": "server_error"}
    }
    assert (None, "[DONE]") not in events
