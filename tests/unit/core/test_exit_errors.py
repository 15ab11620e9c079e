from __future__ import annotations

import pickle

from agentshim.core.errors import CliExitError, FailureKind, SessionResumeError
from agentshim.core.exit_errors import as_resume_failure, resume_missing_line, with_kind

ARGV = ("/usr/bin/cli", "--resume", "s-1", "-")


def failed(kind: FailureKind = FailureKind.OTHER, detail: str = "it broke") -> CliExitError:
    return CliExitError(ARGV, 42, "out\n", "Error: no such session\n", kind=kind, detail=detail)


def recorded(error: CliExitError) -> tuple[object, ...]:
    return (error.argv, error.returncode, error.stdout, error.stderr)


class TestAsResumeFailure:
    def test_keeps_the_run_and_its_kind_and_names_the_session(self) -> None:
        error = failed(FailureKind.TRANSIENT)
        resumed = as_resume_failure(error, session_id="s-1")
        assert isinstance(resumed, SessionResumeError)
        assert recorded(resumed) == recorded(error)
        assert (resumed.session_id, resumed.kind, resumed.detail) == (
            "s-1",
            FailureKind.TRANSIENT,
            "it broke",
        )
        assert "could not resume conversation 's-1'" in str(resumed)
        assert "start a fresh conversation" in str(resumed)

    def test_a_detail_replaces_the_errors_own(self) -> None:
        resumed = as_resume_failure(failed(), session_id=None, detail="Error resuming session: x")
        assert resumed.detail == "Error resuming session: x"
        assert resumed.session_id is None
        assert "Error resuming session: x" in str(resumed)

    def test_an_empty_detail_is_kept_empty(self) -> None:
        assert as_resume_failure(failed(), session_id="s", detail="").detail == ""

    def test_survives_pickling(self) -> None:
        resumed = as_resume_failure(failed(), session_id="s-1")
        copy = pickle.loads(pickle.dumps(resumed))
        assert (copy.session_id, recorded(copy), str(copy)) == (
            "s-1",
            recorded(resumed),
            str(resumed),
        )


class TestWithKind:
    def test_changes_only_the_kind_and_the_message_says_it(self) -> None:
        error = failed()
        refined = with_kind(error, FailureKind.AUTH)
        assert type(refined) is CliExitError
        assert recorded(refined) == recorded(error)
        assert (refined.kind, refined.detail) == (FailureKind.AUTH, "it broke")
        assert "auth" in str(refined)
        assert "auth" not in str(error)

    def test_leaves_the_original_untouched(self) -> None:
        error = failed()
        with_kind(error, FailureKind.CONTEXT_OVERFLOW)
        assert error.kind is FailureKind.OTHER


class TestResumeMissingLine:
    def test_the_first_line_holding_the_marker_in_any_case_stripped(self) -> None:
        stderr = "loading\n  Error: NO SUCH SESSION abc  \nno such session def\n"
        assert resume_missing_line("no such session", stderr) == "Error: NO SUCH SESSION abc"

    def test_texts_are_searched_in_order(self) -> None:
        assert resume_missing_line("gone", "fine\n", "x gone\n", "y gone\n") == "x gone"

    def test_none_when_no_text_holds_the_marker(self) -> None:
        assert resume_missing_line("gone", "", "rate limited\n") is None
        assert resume_missing_line("gone") is None
