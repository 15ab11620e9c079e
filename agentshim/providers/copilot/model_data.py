"""Copilot CLI model facts and prices: deliberately empty tables, dated.

Copilot CLI chooses among models GitHub routes for the account (or a bring-your-own-key model
named by ``COPILOT_MODEL``), and bills in premium requests rather than tokens. Its 1.0.102 help
names models only as examples, with no context windows or token prices, so no facts are listed
here: a cost is never guessed. When a build does report token counts (``assistant.usage``),
the parser prices them from this table and reports ``CostSource.UNKNOWN_MODEL`` for a model it
does not list. ``CopilotProvider`` takes no prices of its own; a caller that knows them builds
the parser with ``CopilotStreamParser(pricing=...)``.
"""

from __future__ import annotations

from agentshim.core.models import ModelTable
from agentshim.core.pricing import PricingTable

__all__ = ["MODEL_TABLE", "PRICING_TABLE", "TABLE_DATE", "TABLE_VERSION"]

TABLE_VERSION = "copilot-1.0.102"
TABLE_DATE = "2026-11-29"

MODEL_TABLE = ModelTable(models=(), version=TABLE_VERSION, date=TABLE_DATE)
"""No model facts: the CLI publishes none for the models it routes to."""

PRICING_TABLE = PricingTable(version=TABLE_VERSION, date=TABLE_DATE, prices={})
"""No token prices: Copilot bills premium requests, not tokens."""
