"""Public price lookup: what a model costs, from the providers' own dated tables."""

from __future__ import annotations

from agentshim.core.pricing import ModelPricing, PricingTable, cost_usd
from agentshim.core.usage import TokenUsage
from agentshim.providers import DEFAULT_CATALOG, ProviderCatalog

__all__ = ["cost_usd", "estimate_cost", "model_pricing", "pricing_table"]


def pricing_table(provider: str, *, catalog: ProviderCatalog = DEFAULT_CATALOG) -> PricingTable:
    """Return ``provider``'s price table (with its version and date)."""
    return catalog.plugin(provider).pricing_table()


def model_pricing(
    provider: str, model: str, *, catalog: ProviderCatalog = DEFAULT_CATALOG
) -> ModelPricing | None:
    """Return ``model``'s prices on ``provider``, or None when unknown."""
    return pricing_table(provider, catalog=catalog).get(model)


def estimate_cost(
    provider: str, model: str, usage: TokenUsage, *, catalog: ProviderCatalog = DEFAULT_CATALOG
) -> float | None:
    """Return what ``usage`` costs on ``model``, or None when its price is unknown (never 0)."""
    return pricing_table(provider, catalog=catalog).cost(model, usage)
