from __future__ import annotations

import json
from typing import Any

from agentshim.doctor import model_server as ms
from tests.unit.doctor.model_server.tool_offers import STRING, gemini_tools, schema

SHELL = gemini_tools(
    {
        "name": "run_shell_command",
        "parametersJsonSchema": schema({"command": STRING, "description": STRING}, ["command"]),
    },
    {"name": "read_file", "parametersJsonSchema": {"type": "object"}},
)
STREAM = "/v1beta/models/gemini-3.1-pro-preview:streamGenerateContent?alt=sse"


def gemini_body(*contents: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {
        "contents": list(contents)
        or [
            {"role": "user", "parts": [{"text": "<session_context>setup</session_context>"}]},
            {"role": "user", "parts": [{"text": "Say hello"}]},
        ],
        "systemInstruction": {"role": "user", "parts": [{"text": "You are Gemini CLI."}]},
        "tools": [SHELL],
        "generationConfig": {"temperature": 1},
        **extra,
    }


def router_body() -> dict[str, Any]:
    return {
        "contents": [{"role": "user", "parts": [{"text": "Say hello"}]}],
        "systemInstruction": {"parts": [{"text": "You are a specialized Task Routing AI."}]},
        "generationConfig": {
            "responseMimeType": "application/json",
            "responseJsonSchema": {
                "type": "object",
                "properties": {
                    "complexity_reasoning": {"type": "string"},
                    "complexity_score": {"type": "integer"},
                },
                "required": ["complexity_reasoning", "complexity_score"],
            },
        },
    }


def test_sse_stream_chunks_and_usage_metadata(server: ms.ModelServer, client):
    usage = ms.Usage(input=300, output=60, cache_read=100, reasoning=25)
    server.set_script([ms.Rule(respond=ms.Text("Hello from Gemini", chunk_size=6, usage=usage))])
    answer = client.post(STREAM, gemini_body())
    assert answer.status == 200
    chunks = [data for name, data in answer.events()]
    assert all(name is None for name, _ in answer.events())
    text = "".join(c["candidates"][0]["content"]["parts"][0]["text"] for c in chunks)
    assert text == "Hello from Gemini"
    assert all(c["candidates"][0]["content"]["role"] == "model" for c in chunks)
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    assert all("finishReason" not in c["candidates"][0] for c in chunks[:-1])
    assert chunks[-1]["usageMetadata"] == {
        "promptTokenCount": 300,
        "cachedContentTokenCount": 100,
        "candidatesTokenCount": 35,
        "thoughtsTokenCount": 25,
        "totalTokenCount": 360,
    }
    assert chunks[-1]["modelVersion"] == "gemini-3.1-pro-preview"


def test_function_call_part_for_run_shell_command(server: ms.ModelServer, client):
    server.set_script(
        [ms.Rule(respond=ms.Message((ms.Text("Running."), ms.ToolCall(command="echo hello"))))]
    )
    chunks = [d for _, d in client.post(STREAM, gemini_body()).events()]
    last_parts = chunks[-1]["candidates"][0]["content"]["parts"]
    assert last_parts == [
        {"functionCall": {"name": "run_shell_command", "args": {"command": "echo hello"}}}
    ]
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


def test_function_response_is_a_tool_result(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(
                respond=ms.Text("Done."),
                match=ms.Match(last_input_is_tool_result=True, assistant_turns=1),
            )
        ]
    )
    history = [
        {"role": "user", "parts": [{"text": "run it"}]},
        {
            "role": "model",
            "parts": [{"functionCall": {"name": "run_shell_command", "args": {"command": "echo"}}}],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "run_shell_command", "response": {"output": "x"}}}
            ],
        },
    ]
    body = client.post("/v1beta/models/m:generateContent", gemini_body(*history)).json()
    assert body["candidates"][0]["content"]["parts"] == [{"text": "Done."}]
    assert server.requests[-1].rule_index == 0


def test_stream_without_alt_sse_is_one_json_array(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.Text("abcdef", chunk_size=2))])
    answer = client.post("/v1beta/models/m:streamGenerateContent", gemini_body())
    chunks = answer.json()
    assert isinstance(chunks, list)
    assert len(chunks) == 3
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


def test_router_request_gets_builtin_routing_answer(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.Text("main"))])
    answer = client.post("/v1beta/models/gemini-3.5-flash-lite:generateContent", router_body())
    text = answer.json()["candidates"][0]["content"]["parts"][0]["text"]
    decision = json.loads(text)
    assert decision["complexity_score"] == 1
    assert isinstance(decision["complexity_reasoning"], str)
    logged = server.requests[-1]
    assert logged.kind is ms.RequestKind.ROUTER
    assert logged.rule_index is None
    assert answer.json()["usageMetadata"]["totalTokenCount"] == 0


def test_a_rule_can_take_over_the_router(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(
                respond=ms.StructuredOutput(
                    {"complexity_reasoning": "hard", "complexity_score": 90}
                ),
                match=ms.Match(kind=ms.RequestKind.ROUTER),
            )
        ]
    )
    answer = client.post("/v1beta/models/r:generateContent", router_body())
    assert '"complexity_score":90' in answer.json()["candidates"][0]["content"]["parts"][0]["text"]
    assert server.rule_uses == (1,)


def test_count_tokens_and_model_list(client):
    count = client.post("/v1beta/models/m:countTokens", {"contents": []})
    assert count.json() == {"totalTokens": 100}
    models = client.request("GET", "/v1beta/models?key=x").json()
    assert models["models"][0]["name"] == "models/fake-model"


def test_http_error_uses_google_error_shape(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.HttpError(429, headers={"retry-after": "2"}))])
    answer = client.post(STREAM, gemini_body())
    assert answer.status == 429
    assert answer.headers["retry-after"] == "2"
    assert answer.json() == {
        "error": {"code": 429, "message": "Rate limit exceeded", "status": "RESOURCE_EXHAUSTED"}
    }


def test_sse_error_chunk(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.SseError(after_text="so far", message="try later"))])
    events = client.post(STREAM, gemini_body()).events()
    assert events[0][1]["candidates"][0]["content"]["parts"][0]["text"] == "so far"
    assert events[-1][1] == {
        "error": {"code": 503, "message": "try later", "status": "UNAVAILABLE"}
    }


def test_next_speaker_check_gets_user_speaks_next(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.Text("main"))])
    check = {
        "contents": [{"role": "user", "parts": [{"text": "Who speaks next?"}]}],
        "generationConfig": {
            "responseJsonSchema": {
                "type": "object",
                "properties": {
                    "reasoning": {"type": "string"},
                    "next_speaker": {"type": "string", "enum": ["user", "model"]},
                },
                "required": ["reasoning", "next_speaker"],
            }
        },
    }
    answer = client.post("/v1beta/models/flash:generateContent", check).json()
    decision = json.loads(answer["candidates"][0]["content"]["parts"][0]["text"])
    assert decision["next_speaker"] == "user"
    assert server.requests[-1].kind is ms.RequestKind.UTILITY
