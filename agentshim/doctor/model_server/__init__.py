"""A scripted, stdlib-only model API server for running real agent CLIs offline.

``ModelServer`` listens on 127.0.0.1 and speaks the APIs the supported CLIs call: Anthropic
Messages (Claude Code, Pi), OpenAI Responses (Codex, Copilot CLI), OpenAI Chat Completions
(opencode, Copilot CLI, Pi) and Gemini (Gemini CLI). A script is a list of ``Rule`` values:
each ``Match``es requests by conversation state and answers with a typed response (``Text``,
``ToolCall``, ``StructuredOutput``, ``Message``, ``HttpError``, ``SseError``, ``Hang``) that
carries scripted ``Usage``, so token accounting can be asserted end to end.
"""

from __future__ import annotations

from .errors import ModelServerError
from .facts import OfferedTool, RequestFacts
from .kinds import Api, RequestKind
from .log import LoggedRequest
from .responses import (
    DEFAULT_USAGE,
    Hang,
    HttpError,
    Message,
    MessagePart,
    Response,
    SseError,
    StructuredOutput,
    Text,
    ToolCall,
    Usage,
)
from .rules import Match, Rule
from .server import NO_RULE_ANSWER, NO_RULE_TEXT, ModelServer
from .side_requests import BUILTIN_USAGE

__all__ = [
    "BUILTIN_USAGE",
    "DEFAULT_USAGE",
    "NO_RULE_ANSWER",
    "NO_RULE_TEXT",
    "Api",
    "Hang",
    "HttpError",
    "LoggedRequest",
    "Match",
    "Message",
    "MessagePart",
    "ModelServer",
    "ModelServerError",
    "OfferedTool",
    "RequestFacts",
    "RequestKind",
    "Response",
    "Rule",
    "SseError",
    "StructuredOutput",
    "Text",
    "ToolCall",
    "Usage",
]
