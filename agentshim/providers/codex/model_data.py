"""Models Codex runs and what they cost, as published by OpenAI (standard tier, USD per 1M).

Only figures found in OpenAI's public model pages, or stated consistently by several public
price listings that agree with them, are here; anything unsure is left out (a missing price
makes a turn's cost None with ``CostSource.UNKNOWN_MODEL``, never 0). Codex reports no cache
writes on its own price card, so none is set: cache writes are priced as input.

Sources, read for this table version:

- developers.openai.com model pages: ``gpt-5-codex`` (400,000 context, 128,000 output,
  $1.25 / cached $0.125 / $10) and ``codex-mini-latest`` (200,000 context, 100,000 output,
  $1.50 / cached $0.375 / $6).
- ``gpt-5``, ``gpt-5.1`` and ``gpt-5.1-codex``: 400,000 context, 128,000 output, $1.25 /
  cached $0.125 / $10, as for ``gpt-5-codex``.
- ``gpt-5.6-sol`` (Codex's default model): 1,050,000 context, 128,000 output. Its page
  shows a promotional price "at least until 2026-11-21" with a surcharge above 272K input
  tokens, so no price is recorded.
- ``gpt-5.4`` ($2.50 / cached $0.25 / $15) and ``gpt-5.5`` ($5 / cached $0.50 / $30): the
  listings disagree on their context windows, so none is recorded. The ``gpt-5.5`` price
  reproduces the reference figure: 100 in, 40 of them cached, 10 out cost $0.00062.
"""

from __future__ import annotations

from agentshim.core.models import ModelSpec, ModelTable
from agentshim.core.pricing import ModelPricing, PricingTable

__all__ = ["MODEL_TABLE", "PRICING_TABLE", "TABLE_DATE", "TABLE_VERSION"]

#: The version of these tables; bump it with every change to a figure.
TABLE_VERSION = "codex-2026.12.1"
#: The day the figures were last checked (ISO).
TABLE_DATE = "2026-12-01"

_PAGES = "developers.openai.com model pages"
_UNSURE = "named by Codex; public listings disagree on the window, so none is recorded"

MODEL_TABLE = ModelTable(
    version=TABLE_VERSION,
    date=TABLE_DATE,
    models=(
        ModelSpec(
            "gpt-5.6-sol",
            context_window=1_050_000,
            max_output_tokens=128_000,
            display_name="GPT-5.6 Sol",
            source=f"{_PAGES} (gpt-5.6-sol): 1,050,000 context, 128,000 output; Codex's default",
        ),
        ModelSpec("gpt-5.5", display_name="GPT-5.5", source=_UNSURE),
        ModelSpec("gpt-5.4", display_name="GPT-5.4", source=_UNSURE),
        ModelSpec(
            "gpt-5.1-codex",
            context_window=400_000,
            max_output_tokens=128_000,
            display_name="GPT-5.1-Codex",
            source=_PAGES,
        ),
        ModelSpec(
            "gpt-5.1",
            context_window=400_000,
            max_output_tokens=128_000,
            display_name="GPT-5.1",
            source=_PAGES,
        ),
        ModelSpec(
            "gpt-5-codex",
            context_window=400_000,
            max_output_tokens=128_000,
            display_name="GPT-5-Codex",
            source=_PAGES,
        ),
        ModelSpec(
            "gpt-5",
            context_window=400_000,
            max_output_tokens=128_000,
            display_name="GPT-5",
            source=_PAGES,
        ),
        ModelSpec(
            "codex-mini-latest",
            context_window=200_000,
            max_output_tokens=100_000,
            display_name="codex-mini-latest",
            source=_PAGES,
        ),
    ),
)
"""Models Codex is known to run, with their token limits where OpenAI publishes them."""

PRICING_TABLE = PricingTable(
    version=TABLE_VERSION,
    date=TABLE_DATE,
    prices={
        "gpt-5.5": ModelPricing(input_per_mtok=5.0, output_per_mtok=30.0, cache_read_per_mtok=0.5),
        "gpt-5.4": ModelPricing(input_per_mtok=2.5, output_per_mtok=15.0, cache_read_per_mtok=0.25),
        "gpt-5.1-codex": ModelPricing(
            input_per_mtok=1.25, output_per_mtok=10.0, cache_read_per_mtok=0.125
        ),
        "gpt-5.1": ModelPricing(
            input_per_mtok=1.25, output_per_mtok=10.0, cache_read_per_mtok=0.125
        ),
        "gpt-5-codex": ModelPricing(
            input_per_mtok=1.25, output_per_mtok=10.0, cache_read_per_mtok=0.125
        ),
        "gpt-5": ModelPricing(input_per_mtok=1.25, output_per_mtok=10.0, cache_read_per_mtok=0.125),
        "codex-mini-latest": ModelPricing(
            input_per_mtok=1.5, output_per_mtok=6.0, cache_read_per_mtok=0.375
        ),
    },
)
"""Standard-tier list prices per million tokens (cache reads at the cached-input rate)."""
