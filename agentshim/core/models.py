"""Model facts as values: context windows and limits, looked up by a normalized model id.

Core holds no vendor facts; each provider supplies its own ``ModelTable``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

__all__ = ["ModelSpec", "ModelTable", "normalize_model_id"]

_DATE_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")
_BRACKET_SUFFIX = re.compile(r"\[[^\]]*\]$")


def normalize_model_id(model_id: str) -> str:
    """Return the id a table is keyed by: lower case, no provider prefix, no date or [tag] suffix.

    ``anthropic/claude-sonnet-4-5-20250929`` and ``claude-sonnet-4-5[1m]`` both become
    ``claude-sonnet-4-5``; ``models/gemini-2.5-pro`` becomes ``gemini-2.5-pro``.
    """
    text = model_id.strip().lower()
    if "/" in text:
        text = text.rsplit("/", 1)[1]
    text = _BRACKET_SUFFIX.sub("", text)
    text = _DATE_SUFFIX.sub("", text)
    if text.endswith("-latest"):
        text = text[: -len("-latest")]
    return text


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One model: its id, the names it also goes by, and its token limits where known."""

    id: str
    context_window: int | None = None
    max_output_tokens: int | None = None
    aliases: tuple[str, ...] = ()
    display_name: str | None = None


def _empty_index() -> Mapping[str, ModelSpec]:
    return MappingProxyType({})


@dataclass(frozen=True)
class ModelTable:
    """An immutable, versioned set of model facts with normalized lookup."""

    models: tuple[ModelSpec, ...] = ()
    version: str = ""
    date: str = ""
    _index: Mapping[str, ModelSpec] = field(default_factory=_empty_index, repr=False, compare=False)

    def __post_init__(self) -> None:
        index: dict[str, ModelSpec] = {}
        for spec in self.models:
            for name in (spec.id, *spec.aliases):
                index.setdefault(normalize_model_id(name), spec)
        object.__setattr__(self, "_index", MappingProxyType(index))

    def get(self, model_id: str | None) -> ModelSpec | None:
        """Return the spec for ``model_id`` (any spelling that normalizes to a known id) or None."""
        if not model_id:
            return None
        return self._index.get(normalize_model_id(model_id))

    def context_window(self, model_id: str | None) -> int | None:
        """Return the model's context window in tokens, or None when unknown."""
        spec = self.get(model_id)
        return spec.context_window if spec else None

    def merged(self, overrides: Iterable[ModelSpec]) -> ModelTable:
        """Return a table where ``overrides`` replace specs with the same id."""
        replaced = {normalize_model_id(s.id): s for s in overrides}
        kept = [s for s in self.models if normalize_model_id(s.id) not in replaced]
        return ModelTable((*replaced.values(), *kept), self.version, self.date)
