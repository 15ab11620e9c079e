"""Turn a content response into the parts of one assistant message for one request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from ._json import JsonValue, dumps
from .facts import RequestFacts
from .kinds import Api
from .responses import DEFAULT_USAGE, Message, MessagePart, StructuredOutput, Text, ToolCall, Usage
from .shell_tools import shell_call

__all__ = ["Reply", "TextPart", "ToolUsePart", "build_reply", "chunks"]

_JSON_CHUNK = 16


@dataclass(frozen=True, slots=True)
class TextPart:
    """Text the model says, with its streaming granularity."""

    text: str
    chunk_size: int = _JSON_CHUNK
    delay: float = 0.0


@dataclass(frozen=True, slots=True)
class ToolUsePart:
    """A tool call the model makes: id, tool name and JSON arguments."""

    call_id: str
    name: str
    arguments: Mapping[str, JsonValue]
    chunk_size: int = _JSON_CHUNK
    namespace: str | None = None

    @property
    def arguments_json(self) -> str:
        """The arguments encoded as the JSON string streamed to the client."""
        return dumps(dict(self.arguments))


@dataclass(frozen=True, slots=True)
class Reply:
    """One assistant message: its parts in order and the usage it reports."""

    parts: tuple[TextPart | ToolUsePart, ...]
    usage: Usage

    @property
    def calls_tools(self) -> bool:
        """Whether the message ends with tool calls (the turn continues after them)."""
        return any(isinstance(part, ToolUsePart) for part in self.parts)

    @property
    def text(self) -> str:
        """All text parts joined."""
        return "".join(part.text for part in self.parts if isinstance(part, TextPart))


def chunks(text: str, size: int) -> list[str]:
    """Split ``text`` into pieces of at most ``size`` characters (none for empty text)."""
    return [text[i : i + size] for i in range(0, len(text), size)]


def build_reply(
    response: Text | ToolCall | StructuredOutput | Message,
    facts: RequestFacts,
    *,
    id_prefix: str,
) -> Reply:
    """Resolve ``response`` against the request: pick tools, encode structured values.

    ``id_prefix`` makes generated tool-call ids unique per request.
    """
    parts = response.parts if isinstance(response, Message) else (response,)
    built = tuple(_part(part, facts, id_prefix, index) for index, part in enumerate(parts))
    return Reply(parts=built, usage=response.usage or DEFAULT_USAGE)


def _call_id(facts: RequestFacts, id_prefix: str, index: int) -> str:
    stem = "toolu" if facts.api is Api.ANTHROPIC_MESSAGES else "call"
    return f"{stem}_{id_prefix}_{index}"


def _part(
    part: MessagePart, facts: RequestFacts, id_prefix: str, index: int
) -> TextPart | ToolUsePart:
    if isinstance(part, Text):
        return TextPart(part.text, part.chunk_size, part.delay_per_chunk)
    if isinstance(part, ToolCall):
        call_id = part.call_id or _call_id(facts, id_prefix, index)
        if part.tool == "shell":
            name, arguments = shell_call(facts, part.command or "", part.arguments)
        else:
            name, arguments = part.tool, dict(part.arguments or {})
        return ToolUsePart(call_id, name, arguments, part.chunk_size, part.namespace)
    value = part.value
    structured_tool = facts.tool("StructuredOutput")
    if (
        facts.api is Api.ANTHROPIC_MESSAGES
        and structured_tool is not None
        and isinstance(value, Mapping)
    ):
        return ToolUsePart(_call_id(facts, id_prefix, index), structured_tool.name, value)
    return TextPart(dumps(value))
