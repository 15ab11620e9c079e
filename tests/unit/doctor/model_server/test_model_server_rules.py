from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.doctor import model_server as ms


def anthropic(
    messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "model": "m",
        "max_tokens": 100,
        "messages": messages,
        "tools": [{"name": "Bash", "input_schema": {"type": "object"}}] if tools is None else tools,
    }


def said(client, body: dict[str, Any]) -> str:
    answer = client.post("/v1/messages", body).json()
    return "".join(block.get("text", "") for block in answer["content"])


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "text", "text": text}]}


def tool_result() -> dict[str, Any]:
    return {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "t", "content": "ok"}],
    }


def test_first_matching_rule_wins_and_times_run_out(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(respond=ms.Text("once"), times=1),
            ms.Rule(respond=ms.Text("twice"), times=2),
            ms.Rule(respond=ms.Text("forever")),
        ]
    )
    answers = [said(client, anthropic([user("hi")])) for _ in range(5)]
    assert answers == ["once", "twice", "twice", "forever", "forever"]
    assert server.rule_uses == (1, 2, 2)
    assert [r.rule_index for r in server.requests] == [0, 1, 1, 2, 2]


def test_set_script_resets_use_counts_and_keeps_log(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.Text("a"), times=1)])
    assert said(client, anthropic([user("x")])) == "a"
    server.set_script([ms.Rule(respond=ms.Text("b"), times=1)])
    assert server.rule_uses == (0,)
    assert said(client, anthropic([user("x")])) == "b"
    assert len(server.requests) == 2


def test_unmatched_main_request_gets_the_fallback(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.Text("never"), match=ms.Match(user_text_contains="zzz"))])
    assert said(client, anthropic([user("hello")])) == ms.NO_RULE_TEXT
    assert server.requests[-1].rule_index is None


def test_custom_fallback(client_factory):
    with ms.ModelServer(fallback=ms.HttpError(500, "no rule")) as srv:
        answer = client_factory(srv.base_url).post("/v1/messages", anthropic([user("hi")]))
        assert answer.status == 500
        assert answer.json()["error"]["message"] == "no rule"


def test_conversation_state_conditions(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(respond=ms.Text("after-tool"), match=ms.Match(last_input_is_tool_result=True)),
            ms.Rule(respond=ms.Text("second-turn"), match=ms.Match(assistant_turns=1)),
            ms.Rule(respond=ms.Text("papaya"), match=ms.Match(user_text_contains="PAPAYA")),
            ms.Rule(respond=ms.Text("no-tools"), match=ms.Match(tools_offered=False)),
            ms.Rule(respond=ms.Text("has-bash"), match=ms.Match(offers_tool="Bash")),
        ]
    )
    assert said(client, anthropic([user("a"), assistant("b"), tool_result()])) == "after-tool"
    assert said(client, anthropic([user("a"), assistant("b"), user("c")])) == "second-turn"
    assert said(client, anthropic([user("say PAPAYA")])) == "papaya"
    assert said(client, anthropic([user("plain")], tools=[])) == "no-tools"
    assert said(client, anthropic([user("plain")])) == "has-bash"


def test_user_text_is_the_latest_turn_not_earlier_ones(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(respond=ms.Text("old"), match=ms.Match(user_text_contains="remember PAPAYA")),
            ms.Rule(respond=ms.Text("new"), match=ms.Match(user_text_contains="what was it")),
        ]
    )
    resumed = [user("remember PAPAYA"), assistant("ok"), user("what was it?")]
    assert said(client, anthropic(resumed)) == "new"
    while_working = [user("remember PAPAYA"), assistant("calling"), tool_result()]
    assert said(client, anthropic(while_working)) == "old"
    reminder = tool_result()
    reminder["content"].append(
        {"type": "text", "text": "<system-reminder>what was it</system-reminder>"}
    )
    assert (
        said(client, anthropic([user("remember PAPAYA"), assistant("calling"), reminder])) == "old"
    )


def test_the_prompt_after_an_interrupted_tool_call_is_the_user_text(server: ms.ModelServer, client):
    # Claude Code sends it in the message that carries the rejected tool call's result.
    server.set_script(
        [
            ms.Rule(respond=ms.Text("old"), match=ms.Match(user_text_contains="remember PAPAYA")),
            ms.Rule(respond=ms.Text("new"), match=ms.Match(user_text_contains="what was it")),
        ]
    )
    after_interrupt = tool_result()
    after_interrupt["content"] += [
        {"type": "text", "text": "[Request interrupted by user for tool use]"},
        {"type": "text", "text": "<system-reminder>be brief</system-reminder>"},
        {"type": "text", "text": "what was it?"},
    ]
    conversation = [user("remember PAPAYA"), assistant("calling"), after_interrupt]
    assert said(client, anthropic(conversation)) == "new"


def test_api_condition(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(respond=ms.Text("chat"), match=ms.Match(api=ms.Api.OPENAI_CHAT)),
            ms.Rule(respond=ms.Text("anthropic"), match=ms.Match(api=ms.Api.ANTHROPIC_MESSAGES)),
        ]
    )
    assert said(client, anthropic([user("x")])) == "anthropic"
    chat = client.post("/v1/chat/completions", {"model": "m", "messages": [user("x")]}).json()
    assert chat["choices"][0]["message"]["content"] == "chat"


