"""Which API and endpoint a request targets, from its method, path and query alone."""

from __future__ import annotations

import enum
import re
from collections.abc import Mapping
from dataclasses import dataclass

from .kinds import Api

__all__ = ["Endpoint", "Route", "route"]


class Endpoint(enum.Enum):
    """What the server does with a request."""

    GENERATE = "generate"
    COUNT_TOKENS = "count_tokens"
    MODEL_LIST = "model_list"
    MODEL_INFO = "model_info"
    OTHER = "other"


@dataclass(frozen=True, slots=True)
class Route:
    """The API and endpoint of a request, whether the answer streams, and the URL's model."""

    endpoint: Endpoint
    api: Api | None = None
    #: For Gemini the answer format comes from the URL; other APIs say so in the body.
    url_stream: bool | None = None
    #: Gemini ``streamGenerateContent`` without ``alt=sse`` answers with one JSON array.
    json_array: bool = False
    url_model: str = ""


_GEMINI = re.compile(r"/models/([^/:]+):(generateContent|streamGenerateContent|countTokens)$")


def route(method: str, path: str, query: Mapping[str, str]) -> Route:
    """Classify a request; anything unrecognised is ``Endpoint.OTHER``."""
    path = path.rstrip("/") or "/"
    if method == "POST":
        gemini = _GEMINI.search(path)
        if gemini is not None:
            model, action = gemini.group(1), gemini.group(2)
            if action == "countTokens":
                return Route(Endpoint.COUNT_TOKENS, Api.GEMINI, url_model=model)
            if action == "generateContent":
                return Route(Endpoint.GENERATE, Api.GEMINI, url_stream=False, url_model=model)
            return Route(
                Endpoint.GENERATE,
                Api.GEMINI,
                url_stream=True,
                json_array=query.get("alt") != "sse",
                url_model=model,
            )
        if path.endswith("/messages/count_tokens"):
            return Route(Endpoint.COUNT_TOKENS, Api.ANTHROPIC_MESSAGES)
        if path.endswith("/messages"):
            return Route(Endpoint.GENERATE, Api.ANTHROPIC_MESSAGES)
        if path.endswith("/responses"):
            return Route(Endpoint.GENERATE, Api.OPENAI_RESPONSES)
        if path.endswith("/chat/completions"):
            return Route(Endpoint.GENERATE, Api.OPENAI_CHAT)
    if method == "GET":
        if path.endswith("/models"):
            return Route(Endpoint.MODEL_LIST, _models_api(path, query))
        if "/models/" in path:
            model = path.rsplit("/models/", 1)[1]
            return Route(Endpoint.MODEL_INFO, _models_api(path, query), url_model=model)
    return Route(Endpoint.OTHER)


def _models_api(path: str, query: Mapping[str, str]) -> Api | None:
    # Gemini's model list lives under /v1beta and takes the key as a query parameter.
    if "/v1beta" in path or "key" in query:
        return Api.GEMINI
    return None
