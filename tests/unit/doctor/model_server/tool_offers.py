"""Tool offers as each wire API spells them, for requests sent to the model server."""

from __future__ import annotations

from typing import Any

STRING = {"type": "string"}


def schema(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    """A JSON Schema object with these properties, of which `required` must be given."""
    return {"type": "object", "properties": properties, "required": required}


def claude_tool(name: str, parameters: dict[str, Any], **extra: Any) -> dict[str, Any]:
    """A tool as the Anthropic Messages API offers it."""
    return {"name": name, **extra, "input_schema": parameters}


def responses_tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """A function tool as the OpenAI Responses API offers it."""
    return {"type": "function", "name": name, "parameters": parameters}


def chat_tool(name: str, parameters: dict[str, Any]) -> dict[str, Any]:
    """A function tool as the OpenAI Chat Completions API offers it."""
    return {"type": "function", "function": {"name": name, "parameters": parameters}}


def gemini_tools(*declarations: dict[str, Any]) -> dict[str, Any]:
    """A Gemini `tools` entry declaring these functions."""
    return {"functionDeclarations": list(declarations)}
