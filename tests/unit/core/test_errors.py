from __future__ import annotations

import pickle

import pytest

from agentshim.core import errors
from agentshim.core.errors import (
    AgentShimError,
    CliCheckError,
    CliExitError,
    CliNotFoundError,
    CliTimeoutError,
    ContinuityError,
    FailureKind,
    InvalidRequestError,
    InvalidSessionIdError,
    McpConfigError,
    NoRunningTurnError,
    ProcessClosedError,
    ProviderCapabilityError,
    SchemaDialectError,
    SessionResumeError,
    SessionStateError,
    TurnCancelledError,
    TurnFailedError,
    TurnTimeoutError,
)
from agentshim.core.provider import ParsedTurn
from agentshim.core.usage import ProviderUsage, TokenUsage

SAMPLES: list[AgentShimError] = [
    AgentShimError("boom"),
    CliNotFoundError("claude"),
    CliCheckError("/usr/bin/claude", "exit 1"),
    TurnFailedError("failed", kind=FailureKind.AUTH, detail="401"),
    CliExitError(["codex", "exec"], 3, "out", "err", kind=FailureKind.TRANSIENT, detail="500"),
    SessionResumeError(["claude", "--resume", "abc"], 1, session_id="abc", detail="gone"),
    TurnTimeoutError(5.0),
    CliTimeoutError(["gemini"], 2.5, ParsedTurn(text="partial", session_id="s")),
    ContinuityError("a", "b"),
    SessionStateError("closed"),
    NoRunningTurnError("no turn"),
    TurnCancelledError("cancelled"),
    TurnCancelledError("cancelled while it ran", returncode=-15),
    ProviderCapabilityError("no schema"),
    SchemaDialectError(["/: root must be an object", "/a: missing additionalProperties"]),
    McpConfigError("/tmp/.mcp.json", "not an object"),
    ProcessClosedError("stdin closed"),
    InvalidSessionIdError("../etc"),
    InvalidRequestError("timeout", "must be a positive number of seconds, got 0"),
    CliTimeoutError(
        ["codex"],
        1.0,
        ParsedTurn(
            text="partial",
            session_id="s",
            usage=ProviderUsage(TokenUsage(input_tokens=3, output_tokens=1), provider="codex"),
        ),
    ),
    CliTimeoutError(["pi"], 1.0, ParsedTurn(usage=ProviderUsage())),
]


class TestTree:
    def test_every_public_error_derives_from_the_base(self) -> None:
        for name in errors.__all__:
            value = getattr(errors, name)
            if isinstance(value, type) and issubclass(value, Exception):
                assert issubclass(value, AgentShimError), name

    def test_the_documented_parents(self) -> None:
        assert issubclass(SessionResumeError, CliExitError)
        assert issubclass(CliExitError, TurnFailedError)
        assert issubclass(CliTimeoutError, TurnTimeoutError)
        assert issubclass(SchemaDialectError, ProviderCapabilityError)
        assert issubclass(NoRunningTurnError, SessionStateError)

    def test_the_docstring_draws_every_class(self) -> None:
        doc = errors.__doc__ or ""
        for name in errors.__all__:
            value = getattr(errors, name)
            if isinstance(value, type) and issubclass(value, AgentShimError):
                assert name in doc, name


class TestPickling:
    @pytest.mark.parametrize("error", SAMPLES, ids=lambda e: type(e).__name__)
    def test_round_trip_keeps_type_message_and_fields(self, error: AgentShimError) -> None:
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error)
        assert str(copy) == str(error)
        assert vars(copy) == vars(error)


class TestFields:
    def test_exit_error_keeps_a_bounded_tail(self) -> None:
        huge = "x" * (1024 * 1024) + "END"
        error = CliExitError(["claude"], 1, huge, huge)
        assert len(error.stdout) < 70 * 1024
        assert error.stdout.endswith("END")
        assert len(error.stderr) < 70 * 1024

    def test_a_huge_detail_is_bounded_in_the_error_and_its_message(self) -> None:
        detail = "API Error: 400 " + "x" * 10_000_000
        error = CliExitError(["claude"], 1, kind=FailureKind.CONTEXT_OVERFLOW, detail=detail)
        assert error.detail.startswith("API Error: 400")
        assert len(error.detail) < 70 * 1024
        assert len(str(error)) < 3000
        assert "API Error: 400" in str(error)

    def test_exit_error_message_says_what_and_what_to_do(self) -> None:
        error = CliExitError(["codex"], 2, stderr="rate limited\n", kind=FailureKind.TRANSIENT)
        assert "exit 2" in str(error)
        assert "rate limited" in str(error)
        assert "retry" in str(error)
        assert error.kind is FailureKind.TRANSIENT
        assert error.returncode == 2
        assert error.argv == ("codex",)

    def test_resume_error_names_the_session(self) -> None:
        error = SessionResumeError(["claude"], 1, session_id="abc-1")
        assert error.session_id == "abc-1"
        assert "abc-1" in str(error)
        assert "fresh conversation" in str(error)

    def test_timeout_carries_the_partial_turn(self) -> None:
        partial = ParsedTurn(text="half", session_id="s-1")
        error = CliTimeoutError(["claude"], 1.5, partial)
        assert error.partial == partial
        assert error.timeout == 1.5

    def test_schema_error_lists_every_problem(self) -> None:
        error = SchemaDialectError(["one", "two"])
        assert error.problems == ["one", "two"]
        assert "one" in str(error)
        assert "two" in str(error)
