from __future__ import annotations

import json
from typing import Any

from agentshim.doctor import model_server as ms
from tests.unit.doctor.model_server.tool_offers import STRING, responses_tool, schema

EXEC_COMMAND = responses_tool("exec_command", schema({"cmd": STRING, "workdir": STRING}, ["cmd"]))
SHELL_ARGV = responses_tool(
    "shell", schema({"command": {"type": "array", "items": STRING}}, ["command"])
)


def codex_body(
    *items: dict[str, Any], tools: list[Any] | None = None, **extra: Any
) -> dict[str, Any]:
    return {
        "model": "fake-model",
        "instructions": "",
        "input": list(items)
        or [
            {
                "type": "message",
                "role": "developer",
                "content": [{"type": "input_text", "text": "rules"}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "<environment_context/>"}],
            },
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": "Say hi"}],
            },
        ],
        "tools": [EXEC_COMMAND] if tools is None else tools,
        "stream": True,
        "store": False,
        **extra,
    }


def test_text_stream_event_sequence_and_usage(server: ms.ModelServer, client):
    usage = ms.Usage(input=500, output=40, cache_read=200, reasoning=15)
    server.set_script([ms.Rule(respond=ms.Text("Hello, Codex!", chunk_size=4, usage=usage))])
    answer = client.post("/v1/responses", codex_body())
    assert answer.status == 200
    events = answer.events()
    names = [n for n, _ in events]
    assert names == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        *["response.output_text.delta"] * 4,
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    for name, data in events:
        assert data["type"] == name
    numbers = [d["sequence_number"] for _, d in events]
    assert numbers == sorted(numbers)
    assert len(set(numbers)) == len(numbers)
    text = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    assert text == "Hello, Codex!"
    done = next(d for n, d in events if n == "response.output_item.done")["item"]
    assert done["content"][0]["text"] == "Hello, Codex!"
    completed = events[-1][1]["response"]
    assert completed["status"] == "completed"
    assert completed["id"] == events[0][1]["response"]["id"]
    assert completed["usage"] == {
        "input_tokens": 500,
        "input_tokens_details": {"cached_tokens": 200},
        "output_tokens": 40,
        "output_tokens_details": {"reasoning_tokens": 15},
        "total_tokens": 540,
    }


def test_function_call_uses_exec_command_with_cmd(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.ToolCall(command="printf 'a\\nb'", chunk_size=5))])
    events = client.post("/v1/responses", codex_body()).events()
    added = next(d for n, d in events if n == "response.output_item.added")["item"]
    assert added["type"] == "function_call"
    assert added["name"] == "exec_command"
    assert added["arguments"] == ""
    deltas = "".join(d["delta"] for n, d in events if n == "response.function_call_arguments.delta")
    assert json.loads(deltas) == {"cmd": "printf 'a\\nb'"}
    done = next(d for n, d in events if n == "response.output_item.done")["item"]
    assert done["call_id"] == added["call_id"]
    assert json.loads(done["arguments"]) == {"cmd": "printf 'a\\nb'"}


def test_classic_shell_tool_gets_an_argv(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.ToolCall(command="ls -la"))])
    body = client.post("/v1/responses", codex_body(tools=[SHELL_ARGV], stream=False)).json()
    call = body["output"][0]
    assert call["name"] == "shell"
    assert json.loads(call["arguments"]) == {"command": ["bash", "-lc", "ls -la"]}


def test_tool_result_then_answer_across_two_requests(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(
                respond=ms.ToolCall(command="echo hi"),
                match=ms.Match(last_input_is_tool_result=False),
            ),
            ms.Rule(respond=ms.Text("Done."), match=ms.Match(last_input_is_tool_result=True)),
        ]
    )
    first = client.post("/v1/responses", codex_body(stream=False)).json()
    call = first["output"][0]
    history = [
        *codex_body()["input"],
        {"type": "reasoning", "summary": []},
        call,
        {"type": "function_call_output", "call_id": call["call_id"], "output": "hi\n"},
    ]
    second = client.post("/v1/responses", codex_body(*history, stream=False)).json()
    assert second["output"][0]["content"][0]["text"] == "Done."
    facts = server.requests[-1].facts
    assert facts.assistant_turns == 1
    assert facts.last_input_is_tool_result is True
    assert facts.user_text.endswith("Say hi")


def test_text_and_call_in_one_message_become_two_items(server: ms.ModelServer, client):
    server.set_script(
        [ms.Rule(respond=ms.Message((ms.Text("Running."), ms.ToolCall(command="true"))))]
    )
    body = client.post("/v1/responses", codex_body(stream=False)).json()
    assert [item["type"] for item in body["output"]] == ["message", "function_call"]


def test_structured_output_is_the_json_text(server: ms.ModelServer, client):
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    server.set_script(
        [
            ms.Rule(
                respond=ms.StructuredOutput({"answer": "hello", "count": 2}),
                match=ms.Match(schema_requested=True),
            )
        ]
    )
    body = codex_body(
        text={"format": {"type": "json_schema", "name": "s", "strict": True, "schema": schema}}
    )
    events = client.post("/v1/responses", body).events()
    text = "".join(d["delta"] for n, d in events if n == "response.output_text.delta")
    assert json.loads(text) == {"answer": "hello", "count": 2}


def test_sse_error_is_response_failed(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(
                respond=ms.SseError(
                    after_text="par", message="too long", error_type="context_length_exceeded"
                )
            )
        ]
    )
    events = client.post("/v1/responses", codex_body()).events()
    name, data = events[-1]
    assert name == "response.failed"
    assert data["response"]["error"] == {"code": "context_length_exceeded", "message": "too long"}
    assert "response.completed" not in [n for n, _ in events]


def test_context_overflow_http_error_has_openai_code(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.HttpError.context_overflow())])
    answer = client.post("/v1/responses", codex_body())
    assert answer.status == 400
    error = answer.json()["error"]
    assert error["code"] == "context_length_exceeded"
    assert error["type"] == "invalid_request_error"
    assert "context window" in error["message"]


def test_unauthorized_has_invalid_api_key_code(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.HttpError(401, "Incorrect API key provided: fake."))])
    answer = client.post("/v1/responses", codex_body())
    assert answer.status == 401
    assert answer.json()["error"]["code"] == "invalid_api_key"
    assert answer.json()["error"]["message"] == "Incorrect API key provided: fake."
