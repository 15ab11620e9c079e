"""Prices as values: what a model charges per million tokens of each class, and ``cost_usd``.

Core holds no vendor prices; each provider supplies a dated, versioned ``PricingTable``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from agentshim.core._readonly import empty_mapping
from agentshim.core.errors import InvalidRequestError
from agentshim.core.models import api_model_id
from agentshim.core.usage import TokenUsage

__all__ = ["ModelPricing", "PricingTable", "cost_usd"]

_PER = 1_000_000


@dataclass(frozen=True, slots=True)
class ModelPricing:
    """USD per million tokens by token class; a missing cache price falls back to input.

    Raises:
        InvalidRequestError: a price that is not a finite number >= 0 (or a missing input or
            output price).
    """

    input_per_mtok: float
    output_per_mtok: float
    cache_read_per_mtok: float | None = None
    cache_write_per_mtok: float | None = None
    cache_write_1h_per_mtok: float | None = None

    def __post_init__(self) -> None:
        for name, optional in (
            ("input_per_mtok", False),
            ("output_per_mtok", False),
            ("cache_read_per_mtok", True),
            ("cache_write_per_mtok", True),
            ("cache_write_1h_per_mtok", True),
        ):
            value: object = getattr(self, name)
            if value is None and optional:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise InvalidRequestError(
                    f"ModelPricing.{name}",
                    f"{value!r} is not a finite price >= 0",
                    f"ModelPricing.{name} must be a finite USD price that is not negative, "
                    f"got {value!r}" + ("; pass None to fall back" if optional else ""),
                )


def cost_usd(usage: TokenUsage, pricing: ModelPricing) -> float:
    """Return what ``usage`` costs at ``pricing``, using the normalized token breakdown."""
    cache_read = pricing.cache_read_per_mtok
    cache_write = pricing.cache_write_per_mtok
    cache_write_1h = pricing.cache_write_1h_per_mtok
    read_price = pricing.input_per_mtok if cache_read is None else cache_read
    write_price = pricing.input_per_mtok if cache_write is None else cache_write
    write_1h_price = write_price if cache_write_1h is None else cache_write_1h
    write_5m = usage.cache_write_input_tokens - usage.cache_write_1h_input_tokens
    total = (
        usage.uncached_input_tokens * pricing.input_per_mtok
        + usage.cache_read_input_tokens * read_price
        + write_5m * write_price
        + usage.cache_write_1h_input_tokens * write_1h_price
        + usage.output_tokens * pricing.output_per_mtok
    )
    return total / _PER


@dataclass(frozen=True)
class PricingTable:
    """Prices for a set of models, as of ``date`` (ISO) in table ``version``.

    Raises:
        InvalidRequestError: ``prices`` is not a mapping of model ids to ModelPricing.
    """

    version: str
    date: str
    prices: Mapping[str, ModelPricing] = field(default_factory=empty_mapping)

    def __post_init__(self) -> None:
        if not isinstance(self.prices, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "PricingTable.prices",
                "not a mapping",
                f"PricingTable.prices must be a mapping of model ids to ModelPricing, "
                f"not {self.prices!r}",
            )
        for model_id, pricing in self.prices.items():
            if not isinstance(model_id, str) or not isinstance(pricing, ModelPricing):  # pyright: ignore[reportUnnecessaryIsInstance]
                raise InvalidRequestError(
                    "PricingTable.prices",
                    f"entry {model_id!r}: {pricing!r} is not a model id and its ModelPricing",
                    f"PricingTable.prices must map model id strings to ModelPricing values, "
                    f"not {model_id!r} to {pricing!r}",
                )
        normalized = {api_model_id(k): v for k, v in self.prices.items()}
        object.__setattr__(self, "prices", MappingProxyType(normalized))

    def get(self, model_id: str | None) -> ModelPricing | None:
        """Return the pricing for ``model_id`` (normalized), or None when unknown."""
        if not model_id:
            return None
        return self.prices.get(api_model_id(model_id))

    def cost(self, model_id: str | None, usage: TokenUsage) -> float | None:
        """Return the cost of ``usage`` on ``model_id``, or None when its price is unknown."""
        pricing = self.get(model_id)
        return cost_usd(usage, pricing) if pricing is not None else None
