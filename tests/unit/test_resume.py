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

# Other spellings each CLI accepts (its --help); extract_resume must find them too.
OTHER_FORMS = [
    ("claude", "claude -r {id}"),
    ("claude", "claude --resume={id}"),
    ("codex", "codex exec resume {id}"),
    ("gemini", "gemini -r {id}"),
    ("gemini", "gemini --resume={id}"),
    ("opencode", "opencode -s {id}"),
    ("opencode", "opencode --session={id}"),
    ("opencode", "opencode run --session {id}"),
    ("opencode", "opencode run -s {id}"),
    ("copilot", "copilot --resume {id}"),
    ("copilot", "copilot -r {id}"),
]
ALL_FORMS = [*EXPECTED.items(), *OTHER_FORMS]


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

    @pytest.mark.parametrize(("provider", "form"), OTHER_FORMS)
    def test_other_forms_the_cli_accepts(self, provider: str, form: str) -> None:
        session_id = "0199a1b2-c3d4.e5_f6"
        text = f"Done. Continue with `{form.format(id=session_id)}`."
        assert extract_resume(text) == ResumeLine(provider, session_id)
        assert extract_resume(text, provider) == ResumeLine(provider, session_id)
        others = [name for name in provider_names() if name != provider]
        assert all(extract_resume(text, name) is None for name in others)

    @pytest.mark.parametrize(("provider", "form"), ALL_FORMS)
    def test_an_other_form_round_trips_to_the_canonical_line(
        self, provider: str, form: str
    ) -> None:
        found = extract_resume(form.format(id="ses_9Ab.c-d"))
        assert found is not None
        assert resume_command(found.provider, found.session_id) == EXPECTED[provider].format(
            id="ses_9Ab.c-d"
        )

    @pytest.mark.parametrize(("provider", "form"), ALL_FORMS)
    @pytest.mark.parametrize("bad", ["--verbose", "-x", ".", "..", "a" * 129])
    def test_invalid_ids_are_never_returned(self, provider: str, form: str, bad: str) -> None:
        assert extract_resume(form.format(id=bad)) is None
        assert extract_resume(form.format(id=bad), provider) is None

    def test_pi_takes_no_short_session_flag(self) -> None:
        # `pi -r` opens Pi's session picker; it names no conversation.
        assert extract_resume("pi -r 0199a1b2") is None

    def test_last_line_wins_across_forms(self) -> None:
        text = "copilot -r first\nthen opencode -s ses_2\nfinally claude -r third"
        assert extract_resume(text) == ResumeLine("claude", "third")
        assert extract_resume(text, "opencode") == ResumeLine("opencode", "ses_2")
