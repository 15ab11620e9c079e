"""Claude model facts and prices, as of the table's date.

Sources: the context window and output limit of ``claude-opus-4-8`` are what Claude Code 2.1.197
itself reports in ``modelUsage`` (200000, or 1000000 for the ``[1m]`` variant; 64000 output),
and its input/output prices are the ones that reproduce the ``total_cost_usd`` that build
reported for recorded turns (100 input + 20 output tokens cost 0.001 USD). The other models'
figures are Anthropic's published list prices and limits: ``claude-opus-5-5`` (the model
Claude Code 2.1.332 asks for by default) takes 1M tokens, writes 128K and costs $4 / $20;
``claude-opus-5`` takes 1M, writes 128K and costs $5 / $25. Each entry's ``source`` says
where its figures came from. Cache prices follow Anthropic's
published multipliers of the input price: reads 0.1x, 5-minute writes 1.25x, 1-hour writes 2x.

These tables only matter when a result frame carries no ``total_cost_usd``: Claude Code
normally reports the cost itself. Long-context surcharges (prompts above 200K tokens on the
``[1m]`` variants of some models) are not modelled.
"""

from __future__ import annotations

from agentshim.core.models import ModelSpec, ModelTable
from agentshim.core.pricing import ModelPricing, PricingTable

__all__ = ["DEFAULT_MODEL", "MODEL_TABLE", "PRICING_TABLE", "TABLE_DATE", "TABLE_VERSION"]

TABLE_VERSION = "claude-2026.12"
TABLE_DATE = "2026-12-01"

DEFAULT_MODEL = "claude-opus-4-8"
"""The model Claude Code 2.1.197 asks for when no ``--model`` is given."""


def _priced(input_per_mtok: float, output_per_mtok: float) -> ModelPricing:
    return ModelPricing(
        input_per_mtok=input_per_mtok,
        output_per_mtok=output_per_mtok,
        cache_read_per_mtok=round(input_per_mtok * 0.1, 6),
        cache_write_per_mtok=round(input_per_mtok * 1.25, 6),
        cache_write_1h_per_mtok=round(input_per_mtok * 2, 6),
    )


_PUBLISHED = "Anthropic's published model overview (platform.claude.com/docs, models)"
_REPORTED = (
    "Claude Code 2.1.197's own modelUsage report (contextWindow 200000, maxOutputTokens 64000)"
)

MODEL_TABLE = ModelTable(
    version=TABLE_VERSION,
    date=TABLE_DATE,
    models=(
        ModelSpec(
            "claude-opus-5-5",
            1_000_000,
            128_000,
            display_name="Claude Opus 5.5",
            source=f"{_PUBLISHED}: 1M context, 128K output; Claude Code 2.1.332's default model",
        ),
        ModelSpec(
            "claude-opus-5",
            1_000_000,
            128_000,
            display_name="Claude Opus 5",
            source=f"{_PUBLISHED}: 1M context, 128K output",
        ),
        ModelSpec(
            DEFAULT_MODEL,
            200_000,
            64_000,
            display_name="Claude Opus 4.8",
            source=f"{_REPORTED}; Claude Code 2.1.197's default model",
        ),
        ModelSpec(
            "claude-opus-4-5", 200_000, 64_000, display_name="Claude Opus 4.5", source=_PUBLISHED
        ),
        ModelSpec(
            "claude-opus-4-1", 200_000, 32_000, display_name="Claude Opus 4.1", source=_PUBLISHED
        ),
        ModelSpec(
            "claude-opus-4", 200_000, 32_000, display_name="Claude Opus 4", source=_PUBLISHED
        ),
        ModelSpec(
            "claude-sonnet-4-5",
            200_000,
            64_000,
            display_name="Claude Sonnet 4.5",
            source=_PUBLISHED,
        ),
        ModelSpec(
            "claude-sonnet-4", 200_000, 64_000, display_name="Claude Sonnet 4", source=_PUBLISHED
        ),
        ModelSpec(
            "claude-haiku-4-5", 200_000, 64_000, display_name="Claude Haiku 4.5", source=_PUBLISHED
        ),
    ),
)
"""Models Claude Code can run, with their standard (not ``[1m]``) context windows."""

PRICING_TABLE = PricingTable(
    version=TABLE_VERSION,
    date=TABLE_DATE,
    prices={
        "claude-opus-5-5": _priced(4.0, 20.0),
        "claude-opus-5": _priced(5.0, 25.0),
        DEFAULT_MODEL: _priced(5.0, 25.0),
        "claude-opus-4-5": _priced(5.0, 25.0),
        "claude-opus-4-1": _priced(15.0, 75.0),
        "claude-opus-4": _priced(15.0, 75.0),
        "claude-sonnet-4-5": _priced(3.0, 15.0),
        "claude-sonnet-4": _priced(3.0, 15.0),
        "claude-haiku-4-5": _priced(1.0, 5.0),
    },
)
"""USD per million tokens, used only when Claude Code reports no cost of its own."""
