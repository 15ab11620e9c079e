"""Fast builders of the values stream parsers make for nearly every line (see ``slot_builder``).

Each ``build_<name>`` takes every field of its class positionally, in field order, and returns
the value the class would: same type, equal, hashable and picklable alike. Only parsers use
them, on their hot paths; everything else calls the classes.

``build_token_usage`` skips ``TokenUsage``'s invariant check: a parser calls it only with
counts it has made valid itself (non-negative ints, cache reads plus writes within input,
1-hour writes within writes, reasoning within output); anything else goes through
``TokenUsage(...)``, which checks.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from agentshim.core._slots import slot_builder
from agentshim.core.events import (
    AssistantText,
    Lifecycle,
    ToolCall,
    ToolKind,
    ToolResult,
    UsageReport,
    UsageScope,
)
from agentshim.core.usage import CostSource, ProviderUsage, TokenUsage

__all__ = [
    "build_assistant_text",
    "build_lifecycle",
    "build_provider_usage",
    "build_token_usage",
    "build_tool_call",
    "build_tool_result",
    "build_usage_report",
]

build_assistant_text: Callable[[str, bool], AssistantText] = slot_builder(AssistantText)
"""``AssistantText(text, delta)``."""

build_lifecycle: Callable[[str, str], Lifecycle] = slot_builder(Lifecycle)
"""``Lifecycle(kind, detail)``."""

build_tool_call: Callable[[str | None, str, Mapping[str, Any] | str | None, ToolKind], ToolCall] = (
    slot_builder(ToolCall)
)
"""``ToolCall(tool_id, tool, args, kind)``."""

build_tool_result: Callable[
    [str | None, str, str, str, int | None, float | None, ToolKind], ToolResult
] = slot_builder(ToolResult)
"""``ToolResult(tool_id, tool, stdout, stderr, exit_code, duration_s, kind)``."""

build_usage_report: Callable[[ProviderUsage, float | None, UsageScope, int | None], UsageReport] = (
    slot_builder(UsageReport)
)
"""``UsageReport(usage, cost_usd, scope, duration_ms)``."""

build_provider_usage: Callable[
    [TokenUsage, float | None, str, Mapping[str, Any], bool, CostSource, str | None],
    ProviderUsage,
] = slot_builder(ProviderUsage)
"""``ProviderUsage(tokens, total_cost_usd, provider, raw, increment_known, cost_source, model)``."""

build_token_usage: Callable[[int, int, int, int, int, int, int], TokenUsage] = slot_builder(
    TokenUsage
)
"""``TokenUsage(input, cache read, cache write, 1h cache write, output, reasoning, turns)``,
for counts the caller has already made valid: the invariant check does not run."""
