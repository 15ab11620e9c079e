"""dialect_of: the ACP dialect of a provider package, wired from the names its ``acp.py`` defines.

Also ``prompt_usage``, the reading of the protocol's ``usage`` object that agents reporting
it share.

Every ACP provider's ``acp.py`` defines ``acp_argv``, ``classify_rpc_error``, ``session_lost``
and ``usage``, and its package's ``provider.py`` defines ``PROFILE`` (the conventions test pins
all five). The dialect takes those five from the package, the way ``builtin_plugin`` takes a
plugin's facts from it, so an ``acp.py`` spells out only where its agent differs.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from agentshim.acp.dialect import AcpDialect
from agentshim.core.jsonvalues import as_count, as_mapping
from agentshim.core.usage import ProviderUsage, TokenUsage

__all__ = ["Count", "dialect_of", "prompt_usage"]

Count = Callable[[str], int]
"""A field of a usage object as a count: 0 when it is missing, negative or not a whole number."""

# Each AcpDialect field an acp.py fills with a function of its own, and that function's name.
_PINNED_FUNCTIONS = (
    ("argv", "acp_argv"),
    ("classify", "classify_rpc_error"),
    ("session_lost", "session_lost"),
    ("usage", "usage"),
)


def dialect_of(module: str, **behaviour: Any) -> AcpDialect:
    """Return the dialect of the ``acp`` module named ``module`` (its ``__name__``).

    Call it from that module after its four functions are defined. ``behaviour`` sets the
    AcpDialect fields that have defaults (``notice``, ``stdio_mcp``, ``attach``...); an
    unknown one raises TypeError when the module is imported.
    """
    acp = sys.modules[module]
    provider = importlib.import_module(f"{module.rpartition('.')[0]}.provider")
    functions = {field: getattr(acp, name) for field, name in _PINNED_FUNCTIONS}
    return AcpDialect(profile=provider.PROFILE, **functions, **behaviour)


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
