"""Failures every provider classifies the same way, replayed from what the real CLIs printed.

``tests/fixtures/<provider>/recorded_failures/rec_unknown_model.*``: each pinned CLI run
against the scripted model server answering HTTP 404 ``model_not_found`` (the API's own
wording per wire format), recorded with ``scripts/record_fixtures.py``'s recorder.
"""

from __future__ import annotations

import pytest

from agentshim import CliAgent
from agentshim.core.errors import AgentShimError, FailureKind
from agentshim.testing import FakeExecutor, RecordingEventHandler
from tests.unit.providers.fixtures import load_capture

PROVIDERS = ("claude", "codex", "copilot", "gemini", "opencode", "pi")


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_model_the_api_does_not_know_fails_the_turn_as_model(provider: str) -> None:
    capture = load_capture(provider, "recorded_failures/rec_unknown_model")
    executor = FakeExecutor([capture.fake_run()])
    events = RecordingEventHandler()
    agent = CliAgent(provider, env={"PATH": "/usr/bin"}, executor=executor, event_handlers=events)
    with pytest.raises(AgentShimError) as raised:
        agent.run("Say hello.")
    error = raised.value
    assert getattr(error, "kind", None) is FailureKind.MODEL, error
    assert "pick a model" in str(error)
