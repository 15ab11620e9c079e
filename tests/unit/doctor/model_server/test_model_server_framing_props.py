from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.doctor.model_server import Message, Rule, Text, ToolCall

texts = st.text(st.characters(blacklist_categories=("Cs",)), max_size=80)
sizes = st.integers(min_value=1, max_value=20)


def anthropic_text(client: Any) -> str:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    events = client.post("/v1/messages", body).events()
    return "".join(d["delta"]["text"] for n, d in events if n == "content_block_delta")


def responses_text(client: Any) -> str:
    body = {"model": "m", "stream": True, "input": "x"}
    events = client.post("/v1/responses", body).events()
    return "".join(d["delta"] for n, d in events if n == "response.output_text.delta")


def chat_text(client: Any) -> str:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    events = client.post("/v1/chat/completions", body).events()
    return "".join(
        d["choices"][0]["delta"].get("content", "") for _, d in events[:-1] if d["choices"]
    )


def gemini_text(client: Any) -> str:
    body = {"contents": [{"role": "user", "parts": [{"text": "x"}]}]}
    events = client.post("/v1beta/models/g:streamGenerateContent?alt=sse", body).events()
    return "".join(
        part.get("text", "") for _, d in events for part in d["candidates"][0]["content"]["parts"]
    )


READERS = st.sampled_from([anthropic_text, responses_text, chat_text, gemini_text])


@settings(max_examples=80)
@given(text=texts, size=sizes, reader=READERS)
def test_streamed_text_reassembles_exactly_in_every_api(shared_server, text, size, reader):
    server, client = shared_server
    server.set_script([Rule(respond=Text(text, chunk_size=size))])
    assert reader(client) == text


arguments = st.dictionaries(
    st.text(min_size=1, max_size=8),
    st.one_of(st.integers(), st.text(max_size=20), st.booleans(), st.none()),
    max_size=4,
)


@settings(max_examples=60)
@given(args=arguments, size=sizes)
def test_tool_arguments_reassemble_in_anthropic_and_chat(shared_server, args, size):
    server, client = shared_server
    server.set_script(
        [Rule(respond=Message((ToolCall(tool="Edit", arguments=args, chunk_size=size),)))]
    )
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
    events = client.post("/v1/messages", body).events()
    partial = "".join(d["delta"]["partial_json"] for n, d in events if n == "content_block_delta")
    assert json.loads(partial) == args
    events = client.post("/v1/chat/completions", body).events()
    pieces = [
        call["function"]["arguments"]
        for _, d in events[:-1]
        if d["choices"]
        for call in d["choices"][0]["delta"].get("tool_calls", [])
    ]
    assert json.loads("".join(pieces)) == args
