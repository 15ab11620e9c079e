"""Model facts as values: context windows and limits, looked up by a normalized model id.

Core holds no vendor facts; each provider supplies its own ``ModelTable``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import cast

from agentshim.core._checks import sequence
from agentshim.core._readonly import empty_mapping
from agentshim.core.errors import InvalidRequestError

__all__ = ["ModelSpec", "ModelTable", "api_model_id"]

_DATE_SUFFIX = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$")
_BRACKET_SUFFIX = re.compile(r"\[[^\]]*\]$")
# Bedrock: ``anthropic.`` behind an optional region (``us.``, ``eu.``, ``apac.``, ``global.``).
_BEDROCK_PREFIX = re.compile(r"^(?:[a-z]{2,6}\.)?anthropic\.")
_BEDROCK_VERSION = re.compile(r"-v\d+(?::\d+)?$")
_VERTEX_SNAPSHOT = re.compile(r"@[^@]*$")


def api_model_id(model_id: str) -> str:
    """Return the API id inside whatever a CLI or a cloud wrote, so one catalogue covers them.

    Lower case; no provider prefix (``anthropic/``, ``models/``), no ``[tag]`` suffix (Claude
    Code's ``[1m]``), no Bedrock ``anthropic.`` prefix (optionally behind a region) or
    ``-v1:0`` suffix, no Vertex ``@snapshot``, no trailing ``-YYYYMMDD`` date, no ``-latest``:
    ``us.anthropic.claude-sonnet-4-5-20250929-v1:0``, ``claude-3-5-haiku@20241022`` and
    ``claude-opus-5[1m]`` become ``claude-sonnet-4-5``, ``claude-3-5-haiku`` and
    ``claude-opus-5``.

    Raises:
        InvalidRequestError: ``model_id`` is not a string.
    """
    if not isinstance(model_id, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InvalidRequestError(
            "model_id",
            f"{model_id!r} is not a string",
            f"model_id must be a string such as 'claude-sonnet-4-5', not {model_id!r}",
        )
    text = model_id.strip().lower()
    if "/" in text:
        text = text.rsplit("/", 1)[1]
    text = _BRACKET_SUFFIX.sub("", text)
    text = _VERTEX_SNAPSHOT.sub("", text)
    text = _BEDROCK_PREFIX.sub("", text)
    text = _BEDROCK_VERSION.sub("", text)
    text = _DATE_SUFFIX.sub("", text)
    if text.endswith("-latest"):
        text = text[: -len("-latest")]
    return text


def _check_name(field: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InvalidRequestError(
            field,
            f"{value!r} is not a model name",
            f"{field} must be a non-empty model name string, not {value!r}",
        )
    return value


def _check_limit(field: str, value: object) -> None:
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value <= 0):
        raise InvalidRequestError(
            field,
            f"{value!r} is not a positive int",
            f"{field} must be a positive number of tokens (an int) or None when unknown, "
            f"not {value!r}",
        )


@dataclass(frozen=True, slots=True)
class ModelSpec:
    """One model: its id, the names it also goes by, its token limits where known.

    ``source`` says where the figures came from (a vendor's page, what a CLI reports).

    Raises:
        InvalidRequestError: an empty or non-string id or alias, aliases given as one
            string, or a token limit that is not a positive int.
    """

    id: str
    context_window: int | None = None
    max_output_tokens: int | None = None
    aliases: tuple[str, ...] = ()
    display_name: str | None = None
    source: str = ""

    def __post_init__(self) -> None:
        _check_name("ModelSpec.id", self.id)
        _check_limit("ModelSpec.context_window", self.context_window)
        _check_limit("ModelSpec.max_output_tokens", self.max_output_tokens)
        aliases = sequence("ModelSpec", "aliases", self.aliases, "model names")
        names = tuple(_check_name("ModelSpec.aliases", a) for a in aliases)
        if self.display_name is not None and not isinstance(self.display_name, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "ModelSpec.display_name",
                f"{self.display_name!r} is not a string",
                f"ModelSpec.display_name must be a string or None, not {self.display_name!r}",
            )
        if not isinstance(self.source, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "ModelSpec.source",
                f"{self.source!r} is not a string",
                f"ModelSpec.source must say where the figures came from, not {self.source!r}",
            )
        object.__setattr__(self, "aliases", names)


@dataclass(frozen=True)
class ModelTable:
    """An immutable, versioned set of model facts with normalized lookup.

    Raises:
        InvalidRequestError: ``models`` holds something other than ModelSpec values.
    """

    models: tuple[ModelSpec, ...] = ()
    version: str = ""
    date: str = ""
    _index: Mapping[str, ModelSpec] = field(
        default_factory=empty_mapping, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        models = cast("object", self.models)
        if not isinstance(models, Iterable):
            raise InvalidRequestError(
                "ModelTable.models",
                f"{models!r} is not a sequence",
                f"ModelTable.models must be a sequence of ModelSpec values, not {models!r}",
            )
        specs = tuple(cast("Iterable[object]", models))
        for spec in specs:
            if not isinstance(spec, ModelSpec):
                raise InvalidRequestError(
                    "ModelTable.models",
                    f"{spec!r} is not a ModelSpec",
                    f"ModelTable.models must hold ModelSpec values, not {spec!r}",
                )
        object.__setattr__(self, "models", specs)
        index: dict[str, ModelSpec] = {}
        for spec in self.models:
            for name in (spec.id, *spec.aliases):
                index.setdefault(api_model_id(name), spec)
        object.__setattr__(self, "_index", MappingProxyType(index))

    def get(self, model_id: str | None) -> ModelSpec | None:
        """Return the spec for ``model_id`` (any spelling that normalizes to a known id) or None."""
        if not model_id:
            return None
        return self._index.get(api_model_id(model_id))

    def context_window(self, model_id: str | None) -> int | None:
        """Return the model's context window in tokens, or None when unknown."""
        spec = self.get(model_id)
        return spec.context_window if spec else None

    def merged(self, overrides: Iterable[ModelSpec]) -> ModelTable:
        """Return a table where ``overrides`` replace specs with the same id."""
        replaced = {api_model_id(s.id): s for s in overrides}
        kept = [s for s in self.models if api_model_id(s.id) not in replaced]
        return ModelTable((*replaced.values(), *kept), self.version, self.date)
