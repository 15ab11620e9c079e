from __future__ import annotations

import json
from typing import Any

import pytest

from agentshim.doctor.model_server import Rule, ToolCall
from tests.unit.doctor.model_server.tool_offers import (
    STRING,
    chat_tool,
    claude_tool,
    gemini_tools,
    responses_tool,
    schema,
)


def anthropic_call(client: Any, tools: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": tools}
    block = client.post("/v1/messages", body).json()["content"][0]
    return block["name"], block["input"]


def responses_call(client: Any, tools: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    body = {"model": "m", "input": "x", "tools": tools}
    item = client.post("/v1/responses", body).json()["output"][0]
    return item["name"], json.loads(item["arguments"])


def chat_call(client: Any, tools: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "tools": tools}
    call = client.post("/v1/chat/completions", body).json()["choices"][0]["message"]["tool_calls"][
        0
    ]
    return call["function"]["name"], json.loads(call["function"]["arguments"])


def gemini_call(client: Any, tools: list[dict[str, Any]]) -> tuple[str, dict[str, Any]]:
    body = {"contents": [{"role": "user", "parts": [{"text": "x"}]}], "tools": tools}
    part = client.post("/v1beta/models/g:generateContent", body).json()["candidates"][0]["content"][
        "parts"
    ][0]
    return part["functionCall"]["name"], part["functionCall"]["args"]


CASES = [
    pytest.param(
        anthropic_call,
        [
            claude_tool("Read", schema({"file_path": STRING}, ["file_path"])),
            claude_tool("Bash", schema({"command": STRING, "description": STRING}, ["command"])),
        ],
        ("Bash", {"command": "echo hi"}),
        id="claude-Bash",
    ),
    pytest.param(
        anthropic_call,
        [
            claude_tool(
                "bash", schema({"command": STRING, "timeout": {"type": "number"}}, ["command"])
            )
        ],
        ("bash", {"command": "echo hi"}),
        id="pi-bash",
    ),
    pytest.param(
        responses_call,
        [
            responses_tool("exec_command", schema({"cmd": STRING}, ["cmd"])),
            responses_tool("write_stdin", schema({}, [])),
        ],
        ("exec_command", {"cmd": "echo hi"}),
        id="codex-exec_command",
    ),
    pytest.param(
        responses_call,
        [
            responses_tool(
                "shell_command", schema({"command": STRING, "workdir": STRING}, ["command"])
            )
        ],
        ("shell_command", {"command": "echo hi"}),
        id="codex-shell_command",
    ),
    pytest.param(
        chat_call,
        [
            chat_tool(
                "bash",
                schema({"command": STRING, "description": STRING}, ["command", "description"]),
            )
        ],
        ("bash", {"command": "echo hi", "description": "Run echo hi"}),
        id="opencode-bash",
    ),
    pytest.param(
        chat_call,
        [
            chat_tool(
                "bash",
                schema(
                    {
                        "command": STRING,
                        "description": STRING,
                        "mode": {"type": "string", "enum": ["sync", "async"]},
                    },
                    ["command", "description", "mode"],
                ),
            )
        ],
        ("bash", {"command": "echo hi", "description": "Run echo hi", "mode": "sync"}),
        id="copilot-bash",
    ),
    pytest.param(
        gemini_call,
        [
            gemini_tools(
                {
                    "name": "run_shell_command",
                    "parametersJsonSchema": schema({"command": STRING}, ["command"]),
                }
            )
        ],
        ("run_shell_command", {"command": "echo hi"}),
        id="gemini-run_shell_command",
    ),
    pytest.param(
        gemini_call,
        [gemini_tools({"name": "read_file", "parameters": schema({"path": STRING}, ["path"])})],
        ("run_shell_command", {"command": "echo hi"}),
        id="gemini-without-shell-tool",
    ),
]


@pytest.mark.parametrize(("call", "tools", "expected"), CASES)
def test_shell_tool_and_argument_shape_follow_the_offer(server, client, call, tools, expected):
    server.set_script([Rule(respond=ToolCall(command="echo hi"))])
    assert call(client, tools) == expected


def test_extra_arguments_merge_over_the_built_ones(server, client):
    server.set_script(
        [
            Rule(
                respond=ToolCall(
                    command="sleep 1", arguments={"timeout": 5000, "description": "wait"}
                )
            )
        ]
    )
    tools = [claude_tool("Bash", schema({"command": STRING}, ["command"]))]
    assert anthropic_call(client, tools) == (
        "Bash",
        {"command": "sleep 1", "timeout": 5000, "description": "wait"},
    )
