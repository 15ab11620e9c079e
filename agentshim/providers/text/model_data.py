"""No model facts or prices: a text harness reports neither."""

from __future__ import annotations

from agentshim.core.models import ModelTable
from agentshim.core.pricing import PricingTable

__all__ = ["MODEL_TABLE", "PRICING_TABLE", "TABLE_DATE", "TABLE_VERSION"]

TABLE_VERSION = "text-1"
TABLE_DATE = "2026-12-01"

MODEL_TABLE = ModelTable(models=(), version=TABLE_VERSION, date=TABLE_DATE)
"""Empty: the harness's models are its own business."""

PRICING_TABLE = PricingTable(version=TABLE_VERSION, date=TABLE_DATE, prices={})
"""Empty: a cost is the one the harness reports, and a text harness reports none."""
