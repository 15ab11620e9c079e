"""Scripts: ordered rules that pick a response for each request."""

from __future__ import annotations

from dataclasses import dataclass

from .facts import RequestFacts
from .kinds import Api, RequestKind
from .responses import Response

__all__ = ["Match", "Rule"]


@dataclass(frozen=True, slots=True)
class Match:
    """Conditions on a request; every condition that is set must hold (None means any).

    ``kind`` defaults to ``RequestKind.MAIN``, so side requests (title generation, Gemini's
    router, token counts) keep their built-in answers unless a rule names their kind;
    ``kind=None`` matches every kind. ``user_text_contains`` looks at the latest user turn
    (see ``RequestFacts.user_text``); ``tools_offered`` asks whether any tool is offered,
    ``offers_tool`` whether one with that exact name is.
    """

    api: Api | None = None
    kind: RequestKind | None = RequestKind.MAIN
    assistant_turns: int | None = None
    last_input_is_tool_result: bool | None = None
    user_text_contains: str | None = None
    tools_offered: bool | None = None
    offers_tool: str | None = None
    schema_requested: bool | None = None
    stream: bool | None = None

    def accepts(self, facts: RequestFacts) -> bool:
        """Whether a request with ``facts`` meets every condition."""
        checks = (
            self.api is None or facts.api is self.api,
            self.kind is None or facts.kind is self.kind,
            self.assistant_turns is None or facts.assistant_turns == self.assistant_turns,
            self.last_input_is_tool_result is None
            or facts.last_input_is_tool_result == self.last_input_is_tool_result,
            self.user_text_contains is None or self.user_text_contains in facts.user_text,
            self.tools_offered is None or bool(facts.tools) == self.tools_offered,
            self.offers_tool is None or self.offers_tool in facts.tool_names,
            self.schema_requested is None or facts.schema_requested == self.schema_requested,
            self.stream is None or facts.stream == self.stream,
        )
        return all(checks)


@dataclass(frozen=True, slots=True)
class Rule:
    """Answer requests that meet ``match`` with ``respond``, at most ``times`` times.

    Rules are tried in order and the first one that accepts the request and has uses left
    answers it; ``times=None`` never runs out.
    """

    respond: Response
    match: Match = Match()
    times: int | None = None

    def __post_init__(self) -> None:
        if self.times is not None and self.times < 1:
            raise ValueError(f"Rule.times must be at least 1 (or None), got {self.times}")
