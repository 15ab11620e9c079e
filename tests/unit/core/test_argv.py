from __future__ import annotations

import pytest

from agentshim.core.argv import checked_option_value, word_after
from agentshim.core.errors import InvalidRequestError


class TestCheckedOptionValue:
    @pytest.mark.parametrize("value", ["gpt-5", "models/gemini-2.5-pro", "a-b_c.d:e"])
    def test_a_single_word_passes_unchanged(self, value: str) -> None:
        assert checked_option_value("the CLI", "model", value) == value

    @pytest.mark.parametrize("value", ["", "-m", "--model", "two words", "tab\there", "nul\0"])
    def test_what_would_not_stay_one_value_is_refused(self, value: str) -> None:
        with pytest.raises(InvalidRequestError) as caught:
            checked_option_value("opencode", "model", value)
        assert str(caught.value) == (
            f"invalid model {value!r} for opencode: it must be non-empty, must not start "
            "with '-' and must not contain whitespace"
        )


class TestWordAfter:
    def test_the_word_after_the_first_match(self) -> None:
        argv = ["cli", "-r", "first", "--resume", "second"]
        assert word_after(argv, "--resume", "-r") == "first"
        assert word_after(argv, "--resume") == "second"

    def test_works_on_tuples(self) -> None:
        assert word_after(("codex", "exec", "resume", "t-1", "-"), "resume") == "t-1"

    @pytest.mark.parametrize(
        "argv", [[], ["cli"], ["cli", "--resume"], ["cli", "--session", "x"], ["--resume=x"]]
    )
    def test_none_when_no_word_follows_a_match(self, argv: list[str]) -> None:
        assert word_after(argv, "--resume") is None

    def test_a_match_at_the_end_does_not_hide_an_earlier_one(self) -> None:
        assert word_after(["--resume", "a", "--resume"], "--resume") == "a"
