from __future__ import annotations

import pytest

from agentshim import InvalidSessionIdError, extract_resume, provider_names, resume_command
from agentshim.resume import ResumeLine

EXPECTED = {
    "claude": "claude --resume {id}",
    "codex": "codex resume {id}",
    "gemini": "gemini --resume {id}",
    "opencode": "opencode --session {id}",
    "copilot": "copilot --resume={id}",
    "pi": "pi --session {id}",
}


class TestResumeCommand:
    @pytest.mark.parametrize("provider", sorted(EXPECTED))
    def test_the_line_a_person_types(self, provider: str) -> None:
        assert resume_command(provider, "abc-123") == EXPECTED[provider].format(id="abc-123")

    @pytest.mark.parametrize("bad", ["a b", "x;rm -rf /", "../etc", "", "$(reboot)"])
    def test_unsafe_ids_are_refused(self, bad: str) -> None:
        with pytest.raises(InvalidSessionIdError):
            resume_command("claude", bad)


class TestExtractResume:
    @pytest.mark.parametrize("provider", provider_names())
    def test_round_trip_for_every_provider(self, provider: str) -> None:
        session_id = "0199a1b2-c3d4.e5_f6"
        text = f"Done.\nTo continue: {resume_command(provider, session_id)}\n"
        assert extract_resume(text) == ResumeLine(provider, session_id)
        assert extract_resume(text, provider) == ResumeLine(provider, session_id)

    def test_last_line_wins(self) -> None:
        text = "claude --resume first\nlater: codex resume second"
        assert extract_resume(text) == ResumeLine("codex", "second")

    def test_provider_filter(self) -> None:
        text = "claude --resume first\nlater: codex resume second"
        assert extract_resume(text, "claude") == ResumeLine("claude", "first")

    def test_nothing_found(self) -> None:
        assert extract_resume("no resume line here") is None

    def test_pi_is_not_found_inside_opencode(self) -> None:
        assert extract_resume("opencode --session ses_1") == ResumeLine("opencode", "ses_1")

    def test_an_id_with_trailing_punctuation(self) -> None:
        assert extract_resume("run `claude --resume abc-1` now") == ResumeLine("claude", "abc-1")
