"""Answers to ``GET .../models`` and ``GET .../models/<id>`` for each API family."""

from __future__ import annotations

from collections.abc import Sequence

from ._json import JsonObject, JsonValue
from .kinds import Api

__all__ = ["model_info", "model_list"]

_GENERATION_METHODS: list[JsonValue] = ["generateContent", "streamGenerateContent", "countTokens"]


def _entry(model: str, api: Api | None) -> JsonObject:
    if api is Api.GEMINI:
        return {
            "name": f"models/{model}",
            "displayName": model,
            "inputTokenLimit": 1_048_576,
            "outputTokenLimit": 65_536,
            "supportedGenerationMethods": _GENERATION_METHODS,
        }
    # One entry shape that both OpenAI and Anthropic clients accept.
    return {
        "id": model,
        "object": "model",
        "type": "model",
        "display_name": model,
        "created": 0,
        "created_at": "2025-01-01T00:00:00Z",
        "owned_by": "agentshim",
    }


def model_list(models: Sequence[str], api: Api | None) -> JsonObject:
    """The list of ``models`` in the API's list shape."""
    entries: list[JsonValue] = [_entry(model, api) for model in models]
    if api is Api.GEMINI:
        return {"models": entries}
    return {
        "object": "list",
        "data": entries,
        "has_more": False,
        "first_id": models[0] if models else None,
        "last_id": models[-1] if models else None,
    }


def model_info(model: str, api: Api | None, window: int | None = None) -> JsonObject:
    """One model's entry (any id is answered: the server serves whatever is asked).

    With ``window`` the entry carries it as ``max_input_tokens`` (Anthropic's field).
    """
    entry = _entry(model.removeprefix("models/"), api)
    if window is not None and api is not Api.GEMINI:
        entry["max_input_tokens"] = window
    return entry
