"""Models opencode is known to run, and prices (none: opencode reports each step's cost).

opencode names a model ``provider/model`` (``google-vertex/gemini-3-pro-preview``); lookups
normalize the provider prefix away. opencode prices every step itself from its own model
catalogue and prints ``part.cost``, so agentshim ships no prices: the reported figure is
used (``CostSource.REPORTED``). For a model opencode has no price for (a custom provider) it
reports 0.
"""

from __future__ import annotations

from agentshim.core.models import ModelSpec, ModelTable
from agentshim.core.pricing import PricingTable

__all__ = ["DEFAULT_MODEL", "MODEL_TABLE", "PRICING_TABLE", "TABLE_DATE", "TABLE_VERSION"]

#: The version of these tables; bump it with every change to a figure.
TABLE_VERSION = "opencode-2026.11.1"
#: The day the figures were last checked (ISO).
TABLE_DATE = "2026-11-29"

DEFAULT_MODEL = "google-vertex/gemini-3-pro-preview"
"""The model listed first, as opencode spells it."""

MODEL_TABLE = ModelTable(
    models=(
        ModelSpec(
            DEFAULT_MODEL,
            context_window=1_048_576,
            max_output_tokens=65_536,
            display_name="Gemini 3 Pro Preview (Vertex AI)",
            source="opencode's model list (first entry); Google's Vertex AI model page",
        ),
    ),
    version=TABLE_VERSION,
    date=TABLE_DATE,
)
"""Model limits for the models listed."""

PRICING_TABLE = PricingTable(version=TABLE_VERSION, date=TABLE_DATE)
"""Deliberately empty: opencode reports its own cost."""
