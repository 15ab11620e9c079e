"""What a request is: which wire API it speaks and what the CLI wants from it."""

from __future__ import annotations

import enum

__all__ = ["Api", "RequestKind"]


class Api(enum.Enum):
    """The model APIs the server speaks, recognised from the request path."""

    ANTHROPIC_MESSAGES = "anthropic_messages"
    OPENAI_RESPONSES = "openai_responses"
    OPENAI_CHAT = "openai_chat"
    GEMINI = "gemini"


class RequestKind(enum.Enum):
    """Why a CLI sent a request.

    Only ``MAIN`` requests (the agent loop itself) are matched by a rule unless the rule's
    ``Match.kind`` names another kind; the others get a built-in answer by default.
    """

    #: A turn of the agent loop: the requests a script is about.
    MAIN = "main"
    #: Session title or topic generation (Claude Code TUI, opencode).
    TITLE = "title"
    #: Model routing or classification before the turn (Gemini CLI's router).
    ROUTER = "router"
    #: Conversation summarization for compaction (Pi, opencode, Claude Code).
    SUMMARY = "summary"
    #: Another small structured side call (Gemini CLI's next-speaker or loop checks).
    UTILITY = "utility"
    #: Claude Code's quota probe (``max_tokens: 1``, user text ``quota``).
    QUOTA = "quota"
    #: Token counting (Anthropic ``count_tokens``, Gemini ``:countTokens``).
    COUNT_TOKENS = "count_tokens"
    #: ``GET .../models`` and ``GET .../models/<id>``.
    MODEL_LIST = "model_list"
    #: Anything else (``HEAD /``, telemetry paths, unknown endpoints).
    OTHER = "other"
