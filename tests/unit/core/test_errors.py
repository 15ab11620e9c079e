from __future__ import annotations

import copy
import importlib
import inspect
import pickle

import pytest

from agentshim.core import errors
from agentshim.core.errors import (
    AgentShimError,
    ApprovalRequiredError,
    CliCheckError,
    CliDiedError,
    CliExitError,
    CliInstallError,
    CliNotFoundError,
    CliTimeoutError,
    ContinuityError,
    ConversationImportError,
    FailureKind,
    InvalidRequestError,
    InvalidSessionIdError,
    LeaseLostError,
    LeaseTimeoutError,
    LineTooLongError,
    McpConfigError,
    NoRunningTurnError,
    ProcessClosedError,
    ProviderCapabilityError,
    SchemaDialectError,
    SessionResumeError,
    SessionStateError,
    SpendingLimitError,
    StoreError,
    TurnCancelledError,
    TurnFailedError,
    TurnStalledError,
    TurnTimeoutError,
    UnknownProviderError,
)
from agentshim.core.turn import ParsedTurn, TurnResult
from agentshim.core.usage import ProviderUsage, TokenUsage
from agentshim.doctor.model_server import ModelServerError
from agentshim.providers.codex.app_server._wire import CodexProtocolError

# One error of every class, each built with a value other than the default for every
# parameter its constructor takes, so a parameter that pickling forgot shows in the copy.
SAMPLES: list[AgentShimError] = [
    AgentShimError("boom"),
    CliNotFoundError("claude", message="claude is missing", install="npm install -g claude"),
    CliCheckError("/usr/bin/claude", "exit 1", message="check failed"),
    CliInstallError("@openai/codex@0.1.0", message="npm failed"),
    TurnFailedError("failed", kind=FailureKind.AUTH, detail="401", retry_after=3.0),
    CliExitError(
        ["codex", "exec"],
        3,
        "out",
        "err",
        kind=FailureKind.TRANSIENT,
        detail="500",
        message="codex failed",
        retry_after=1.5,
    ),
    SessionResumeError(
        ["claude", "--resume", "abc"],
        1,
        "out",
        "err",
        session_id="abc",
        kind=FailureKind.AUTH,
        detail="gone",
        message="resume failed",
        retry_after=2.0,
    ),
    TurnTimeoutError(5.0, message="too slow"),
    CliTimeoutError(["gemini"], 2.5, ParsedTurn(text="partial", session_id="s"), "killed"),
    ContinuityError("a", "b", message="elsewhere"),
    LeaseTimeoutError("user-1", 4242, "web-2", 1_764_580_000.5, 3.0, message="busy"),
    LeaseLostError("user-1", 3, 4343, "web-3", 1_764_580_001.5, 4, message="lost"),
    ConversationImportError("gemini", "saved by 0.61.0", message="cannot import"),
    SessionStateError("closed"),
    NoRunningTurnError("no turn"),
    TurnCancelledError("cancelled while it ran", returncode=-15),
    ProviderCapabilityError("no schema"),
    SchemaDialectError(["/: root must be an object", "/a: missing"], message="bad schema"),
    McpConfigError("/tmp/.mcp.json", "not an object", message="cannot install"),
    StoreError("/srv/state.db", "database is locked", message="could not save"),
    ProcessClosedError("stdin closed"),
    InvalidSessionIdError("../etc", message="unsafe id"),
    InvalidRequestError("timeout", "must be a positive number of seconds, got 0", "bad timeout"),
    LineTooLongError(10, 2, ["a\n"], message="too long"),
    UnknownProviderError("nope", ["claude", "codex"], message="no such provider"),
    ModelServerError("not started"),
    CodexProtocolError("Notification.params.turn.id", "is required and missing", "bad line"),
    CliDiedError(
        "died",
        session_id="s1",
        returncode=-9,
        stderr="boom\n",
        kind=FailureKind.TRANSIENT,
        detail="died",
        retry_after=1.0,
    ),
    TurnStalledError(30.0, 31.5, "silent"),
    ApprovalRequiredError("Bash", "toolu_1", "asked"),
    SpendingLimitError(
        "over",
        limit_name="max_cost_usd",
        limit=0.5,
        spent=0.75,
        session_id="s1",
        result=TurnResult("partial", None, "s1", False, interrupted=True),
        kind=FailureKind.OTHER,
        detail="spent",
        retry_after=1.0,
    ),
]

# More values that must survive pickling: a partial turn with usage, and an empty one.
MORE_SAMPLES: list[AgentShimError] = [
    TurnCancelledError("cancelled"),
    LeaseTimeoutError("claude/s-1", 7, "h", 0.0, 0.5),
    LeaseLostError("user-1", 5),
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


def _error_classes() -> set[type[AgentShimError]]:
    # Every subclass in the package: importing the modules that define errors registers them.
    importlib.import_module("agentshim.doctor.model_server")
    found: set[type[AgentShimError]] = set()
    pending: list[type[AgentShimError]] = [AgentShimError]
    while pending:
        cls = pending.pop()
        if cls.__module__.startswith("agentshim.") and cls not in found:
            found.add(cls)
            pending.extend(cls.__subclasses__())
    return found


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
    def test_every_error_class_in_the_package_has_a_sample(self) -> None:
        assert {type(error) for error in SAMPLES} == _error_classes()

    @pytest.mark.parametrize("error", SAMPLES, ids=lambda e: type(e).__name__)
    def test_every_sample_sets_every_constructor_parameter(self, error: AgentShimError) -> None:
        # Without this, a parameter left at its default would round-trip by accident.
        for name, parameter in inspect.signature(type(error)).parameters.items():
            if parameter.default is not inspect.Parameter.empty:
                assert getattr(error, name) != parameter.default, (type(error).__name__, name)

    @pytest.mark.parametrize("error", SAMPLES + MORE_SAMPLES, ids=lambda e: type(e).__name__)
    def test_round_trip_keeps_type_message_and_fields(self, error: AgentShimError) -> None:
        copy = pickle.loads(pickle.dumps(error))
        assert type(copy) is type(error)
        assert str(copy) == str(error)
        assert vars(copy) == vars(error)
        for name in inspect.signature(type(error)).parameters:
            assert getattr(copy, name) == getattr(error, name), name

    @pytest.mark.parametrize("error", SAMPLES, ids=lambda e: type(e).__name__)
    def test_a_copy_is_an_equal_error(self, error: AgentShimError) -> None:
        copied = copy.copy(error)
        assert type(copied) is type(error)
        assert vars(copied) == vars(error)


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


def test_a_cli_that_died_before_a_conversation_says_so_without_none() -> None:
    from agentshim.core.errors import CliDiedError

    early = CliDiedError(returncode=1, stderr="boom")
    assert "None" not in str(early)
    assert "no conversation had started" in str(early)
    later = CliDiedError(session_id="s-1", returncode=1, stderr="boom")
    assert "the conversation 's-1' is kept" in str(later)
