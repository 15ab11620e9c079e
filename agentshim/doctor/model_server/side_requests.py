"""Recognise the side requests CLIs make around a turn, and answer them by default.

The markers come from recorded traffic: Claude Code's title request has no tools and a
``json_schema`` output format with a ``title`` field; opencode's system prompt says "title
generator"; Gemini CLI's router is a non-streaming ``generateContent`` whose schema asks for a
``complexity_score``; Pi's compaction request is a "context summarization assistant".
"""

from __future__ import annotations

from ._json import as_object
from .facts import RequestFacts
from .kinds import Api, RequestKind
from .responses import Response, StructuredOutput, Text, Usage
from .schema_example import example_for

__all__ = ["BUILTIN_USAGE", "builtin_response", "classify"]

#: Built-in side answers report no tokens, so scripted usage adds up exactly end to end.
BUILTIN_USAGE = Usage()

_TITLE_MARKERS = (
    "title generator",
    "sentence-case title",
    "generate a concise title",
    "isnewtopic",
)
_SUMMARY_MARKERS = (
    "context summarization",
    "summarizing conversations",
    "summarize the conversation",
    "detailed summary of the conversation",
)
_ROUTER_MARKERS = ("task routing", "complexity_score", "model_choice")


def _schema_fields(facts: RequestFacts) -> frozenset[str]:
    if facts.schema is None:
        return frozenset()
    return frozenset(as_object(facts.schema.get("properties")))


def classify(facts: RequestFacts) -> RequestKind:
    """The kind of a generation request (``MAIN`` unless a side-request marker is found)."""
    system = facts.system_text.lower()
    fields = _schema_fields(facts)
    if facts.max_tokens == 1 and facts.user_text.strip().lower() == "quota":
        return RequestKind.QUOTA
    if any(marker in system for marker in _TITLE_MARKERS) or (
        not facts.tools and "title" in fields
    ):
        return RequestKind.TITLE
    routing_fields = fields & {"complexity_score", "model_choice"}
    if not facts.tools and (any(m in system for m in _ROUTER_MARKERS) or routing_fields):
        return RequestKind.ROUTER
    if any(marker in system for marker in _SUMMARY_MARKERS):
        return RequestKind.SUMMARY
    # Gemini CLI runs every turn through streamGenerateContent; a plain generateContent
    # asking for JSON is one of its checks (next speaker, loop detection).
    if facts.api is Api.GEMINI and not facts.stream and facts.schema_requested:
        return RequestKind.UTILITY
    return RequestKind.MAIN


def builtin_response(facts: RequestFacts) -> Response:
    """The default answer to a side request of ``facts.kind`` (also used for ``MAIN``)."""
    kind = facts.kind
    if facts.schema is not None and kind in (
        RequestKind.TITLE,
        RequestKind.ROUTER,
        RequestKind.UTILITY,
    ):
        return StructuredOutput(example_for(facts.schema), usage=BUILTIN_USAGE)
    if kind is RequestKind.TITLE:
        return Text("Scripted session", usage=BUILTIN_USAGE)
    if kind is RequestKind.ROUTER:
        return StructuredOutput(
            {"complexity_reasoning": "Scripted routing answer.", "complexity_score": 1},
            usage=BUILTIN_USAGE,
        )
    if kind is RequestKind.SUMMARY:
        return Text("Summary: a scripted conversation, nothing left to do.", usage=BUILTIN_USAGE)
    if kind is RequestKind.UTILITY and facts.schema_requested:
        return StructuredOutput({}, usage=BUILTIN_USAGE)
    return Text("OK", usage=BUILTIN_USAGE)
