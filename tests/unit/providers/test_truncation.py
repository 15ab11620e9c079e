"""An answer cut off at the output-token limit succeeds with its text and says so.

Each provider whose CLI reports it (Claude Code's result ``stop_reason: "max_tokens"``, Pi's
assistant ``stopReason: "length"``) gives the same Lifecycle and the same TurnResult notice.
The turns are recorded plain answers with only that stop reason changed.
"""

from __future__ import annotations

import json

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.events import Lifecycle
from agentshim.core.failures import OUTPUT_TRUNCATED
from agentshim.core.turn import TurnRequest
from agentshim.testing import FakeExecutor, FakeRun, RecordingEventHandler
from tests.unit.providers.fixtures import load_capture


def _claude(frame: dict[str, object]) -> None:
    if frame.get("type") == "result":
        frame["stop_reason"] = "max_tokens"


def _pi(frame: dict[str, object]) -> None:
    message = frame.get("message")
    is_end = frame.get("type") == "message_end" and isinstance(message, dict)
    if is_end and message.get("role") == "assistant":  # type: ignore[union-attr]
        message["stopReason"] = "length"  # type: ignore[index]
        message["rawStopReason"] = "max_tokens"  # type: ignore[index]


CASES = {
    "claude": ("recorded-2.1.332/rec_plain_answer", _claude),
    "pi": ("recorded-1.6.0/rec_plain_answer", _pi),
}


@pytest.mark.parametrize("provider", sorted(CASES))
def test_a_truncated_answer_is_a_success_with_a_notice(provider: str) -> None:
    case, change = CASES[provider]
    capture = load_capture(provider, case)
    lines = []
    for line in capture.stdout_lines:
        frame = json.loads(line)
        change(frame)
        lines.append(json.dumps(frame) + "\n")
    events = RecordingEventHandler()
    run = FakeRun(stdout=tuple(lines), stderr=capture.stderr_lines, returncode=0)
    agent = CliAgent(
        provider, env={"PATH": "/usr/bin"}, executor=FakeExecutor([run]), event_handlers=events
    )
    result = agent.run(TurnRequest(prompt="Say hello and name a fruit."))
    untouched = CliAgent(
        provider, env={"PATH": "/usr/bin"}, executor=FakeExecutor([capture.fake_run()])
    ).run(TurnRequest(prompt="Say hello and name a fruit."))
    assert result.text == untouched.text
    assert untouched.notices == ()
    [notice] = result.notices
    assert "output-token limit" in notice
    assert Lifecycle(OUTPUT_TRUNCATED, notice) in events.events
