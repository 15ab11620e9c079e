"""Public model lookup: context windows from the catalogue and from the Models API.

Two sources of very different quality: the catalogue (every built-in provider's model table:
free, synchronous, and wrong on the day a model ships) and the Models API
(``GET /v1/models/{id}`` answers ``max_input_tokens``, the model's own figure). Neither
guesses: a model in neither source has no window (None), so a caller shows a token count
without a percentage rather than a wrong one.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from typing import Any, Literal

from agentshim.core._checks import seconds
from agentshim.core.clock import Clock, SystemClock
from agentshim.core.errors import InvalidRequestError
from agentshim.core.models import ModelSpec, ModelTable, api_model_id
from agentshim.providers import DEFAULT_CATALOG, ProviderCatalog
from agentshim.providers.claude.model_data import MODEL_TABLE as _CLAUDE
from agentshim.providers.codex.model_data import MODEL_TABLE as _CODEX
from agentshim.providers.copilot.model_data import MODEL_TABLE as _COPILOT
from agentshim.providers.gemini.model_data import MODEL_TABLE as _GEMINI
from agentshim.providers.opencode.model_data import MODEL_TABLE as _OPENCODE
from agentshim.providers.pi.model_data import MODEL_TABLE as _PI

__all__ = [
    "CATALOGUE",
    "LONG_CONTEXT_WINDOW",
    "MISS_RETRY_S",
    "ContextWindows",
    "ModelCredential",
    "api_model_id",
    "context_window",
    "context_window_of",
    "model_spec",
    "model_table",
]

LONG_CONTEXT_WINDOW = 1_000_000
"""The window of a model Claude Code names with the ``[1m]`` suffix."""

MISS_RETRY_S = 600.0
"""How long :class:`ContextWindows` keeps a failed lookup before asking the API again."""

CATALOGUE = ModelTable(
    models=tuple(
        spec
        for table in (_CLAUDE, _CODEX, _GEMINI, _OPENCODE, _COPILOT, _PI)
        for spec in table.models
    ),
    version="catalogue",
)
"""Every built-in provider's models in one table (each entry's ``source`` says where its
figures came from); a model two providers list is found under the first."""

_LONG_SUFFIX = "[1m]"
_API_VERSION = "2023-06-01"
_OAUTH_BETA = "oauth-2025-04-20"


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
    return model_table(provider, catalog=catalog).context_window(model)


def _long_context(model: str) -> bool:
    return model.strip().lower().endswith(_LONG_SUFFIX)


def context_window_of(model: str | None) -> int | None:
    """The window of ``model`` from the catalogue alone: no credential, no network.

    1_000_000 for any model carrying Claude Code's ``[1m]`` suffix; otherwise the catalogued
    window of its :func:`api_model_id`; None for a model the catalogue does not know (or
    knows without a window), and for None or a non-string. Never a guess.
    """
    if not isinstance(model, str) or not model.strip():
        return None
    if _long_context(model):
        return LONG_CONTEXT_WINDOW
    return CATALOGUE.context_window(model)


@dataclass(frozen=True, slots=True)
class ModelCredential:
    """How a session authenticates against Anthropic's API.

    ``kind`` is ``"api-key"`` (an ``ANTHROPIC_API_KEY``, sent as ``x-api-key``) or
    ``"oauth"`` (a subscription token such as ``CLAUDE_CODE_OAUTH_TOKEN``, sent as
    ``Authorization: Bearer`` with the ``oauth-2025-04-20`` beta header). The two are kept
    apart because a token on the wrong header fails as a 401 that looks like a revoked key.
    The value never appears in ``repr``.

    Raises:
        InvalidRequestError: ``kind`` is neither, or ``value`` is not a non-empty string.
    """

    kind: Literal["api-key", "oauth"]
    value: str = field(repr=False)

    def __post_init__(self) -> None:
        if self.kind not in ("api-key", "oauth"):
            raise InvalidRequestError(
                "ModelCredential.kind",
                f"{self.kind!r} is not a credential kind",
                f"ModelCredential.kind must be 'api-key' or 'oauth', not {self.kind!r}",
            )
        if not isinstance(self.value, str) or not self.value.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "ModelCredential.value",
                "is empty or not a string",
                "ModelCredential.value must be the key or token itself (a non-empty string)",
            )

    def headers(self) -> dict[str, str]:
        """The HTTP headers that carry this credential."""
        if self.kind == "api-key":
            return {"x-api-key": self.value}
        return {"authorization": f"Bearer {self.value}", "anthropic-beta": _OAUTH_BETA}


class ContextWindows:
    """Context windows from the Models API, memoised, with the catalogue as the fallback.

    ``base_url`` is the API's root (``https://api.anthropic.com``, or a local server in
    tests); ``timeout`` bounds each lookup as a whole (connecting, the name lookup, every
    read: a server that answers a byte at a time cannot stretch it); ``clock``
    (``monotonic()``) times the memo. The
    memo belongs to this object: a window the API gave is kept for the object's life, a
    lookup that failed is asked again after :data:`MISS_RETRY_S` seconds. Safe to share
    between threads. Only the standard library talks HTTP.

    Raises:
        InvalidRequestError: ``base_url`` is not an http(s) URL, or ``timeout`` is not a
            positive number of seconds.
    """

    def __init__(
        self,
        *,
        base_url: str = "https://api.anthropic.com",
        timeout: float = 4.0,
        clock: Clock | None = None,
    ) -> None:
        if not isinstance(base_url, str) or not base_url.startswith(("http://", "https://")):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "ContextWindows.base_url",
                f"{base_url!r:.80} is not an http(s) URL",
                f"ContextWindows.base_url must be an http:// or https:// URL, not {base_url!r:.80}",
            )
        self.base_url = base_url.rstrip("/")
        self.timeout = seconds("ContextWindows", "timeout", timeout, positive=True)
        self._clock: Clock = clock if clock is not None else SystemClock()
        self._lock = threading.Lock()
        self._hits: dict[str, int] = {}
        self._misses: dict[str, float] = {}

    def live(self, model: str, credential: ModelCredential) -> int | None:
        """Ask the Models API for ``model``'s ``max_input_tokens``; never raises.

        No network, a revoked key (401), insufficient scope (403), an unknown model (404),
        a rate limit (429), a server error, an answer that is not a positive count, a
        timeout: each is None. A hit is kept for the life of this object; a miss is not asked
        again for :data:`MISS_RETRY_S` seconds.
        """
        if not isinstance(model, str) or not model.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            return None
        if not isinstance(credential, ModelCredential):  # pyright: ignore[reportUnnecessaryIsInstance]
            return None
        key = api_model_id(model)
        with self._lock:
            if key in self._hits:
                return self._hits[key]
            missed = self._misses.get(key)
            if missed is not None and self._clock.monotonic() - missed < MISS_RETRY_S:
                return None
        window = self._ask(key, credential)
        with self._lock:
            if window is None:
                self._misses[key] = self._clock.monotonic()
            else:
                self._hits[key] = window
                self._misses.pop(key, None)
        return window

    def resolve(self, model: str | None, credential: ModelCredential | None) -> int | None:
        """The window to record for a session, best source first; never raises.

        The ``[1m]`` suffix wins outright (it says what this session runs with); then the
        Models API when a credential is given; then the catalogue, also when there is no
        credential at all (an ordinary case, not an error).
        """
        if not isinstance(model, str) or not model.strip():
            return None
        if _long_context(model):
            return LONG_CONTEXT_WINDOW
        if credential is not None:
            window = self.live(model, credential)
            if window is not None:
                return window
        return context_window_of(model)

    def _ask(self, model_id: str, credential: ModelCredential) -> int | None:
        """The API's answer within ``timeout`` in all, else None.

        A socket's timeout bounds each of its reads, not their sum, and nothing bounds the
        name lookup, so the request runs on a thread of its own while this one waits at most
        ``timeout``; one that overruns is abandoned (its thread ends by its own socket
        timeouts) and counts as not known.
        """
        answer: list[int | None] = []
        done = threading.Event()

        def fetch() -> None:
            try:
                answer.append(self._fetch(model_id, credential))
            finally:
                done.set()

        threading.Thread(target=fetch, name="agentshim-model-lookup", daemon=True).start()
        if not done.wait(self.timeout):
            return None
        return answer[0] if answer else None

    def _fetch(self, model_id: str, credential: ModelCredential) -> int | None:
        url = f"{self.base_url}/v1/models/{urllib.parse.quote(model_id, safe='')}"
        headers = {"anthropic-version": _API_VERSION, "accept": "application/json"}
        headers.update(credential.headers())
        request = urllib.request.Request(url, headers=headers, method="GET")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                body = response.read(1_000_000)
        except (OSError, ValueError, urllib.error.URLError, http.client.HTTPException):
            # A session must not stop over a lookup: every failure is "not known".
            return None
        try:
            answer: Any = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if answer.__class__ is not dict:
            return None
        tokens: Any = answer.get("max_input_tokens")
        if type(tokens) is int and tokens > 0:
            return tokens
        return None
