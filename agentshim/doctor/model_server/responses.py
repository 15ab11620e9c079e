"""What a rule answers: typed responses, each rendered in the wire format of the request."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TypeAlias

from ._json import JsonValue

__all__ = [
    "DEFAULT_USAGE",
    "Hang",
    "HttpError",
    "Message",
    "MessagePart",
    "Response",
    "SseError",
    "StructuredOutput",
    "Text",
    "ToolCall",
    "Usage",
]


@dataclass(frozen=True, slots=True)
class Usage:
    """Token counts a response reports, in the breakdown ``agentshim.core.usage`` uses.

    ``input`` counts every prompt token including cache reads and writes (``cache_read`` and
    ``cache_write`` are parts of it); ``output`` counts every generated token including
    ``reasoning``. Each API gets them in its own fields: Anthropic reports uncached input
    separately, OpenAI reports cached and reasoning tokens as details, Gemini reports thoughts
    apart from candidates. OpenAI and Gemini have no field for cache writes.
    """

    input: int = 0
    output: int = 0
    cache_read: int = 0
    cache_write: int = 0
    reasoning: int = 0

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write", "reasoning"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int):
                raise TypeError(f"Usage.{name} must be an int, got {value!r}")
            if value < 0:
                raise ValueError(f"Usage.{name} must not be negative, got {value}")
        if self.cache_read + self.cache_write > self.input:
            raise ValueError(
                f"Usage: cache_read + cache_write ({self.cache_read} + {self.cache_write}) "
                f"exceed input ({self.input}); input must include cached tokens"
            )
        if self.reasoning > self.output:
            raise ValueError(
                f"Usage: reasoning ({self.reasoning}) exceeds output ({self.output}); "
                "output must include reasoning tokens"
            )

    @property
    def uncached_input(self) -> int:
        """Input tokens that were neither read from nor written to a cache."""
        return self.input - self.cache_read - self.cache_write


#: What a scripted response reports when it sets no usage of its own.
DEFAULT_USAGE = Usage(input=100, output=10)

_DEFAULT_CHUNK = 16


def _check_chunking(owner: str, chunk_size: int, delay: float) -> None:
    if chunk_size < 1:
        raise ValueError(f"{owner}.chunk_size must be at least 1, got {chunk_size}")
    if delay < 0:
        raise ValueError(f"{owner}.delay_per_chunk must not be negative, got {delay}")


@dataclass(frozen=True, slots=True)
class Text:
    """An assistant text answer, streamed as deltas of ``chunk_size`` characters.

    ``delay_per_chunk`` seconds pass before each delta (streaming requests only), which makes
    a slow answer for interrupt and timeout tests.
    """

    text: str
    chunk_size: int = _DEFAULT_CHUNK
    delay_per_chunk: float = 0.0
    usage: Usage | None = None

    def __post_init__(self) -> None:
        _check_chunking("Text", self.chunk_size, self.delay_per_chunk)


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A call of one tool the request offers.

    With ``tool="shell"`` (the default) the server picks the shell tool the request offers and
    builds its argument shape from ``command``: Claude ``Bash {command}``, Codex
    ``exec_command {cmd}`` / ``shell_command {command}`` / ``shell {command: [argv]}``, Gemini
    ``run_shell_command {command}``, opencode, Pi and Copilot ``bash {command}``; string fields
    the tool requires besides the command (``description``) are filled in. ``arguments`` are
    merged over that. Any other ``tool`` is called by that name with ``arguments`` as given.
    ``namespace`` names the Responses ``namespace`` tool that holds ``tool`` (Codex offers an
    MCP server's tools as one, ``mcp__<server>``); the call then carries it, as Codex reads
    it. The JSON arguments stream as deltas of ``chunk_size`` characters.
    """

    tool: str = "shell"
    arguments: Mapping[str, JsonValue] | None = None
    command: str | None = None
    call_id: str | None = None
    chunk_size: int = _DEFAULT_CHUNK
    usage: Usage | None = None
    namespace: str | None = None

    def __post_init__(self) -> None:
        _check_chunking("ToolCall", self.chunk_size, 0.0)
        if self.tool == "shell" and self.command is None:
            raise ValueError('ToolCall(tool="shell") needs command="..." (the shell command)')
        if self.tool != "shell" and self.command is not None:
            raise ValueError(
                f"ToolCall(tool={self.tool!r}) takes arguments=..., not command= "
                '(command= is for tool="shell")'
            )
        if self.arguments is not None:
            object.__setattr__(self, "arguments", MappingProxyType(dict(self.arguments)))


