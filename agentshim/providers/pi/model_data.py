"""Pi model facts and prices: deliberately empty tables, dated.

Pi reports the cost of every model call itself (``usage.cost.total`` on each assistant
message), computed from its own model registry or the ``cost`` a user gives a custom model in
``~/.pi/agent/models.json``. agentshim does not duplicate that registry: the parser reports
Pi's figure with ``CostSource.REPORTED`` and never prices tokens on its own.
"""

from __future__ import annotations

from agentshim.core.models import ModelTable
from agentshim.core.pricing import PricingTable

__all__ = ["MODEL_TABLE", "PRICING_TABLE", "TABLE_DATE", "TABLE_VERSION"]

TABLE_VERSION = "pi-0.73.1"
TABLE_DATE = "2026-11-29"

MODEL_TABLE = ModelTable(models=(), version=TABLE_VERSION, date=TABLE_DATE)
"""No model facts: Pi carries its own registry for every provider it supports."""

PRICING_TABLE = PricingTable(version=TABLE_VERSION, date=TABLE_DATE, prices={})
"""No prices: Pi reports each call's cost itself."""
