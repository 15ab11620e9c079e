"""Public model lookup: context windows and limits from the providers' own tables."""

from __future__ import annotations

from agentshim.core.models import ModelSpec, ModelTable, api_model_id
from agentshim.providers import DEFAULT_CATALOG, ProviderCatalog

__all__ = ["api_model_id", "context_window", "model_spec", "model_table"]


def model_table(provider: str, *, catalog: ProviderCatalog = DEFAULT_CATALOG) -> ModelTable:
    """Return the models ``provider`` knows (an empty table if it knows none)."""
    return catalog.plugin(provider).model_table()


def model_spec(
    provider: str, model: str, *, catalog: ProviderCatalog = DEFAULT_CATALOG
) -> ModelSpec | None:
    """Return the facts about ``model`` on ``provider``, or None when unknown."""
    return model_table(provider, catalog=catalog).get(model)


def context_window(
    provider: str, model: str, *, catalog: ProviderCatalog = DEFAULT_CATALOG
) -> int | None:
    """Return ``model``'s context window in tokens on ``provider``, or None when unknown."""
    spec = model_spec(provider, model, catalog=catalog)
    return spec.context_window if spec is not None else None
