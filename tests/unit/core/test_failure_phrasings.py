"""Auth, usage-limit and model failures, as the CLIs word them, classified alike for all.

Texts marked "Recorded" are what a pinned build printed (tests/fixtures/ and the transport
captures they were copied from); "Pi 1.6" ones are built by Pi 1.6.0's own bundle; the others
are the wording the CLIs and their APIs are known to use for these failures.
"""

from __future__ import annotations

import pytest

from agentshim.core.errors import FailureKind
from agentshim.core.failures import kind_from_status, kind_from_text

AUTH = {
    # Gemini CLI relaying the API's answer to an expired or revoked key.
    "gemini-invalid-or-expired": "[API Error: API key invalid or expired]",
    # Recorded: gemini/*/tool or error cases (the Gemini API's 400 for a bad key).
    "gemini-not-valid": "API key not valid. Please pass a valid API key.",
    # Recorded: gemini stderr, an auth type the CLI does not accept.
    "gemini-auth-method": "Invalid auth method selected.",
    # Recorded: claude's synthetic assistant message on a 401.
    "claude-invalid": "Invalid API key · Fix external API key",
    # Recorded: codex 401 from the Responses API.
    "codex-unauthorized": "unexpected status 401 Unauthorized: Incorrect API key provided: "
    "fake., url: http://127.0.0.1:38819/v1/responses",
    # Recorded: copilot against a provider that refused the key.
    "copilot-provider": "Authentication failed with provider at http://127.0.0.1:38819/v1 "
    "(HTTP 401).\n  Check your COPILOT_PROVIDER_API_KEY, COPILOT_PROVIDER_API_KEY_COMMAND, or "
    "COPILOT_PROVIDER_BEARER_TOKEN.",
    # Recorded: pi's errorMessage on a 401.
    "pi-401": '401 {"type":"error","error":{"type":"authentication_error","message":'
    '"invalid x-api-key"},"request_id":"req_00001"}',
    # Pi 1.6 (its bundle builds this): a provider with no key configured.
    "pi-no-key": "No API key found for Anthropic.",
}

USAGE_LIMIT = {
    "claude-usage-limit": "Claude AI usage limit reached|1796110000",
    "claude-hit-limit": "You've hit your limit · resets 3pm (Europe/Berlin)",
    "claude-credit": "Credit balance is too low",
    "codex-usage-limit": "You've hit your usage limit. Try again in 2 days 3 hours.",
    "openai-quota": "You exceeded your current quota, please check your plan and billing "
    "details. (insufficient_quota)",
    "gemini-quota": "Quota exceeded for quota metric 'Generate Content API requests per day' "
    "and limit 'GenerateContent request limit per day'",
    "gemini-daily": "You have exhausted your daily quota on this model.",
    "http-402": "402 Payment Required",
}

MODEL = {
    "codex-chatgpt-account": "The 'gpt-5-pro' model is not supported when using Codex with a "
    "ChatGPT account.",
    # Each CLI's unknown-model wording (Pi RPC's among them) is in test_failures.py.
}

PHRASINGS = [
    pytest.param(text, kind, id=name)
    for kind, texts in (
        (FailureKind.AUTH, AUTH),
        (FailureKind.USAGE_LIMIT, USAGE_LIMIT),
        (FailureKind.MODEL, MODEL),
    )
    for name, text in texts.items()
]


@pytest.mark.parametrize(("text", "kind"), PHRASINGS)
def test_each_phrasing_gets_its_kind(text: str, kind: FailureKind) -> None:
    assert kind_from_text(text) is kind


def test_a_402_status_is_a_usage_limit() -> None:
    assert kind_from_status(402) is FailureKind.USAGE_LIMIT


@pytest.mark.parametrize(
    "text",
    [
        # Not failures of auth, quota or model, though they share words with them.
        "Model metadata for `fake-model` not found. Defaulting to fallback metadata; this can "
        "degrade performance and cause issues.",
        "the tool's output mentions a token that expires tomorrow",
        "Permission to write the file was granted.",
    ],
)
def test_look_alikes_stay_unclassified(text: str) -> None:
    assert kind_from_text(text) is None
