"""The provider-neutral failure rules: what the model APIs say about a model they do not serve."""

from __future__ import annotations

import pytest

from agentshim.core.errors import CliExitError, FailureKind, TurnFailedError
from agentshim.core.failures import kind_from_text
from agentshim.core.session_policy import classify_failure
from agentshim.testing.conversation import FakeOutcome
from tests.unit.session.helpers import Rig

# What each pinned CLI printed when the API answered 404 for the model (the recordings under
# tests/fixtures/<provider>/recorded_failures/).
UNKNOWN_MODEL_TEXTS = {
    "claude": "There's an issue with the selected model (claude-opus-4-8[1m]). It may not "
    "exist or you may not have access to it. Run --model to pick a different model.",
    "codex": "The model `fake-model` does not exist or you do not have access to it.",
    "copilot": "Model 'fake-model' not found on provider at http://127.0.0.1:32981/v1 "
    "(HTTP 404).\n  Check that the model is available on your provider.",
    "gemini": "[API Error: models/fake-model is not found for API version v1beta, or is not "
    "supported for generateContent. Call ListModels to see the list of available models and "
    "their supported methods.]",
    "pi": '404 {"type":"error","error":{"type":"not_found_error","message":"The model '
    '`fake-model` does not exist or you do not have access to it."}}',
    "pi_rpc": "Model not found: fake/nope",
}


@pytest.mark.parametrize("text", UNKNOWN_MODEL_TEXTS.values(), ids=UNKNOWN_MODEL_TEXTS.keys())
def test_an_unknown_model_is_model(text: str) -> None:
    assert kind_from_text(text) is FailureKind.MODEL


@pytest.mark.parametrize(
    "text",
    [
        # Codex warns about its own model catalogue on every turn with a model it lacks.
        "Model metadata for `fake-model` not found. Defaulting to fallback metadata; this can "
        "degrade performance and cause issues.",
        "File not found: model.py",
        "the tool modelling.py does not exist",
    ],
)
def test_other_not_found_texts_are_not_model(text: str) -> None:
    assert kind_from_text(text) is not FailureKind.MODEL


def test_the_context_window_still_wins_over_the_model() -> None:
    text = "prompt is too long for the model `m`; the model `m` does not exist in that size"
    assert kind_from_text(text) is FailureKind.CONTEXT_OVERFLOW


def test_the_error_message_says_to_pick_another_model() -> None:
    error = CliExitError(["claude", "-p"], 1, "", "", kind=FailureKind.MODEL, detail="no model")
    assert "(exit 1, model)" in error.message
    assert "pick a model" in error.message


def test_a_model_failure_is_its_own_outcome() -> None:
    error = TurnFailedError("the model is unknown", kind=FailureKind.MODEL)
    assert classify_failure(error) is FailureKind.MODEL


def test_a_session_does_not_retry_a_model_failure_and_keeps_its_conversation() -> None:
    # The default RetryPolicy retries TRANSIENT failures; MODEL is not one.
    rig = Rig(
        [FakeOutcome.failure(FailureKind.MODEL), FakeOutcome.failure(FailureKind.MODEL)],
        holding="conv-old",
    )
    with pytest.raises(TurnFailedError) as raised:
        rig.run()
    assert raised.value.kind is FailureKind.MODEL
    assert len(rig.transport.calls) == 1
    assert rig.clock.waits == []
    assert rig.checkpoint == "conv-old"