def test_schema_requested_condition(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(respond=ms.Text("structured"), match=ms.Match(schema_requested=True)),
            ms.Rule(respond=ms.Text("free")),
        ]
    )
    tools = [{"name": "StructuredOutput", "input_schema": {"type": "object"}}]
    assert said(client, anthropic([user("x")], tools=tools)) == "structured"
    assert said(client, anthropic([user("x")])) == "free"


def claude_title_request(prompt: str) -> dict[str, Any]:
    return {
        "model": "claude-opus-4-8",
        "max_tokens": 64000,
        "system": [
            {"type": "text", "text": "You are Claude Code, Anthropic's official CLI for Claude."},
            {
                "type": "text",
                "text": 'Generate a concise, sentence-case title (3-7 words). Return JSON with a single "title" field.',
            },
        ],
        "messages": [
            {
                "role": "user",
                "content": [{"type": "text", "text": f"<session>\n{prompt}\n</session>"}],
            }
        ],
        "tools": [],
        "output_config": {
            "format": {
                "type": "json_schema",
                "schema": {
                    "type": "object",
                    "properties": {"title": {"type": "string"}},
                    "required": ["title"],
                    "additionalProperties": False,
                },
            }
        },
    }


def test_side_requests_bypass_main_rules_by_default(server: ms.ModelServer, client):
    server.set_script(
        [ms.Rule(respond=ms.Text("main answer"), match=ms.Match(user_text_contains="PINEAPPLE"))]
    )

    title = said(client, claude_title_request("Remember PINEAPPLE"))
    assert json.loads(title) == {"title": "Scripted session"}
    assert server.requests[-1].kind is ms.RequestKind.TITLE
    assert server.rule_uses == (0,)


def test_a_rule_naming_the_kind_answers_side_requests(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(
                respond=ms.Text('{"title": "Fruit talk"}'),
                match=ms.Match(kind=ms.RequestKind.TITLE),
            ),
            ms.Rule(respond=ms.Text("anything"), match=ms.Match(kind=None)),
        ]
    )
    assert said(client, claude_title_request("x")) == '{"title": "Fruit talk"}'
    assert said(client, anthropic([user("x")])) == "anything"


def test_summary_and_quota_side_requests(server: ms.ModelServer, client):
    server.set_script([ms.Rule(respond=ms.Text("main"))])
    summary = anthropic([user("summarize")], tools=[])
    summary["system"] = [{"type": "text", "text": "You are a context summarization assistant."}]
    assert said(client, summary).startswith("Summary:")
    quota = anthropic([user("quota")], tools=[])
    quota["max_tokens"] = 1
    assert said(client, quota) == "OK"
    assert [r.kind for r in server.requests] == [ms.RequestKind.SUMMARY, ms.RequestKind.QUOTA]


def test_script_must_hold_rules(server: ms.ModelServer):
    with pytest.raises(TypeError, match="not a Rule"):
        server.set_script([ms.Text("bare")])  # type: ignore[list-item]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ms.ToolCall(), "needs command"),
        (lambda: ms.ToolCall(tool="Read", command="x"), "takes arguments"),
        (lambda: ms.Message((ms.Text("a", usage=ms.Usage()),)), "must not carry usage"),
        (lambda: ms.Message(()), "at least one part"),
        (lambda: ms.Usage(input=1, cache_read=2), "exceed input"),
        (lambda: ms.Usage(output=1, reasoning=2), "exceeds output"),
        (lambda: ms.Usage(input=-1), "negative"),
        (lambda: ms.Text("x", chunk_size=0), "chunk_size"),
        (lambda: ms.Rule(respond=ms.Text("x"), times=0), "times"),
        (lambda: ms.HttpError(200), "400-599"),
    ],
)
def test_invalid_values_are_refused_with_a_reason(build, message):
    with pytest.raises(ValueError, match=message):
        build()


def test_explicit_tool_call_arguments_pass_through(server: ms.ModelServer, client):
    server.set_script(
        [
            ms.Rule(
                respond=ms.ToolCall(
                    tool="Read", arguments={"file_path": "/tmp/x"}, call_id="toolu_fixed"
                )
            )
        ]
    )
    block = client.post("/v1/messages", anthropic([user("x")])).json()["content"][0]
    assert block == {
        "type": "tool_use",
        "id": "toolu_fixed",
        "name": "Read",
        "input": {"file_path": "/tmp/x"},
    }


roles = st.lists(st.sampled_from(["user", "assistant", "tool"]), max_size=12)


@settings(max_examples=60)
@given(roles)
def test_facts_count_assistant_runs_and_final_tool_result(shared_server, sequence):
    server, client = shared_server
    messages: list[dict[str, Any]] = []
    for role in sequence:
        messages.append(
            tool_result() if role == "tool" else (user("u") if role == "user" else assistant("a"))
        )
    client.post("/v1/messages", anthropic(messages))
    facts = server.requests[-1].facts
    runs = sum(
        1
        for i, role in enumerate(sequence)
        if role == "assistant" and (i == 0 or sequence[i - 1] != "assistant")
    )
    assert facts.assistant_turns == runs
    assert facts.last_input_is_tool_result == (bool(sequence) and sequence[-1] == "tool")
