"""Recorded failed runs through a ``CliAgent`` turn: the error a user catches, for every CLI.

A failed turn raises CliExitError with the failure's kind; a resumed conversation the CLI no
longer has raises SessionResumeError naming it (and the same output on a fresh turn does not,
since nothing was resumed); any other failure of a resumed turn is that failure, not a lost
conversation. What only one CLI prints in such a run stays in its own test_provider.py.
"""

from __future__ import annotations

import pytest

from agentshim.cli_agent import CliAgent
from agentshim.core.errors import CliExitError, FailureKind, SessionResumeError
from agentshim.core.events import ProviderErrorReported
from agentshim.testing import FakeExecutor, RecordingEventHandler
from tests.unit.providers.copilot import _captures as copilot
from tests.unit.providers.fixtures import Capture, load_capture
from tests.unit.providers.pi import _captures as pi

AUTH, OTHER = FailureKind.AUTH, FailureKind.OTHER
OVERFLOW, TRANSIENT = FailureKind.CONTEXT_OVERFLOW, FailureKind.TRANSIENT
UUID_GONE = "00000000-0000-4000-8000-000000000000"

# Runs asked to resume a conversation the CLI does not have: the id asked, and how the CLI's
# own message begins.
LOST = [
    ("codex", "resume_missing", "00000000-0000-7000-8000-000000000000", "no rollout found"),
    ("copilot", "resume_missing", UUID_GONE, "Error: No session, task, or name matched"),
    ("gemini", "resume_missing", UUID_GONE, "Error resuming session: Invalid session identifier"),
    ("opencode", "resume_missing", "ses_doesnotexist000000000000", "Error: Session not found"),
    ("pi", "d_resume_missing_nonuuid", "no-such-session", "No session found matching"),
    ("pi", "d_resume_missing_uuid", "0199aaaa-bbbb-7ccc-8ddd-eeeeffff0000", "No session found"),
]
# Fresh turns that failed: the kind, and the conversation the CLI had named by then (None: none).
FAILED = [
    ("codex", "api_400_context_length", OVERFLOW, "01a22758-5907-7932-a5c4-4caa61dff9bb"),
    ("codex", "sse_failed_context_length", OVERFLOW, "01a22758-5abc-74f3-aa64-cd446108e3de"),
    ("codex", "api_401", AUTH, "01a22758-5787-7772-bbc4-a9e0f5742f05"),
    ("codex", "api_500", TRANSIENT, "01a22758-55e7-7090-b5c9-6e0a78ca4761"),
    ("codex", "api_500_with_retries", TRANSIENT, "01a22758-7878-7ac1-81e4-0f55222bbeef"),
    ("codex", "wire_api_chat_attempt", OTHER, None),
    ("gemini", "api_400_context_length", OVERFLOW, "55ee11b8-a96a-4f32-ac5c-c379814857e0"),
    ("gemini", "api_401", AUTH, "a1cb73d6-6985-4f57-85d3-454531743442"),
    ("gemini", "api_500", TRANSIENT, "644ef59c-9308-43a6-94df-64e0b3cd408f"),
    ("gemini", "no_settings_gateway_auth_rejected", AUTH, None),
    ("opencode", "api_400_context_length", OVERFLOW, "ses_dd8a54a36ffebF0M9Z3812PHRV"),
    ("opencode", "api_401", AUTH, "ses_dd8a55c55ffenF3VZe1svSDSFB"),
    ("opencode", "api_500", TRANSIENT, "ses_dd8a68f48ffeMPtvHm9g2UxNwM"),
]
# The conversation each CLI is asked to resume when a failure of a resumed turn is replayed.
RESUMED_IDS = {
    "codex": "01a22758-303e-7462-9a22-376e1126431f",
    "copilot": "d8d67461-6201-4285-8233-9e4dda0071e1",
    "gemini": "0516902a-c752-4b12-ab4c-e4c301a72044",
    "opencode": "ses_dd8a6cd86ffeX01SZ77MV3sIeY",
    "pi": "01a2275a-1c2a-72ae-8ced-4a8fdca01c2e",
}
# Every recorded failure the CLI reported in its stream (it had named a conversation by then).
REPORTED_FAILURES = [
    *((provider, name, kind) for provider, name, kind, named in FAILED if named),
    *(
        (provider, name, expected.kind)
        for provider, table in (("copilot", copilot.EXPECTED), ("pi", pi.EXPECTED))
        for name, expected in sorted(table.items())
        if expected.kind is not None and expected.session_id is not None
    ),
]


def turn_of(
    provider: str, capture: Capture, session_id: str | None = None
) -> tuple[CliExitError, str | None, RecordingEventHandler]:
    """Replay ``capture`` as one turn (resuming ``session_id``); the error, the session's id."""
    recorder = RecordingEventHandler()
    executor = FakeExecutor(capture.fake_run(), binaries={provider: f"/usr/bin/{provider}"})
    agent = CliAgent(provider, executor=executor, env={"PATH": "/usr/bin"}, event_handlers=recorder)
    session = agent.start_session(session_id=session_id)
    with pytest.raises(CliExitError) as caught:
        session.turn(capture.stdin or "hello")
    return caught.value, session.session_id, recorder


@pytest.mark.parametrize(("provider", "name", "session_id", "says"), LOST)
def test_a_lost_conversation_is_a_resume_error_naming_it(
    provider: str, name: str, session_id: str, says: str
) -> None:
    capture = load_capture(provider, name)
    error, _, _ = turn_of(provider, capture, session_id)
    assert isinstance(error, SessionResumeError)
    assert error.session_id == session_id
    # Codex's message tells of its stream around the CLI's words; the others begin with them.
    assert says in error.detail if provider == "codex" else error.detail.startswith(says)
    if provider == "opencode":  # its whole message is that one line
        assert error.detail == says
    assert (error.kind, error.returncode) == (OTHER, capture.exit_code)


@pytest.mark.parametrize(("provider", "name", "session_id", "says"), LOST)
def test_the_same_output_on_a_fresh_turn_is_a_plain_exit_error(
    provider: str, name: str, session_id: str, says: str
) -> None:
    capture = load_capture(provider, name)
    error, _, _ = turn_of(provider, capture)
    assert not isinstance(error, SessionResumeError)
    assert (error.kind, error.returncode) == (OTHER, capture.exit_code)


@pytest.mark.parametrize(("provider", "name", "kind", "named"), FAILED)
def test_a_failed_turn_raises_its_kind_and_keeps_the_conversation_it_named(
    provider: str, name: str, kind: FailureKind, named: str | None
) -> None:
    capture = load_capture(provider, name)
    error, session_id, recorder = turn_of(provider, capture)
    assert type(error) is CliExitError
    assert (error.kind, error.returncode) == (kind, capture.exit_code)
    assert session_id == named
    # The CLI reported the error in its stream exactly when it got far enough to name one.
    assert bool(recorder.of_type(ProviderErrorReported)) is (named is not None)


@pytest.mark.parametrize(("provider", "name", "kind"), REPORTED_FAILURES)
def test_any_other_failure_of_a_resumed_turn_is_that_failure(
    provider: str, name: str, kind: FailureKind
) -> None:
    capture = load_capture(provider, name)
    error, _, recorder = turn_of(provider, capture, RESUMED_IDS[provider])
    assert not isinstance(error, SessionResumeError)
    assert error.kind is kind
    assert recorder.of_type(ProviderErrorReported)
