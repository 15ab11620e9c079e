"""prompt_usage: the protocol's ``usage`` object of a ``session/prompt`` result, as usage.

ACP agents that report usage there (opencode, Copilot CLI) share its fields and its shape;
what differs is what their counts mean, which each dialect says in a ``tokens`` function.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from agentshim.core.jsonvalues import as_count, as_mapping
from agentshim.core.usage import ProviderUsage, TokenUsage

__all__ = ["Count", "prompt_usage"]

Count = Callable[[str], int]
"""A field of a usage object as a count: 0 when it is missing, negative or not a whole number."""


def prompt_usage(
    result: Mapping[str, Any], provider: str, tokens: Callable[[Count], TokenUsage]
) -> ProviderUsage | None:
    """The ``usage`` object of a ``session/prompt`` result as ``provider``'s usage (None if absent).

    ``tokens`` says what the agent's counts (``inputTokens``, ``cachedReadTokens``...) mean,
    which differs between agents; the object itself is kept as the usage's ``raw``.
    """
    raw = as_mapping(result.get("usage"))
    if raw is None:
        return None

    def count(key: str) -> int:
        return as_count(raw.get(key))

    return ProviderUsage(tokens=tokens(count), provider=provider, raw=MappingProxyType(dict(raw)))