@dataclass(frozen=True, slots=True)
class StructuredOutput:
    """A structured answer, delivered the way the request's provider expects it.

    Anthropic requests that offer Claude Code's ``StructuredOutput`` tool get a call of that
    tool with ``value`` as its input; every other request gets a text answer that is ``value``
    encoded as JSON.
    """

    value: JsonValue
    usage: Usage | None = None


#: A part of a ``Message``.
MessagePart: TypeAlias = Text | ToolCall | StructuredOutput


@dataclass(frozen=True, slots=True)
class Message:
    """Several parts in one assistant message: text then tool calls, two tool calls, ...

    Usage belongs to the message as a whole; its parts must not set their own.
    """

    parts: tuple[MessagePart, ...]
    usage: Usage | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "parts", tuple(self.parts))
        if not self.parts:
            raise ValueError("Message needs at least one part")
        for part in self.parts:
            if part.usage is not None:
                raise ValueError(
                    "Message parts must not carry usage; set usage= on the Message instead"
                )


@dataclass(frozen=True, slots=True)
class HttpError:
    """An HTTP error answer.

    ``body`` is sent as given (a string verbatim, anything else as JSON). Without it the body
    is the API's own error shape built from ``message`` and ``code`` (the OpenAI error code,
    e.g. ``context_length_exceeded``); the default message depends on the status.
    ``headers`` are added to the response (``retry-after``, ``x-should-retry``, ...).
    """

    status: int
    message: str | None = None
    code: str | None = None
    body: JsonValue = None
    headers: Mapping[str, str] = field(default_factory=lambda: MappingProxyType({}))

    def __post_init__(self) -> None:
        if not 400 <= self.status <= 599:
            raise ValueError(f"HttpError.status must be 400-599, got {self.status}")
        object.__setattr__(self, "headers", MappingProxyType(dict(self.headers)))

    @classmethod
    def context_overflow(cls, headers: Mapping[str, str] | None = None) -> HttpError:
        """A 400 "prompt too long" in each API's own words (Anthropic, OpenAI, Gemini)."""
        return cls(400, code="context_length_exceeded", headers=headers or {})


@dataclass(frozen=True, slots=True)
class SseError:
    """A stream that starts normally, sends ``after_text`` as deltas, then an error event.

    ``error_type`` defaults per API (Anthropic ``overloaded_error``, OpenAI ``server_error``,
    Gemini ``UNAVAILABLE``). ``payload`` replaces the error event's JSON entirely.
    """

    after_text: str = ""
    message: str = "Overloaded"
    error_type: str | None = None
    payload: JsonValue = None


@dataclass(frozen=True, slots=True)
class Hang:
    """Hold the request open for ``seconds`` (or until the server closes), then drop it.

    With ``after_text`` a streaming request first gets the start of an answer, so a client
    sees partial output before the stall. The connection is closed without a proper end.
    """

    seconds: float
    after_text: str = ""

    def __post_init__(self) -> None:
        if self.seconds < 0:
            raise ValueError(f"Hang.seconds must not be negative, got {self.seconds}")


#: Anything a rule can answer.
Response: TypeAlias = Text | ToolCall | StructuredOutput | Message | HttpError | SseError | Hang
