"""What Gemini CLI's, opencode's and Copilot CLI's ACP dialects do alike.

Each is checked on its own recorded sessions and on the fake agent with its quirks.
"""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentshim.acp.dialect import AcpDialect
from agentshim.acp.jsonrpc import Notification, Request, Response
from agentshim.acp.updates import UpdateReader
from agentshim.core.errors import SessionResumeError
from agentshim.core.events import Lifecycle
from agentshim.providers.copilot.acp import COPILOT_ACP
from agentshim.providers.gemini.acp import GEMINI_ACP
from agentshim.providers.opencode.acp import OPENCODE_ACP
from agentshim.testing import FakeClock
from agentshim.testing import acp as fake_acp
from agentshim.testing.recording import RecordingEventHandler

from .rigs import Rig, methods, recorded_cases, recorded_messages

AGENTS: dict[str, tuple[AcpDialect, fake_acp.AcpQuirks]] = {
    "gemini": (GEMINI_ACP, fake_acp.GEMINI_QUIRKS),
    "opencode": (OPENCODE_ACP, fake_acp.OPENCODE_QUIRKS),
    "copilot": (COPILOT_ACP, fake_acp.COPILOT_QUIRKS),
}
RECORDED = [
    pytest.param(provider, case, id=f"{provider}-{case}")
    for provider in AGENTS
    for case in recorded_cases(provider)
]


@pytest.mark.parametrize(("provider", "case"), RECORDED)
def test_every_recorded_line_is_a_json_rpc_message(provider: str, case: str) -> None:
    for direction in ("in", "out"):
        assert recorded_messages(provider, case, direction)


@pytest.mark.parametrize(("provider", "case"), RECORDED)
def test_every_recorded_update_is_a_known_kind_and_no_status_line_is_the_answer(
    provider: str, case: str
) -> None:
    dialect, _ = AGENTS[provider]
    events = RecordingEventHandler()
    # The reader as the transport makes it for this dialect.
    reader = UpdateReader(
        events, dialect.notice, failed=dialect.failed, superseded=dialect.superseded_messages
    )
    for message in recorded_messages(provider, case):
        if isinstance(message, Notification):
            reader.read(message.params["update"])
        elif isinstance(message, Request) and message.method == "session/request_permission":
            reader.announce(message.params["toolCall"])
    kinds = {e.kind for e in events.of_type(Lifecycle)}
    assert kinds.isdisjoint({"unknown_update", "malformed_update"})
    assert not reader.text.startswith(("Info:", "Error:"))


@pytest.mark.parametrize(
    ("provider", "case", "lost"),
    [
        ("gemini", "session_load_run1_clobbered", [True, True, True, False]),
        ("opencode", "session_load", [True]),
        ("copilot", "session_load", [True]),
    ],
)
def test_the_recorded_answers_for_an_unknown_session_say_it_is_lost(
    provider: str, case: str, lost: list[bool]
) -> None:
    dialect, _ = AGENTS[provider]
    errors = [
        m.error
        for m in recorded_messages(provider, case)
        if isinstance(m, Response) and m.error is not None
    ]
    assert [dialect.session_lost(error) for error in errors] == lost


@pytest.mark.parametrize(
    ("provider", "gone", "attach"),
    [
        ("gemini", "c0de0000-0000-4000-8000-00000000dead", "session/load"),
        ("opencode", "ses_00000000000000000000000000", "session/resume"),
        ("copilot", "c0de0000-0000-4000-8000-00000000dead", "session/load"),
    ],
)
def test_resuming_a_session_the_agent_lost_is_a_resume_error_before_any_prompt(
    provider: str, gone: str, attach: str
) -> None:
    dialect, quirks = AGENTS[provider]
    waits = FakeClock()
    rig = Rig(
        provider,
        dialect,
        quirks,
        [fake_acp.AcpPeerTurn("never")],
        resume=gone,
        lost=[gone],
        transport_options={"waits": waits},
    )
    with pytest.raises(SessionResumeError) as caught:
        rig.turn()
    assert caught.value.session_id == gone
    assert methods(rig.peer) == ["initialize", attach]
    assert waits.waits == []  # not a session this client made: no wait for its minute


# Gemini CLI reports a turn's quota, not these token counts (its own tests read it).
@pytest.mark.parametrize("provider", ["copilot", "opencode"])
@given(
    st.dictionaries(
        st.sampled_from(
            [
                "inputTokens",
                "outputTokens",
                "thoughtTokens",
                "cachedReadTokens",
                "cachedWriteTokens",
            ]
        ),
        st.integers() | st.text(max_size=5) | st.none(),
    )
)
def test_any_usage_reads_without_raising(provider: str, raw: dict[str, Any]) -> None:
    dialect, _ = AGENTS[provider]
    reported = dialect.usage({"usage": raw})
    assert reported is not None
    assert reported.tokens.input_tokens >= reported.tokens.cache_read_input_tokens
