"""The protocol's ``usage`` object of a ``session/prompt`` result, read as the library's usage.

Agents that report usage there share its fields (``inputTokens``, ``outputTokens``,
``cachedReadTokens``, ``cachedWriteTokens``, ``thoughtTokens``, ``totalTokens``); what their
counts mean differs, which a ``tokens`` function says. :func:`protocol_tokens` is the reading
for an agent nothing is known about.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from agentshim.core.jsonvalues import as_count, as_mapping
from agentshim.core.usage import ProviderUsage, TokenUsage

__all__ = ["Count", "prompt_usage", "protocol_tokens", "protocol_usage"]

Count = Callable[[str], int]
"""A field of a usage object as a count: 0 when it is missing, negative or not a whole number."""


def prompt_usage(
    result: Mapping[str, Any], provider: str, tokens: Callable[[Count], TokenUsage]
) -> ProviderUsage | None:
    """The ``usage`` object of a ``session/prompt`` result as ``provider``'s usage (None if absent).

    ``tokens`` says what the agent's counts mean, which differs between agents; the object
    itself is kept as the usage's ``raw``.
    """
    raw = as_mapping(result.get("usage"))
    if raw is None:
        return None

    def count(key: str) -> int:
        return as_count(raw.get(key))

    return ProviderUsage(tokens=tokens(count), provider=provider, raw=MappingProxyType(dict(raw)))


def protocol_tokens(count: Count) -> TokenUsage:
    """The counts of a usage object whose agent says nothing more about them.

    The protocol does not say whether ``inputTokens`` includes the cache counts or
    ``outputTokens`` the thought count; ``totalTokens`` tells: when it is the sum of every
    count, they were apart and are folded in, else they are read as parts of input and output.
    """
    inputs, output = count("inputTokens"), count("outputTokens")
    read, write, thought = (
        count("cachedReadTokens"),
        count("cachedWriteTokens"),
        count("thoughtTokens"),
    )
    if (read or write or thought) and count(
        "totalTokens"
    ) == inputs + output + read + write + thought:
        return TokenUsage.cache_apart(
            inputs, read, write, output + thought, reasoning=thought, turns=1
        )
    read = min(read, inputs)
    return TokenUsage(
        input_tokens=inputs,
        cache_read_input_tokens=read,
        cache_write_input_tokens=min(write, inputs - read),
        output_tokens=output,
        reasoning_output_tokens=min(thought, output),
        turns=1,
    )


def protocol_usage(result: Mapping[str, Any]) -> ProviderUsage | None:
    """The prompt result's ``usage`` read with :func:`protocol_tokens` (provider left empty)."""
    return prompt_usage(result, "", protocol_tokens)
