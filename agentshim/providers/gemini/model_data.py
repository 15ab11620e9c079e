"""Gemini models the CLI runs, as published on Google's Gemini API model pages.

Only limits found on the public model pages are recorded: the Gemini 2.5 family takes
1,048,576 input tokens and writes at most 65,536. No prices ship. The Pro models charge a
higher rate once a prompt passes 200,000 tokens, which a flat :class:`PricingTable` cannot
express, and the cache-read prices have changed more than once; a wrong figure is worse than
none. A Gemini turn's cost is therefore None with ``CostSource.UNKNOWN_MODEL`` unless the
caller passes its own table (``GeminiProvider(pricing=...)``).
"""

from __future__ import annotations

from agentshim.core.models import ModelSpec, ModelTable
from agentshim.core.pricing import PricingTable

__all__ = ["MODEL_TABLE", "PRICING_TABLE", "TABLE_DATE", "TABLE_VERSION"]

#: The version of these tables; bump it with every change to a figure.
TABLE_VERSION = "gemini-2026.11.1"
#: The day the figures were last checked (ISO).
TABLE_DATE = "2026-11-29"

_PAGES = "Google's Gemini API model pages (ai.google.dev): 1,048,576 input, 65,536 output"
_ROUTED = "named by Gemini CLI's model router (model auto); no published window checked"
_CONTEXT = 1_048_576
_OUTPUT = 65_536

MODEL_TABLE = ModelTable(
    models=(
        ModelSpec(
            "gemini-2.5-pro",
            context_window=_CONTEXT,
            max_output_tokens=_OUTPUT,
            display_name="Gemini 2.5 Pro",
            source=_PAGES,
        ),
        ModelSpec(
            "gemini-2.5-flash",
            context_window=_CONTEXT,
            max_output_tokens=_OUTPUT,
            display_name="Gemini 2.5 Flash",
            source=_PAGES,
        ),
        ModelSpec(
            "gemini-2.5-flash-lite",
            context_window=_CONTEXT,
            max_output_tokens=_OUTPUT,
            display_name="Gemini 2.5 Flash-Lite",
            source=_PAGES,
        ),
        ModelSpec("gemini-3.1-pro-preview", source=_ROUTED),
        ModelSpec("gemini-3.8-flash", source=_ROUTED),
        ModelSpec("gemini-3.5-flash-lite", source=_ROUTED),
    ),
    version=TABLE_VERSION,
    date=TABLE_DATE,
)
"""Gemini model limits (context window and output cap)."""

PRICING_TABLE = PricingTable(version=TABLE_VERSION, date=TABLE_DATE)
"""Deliberately empty: see the module docstring."""
