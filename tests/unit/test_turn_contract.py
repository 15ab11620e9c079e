"""Nothing but an AgentShimError escapes AgentSession.turn(), except a raising event handler."""

from __future__ import annotations

import math
import os
import stat
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from agentshim import (
    AgentShimError,
    CliAgent,
    CliExitError,
    CliTimeoutError,
    FailureKind,
    InvalidRequestError,
    McpConfigError,
    OutputSchema,
    ProviderCapabilityError,
    SchemaDialectError,
    SessionResumeError,
    StdioMcpServer,
    TurnRequest,
)
from agentshim.core.events import AgentEvent, AssistantText, RunFinished
from agentshim.testing import (
    FakeExecutor,
    FakeRun,
    RecordingEventHandler,
    scripted_turn,
    stand_in_executor,
)

BINARIES = {"claude": "/usr/bin/claude", "codex": "/usr/bin/codex", "gemini": "/usr/bin/gemini"}


def agent(provider: str, runs: object, **kwargs: object) -> CliAgent:
    return CliAgent(
        provider, executor=FakeExecutor(runs, binaries=BINARIES), env={"PATH": "/usr/bin"}, **kwargs
    )  # type: ignore[arg-type]


class TestOnlyTypedErrors:
    def test_cwd_that_does_not_exist(self, tmp_path: Path) -> None:
        real = CliAgent("claude", executor=stand_in_executor("claude"), env=dict(os.environ))
        with pytest.raises(AgentShimError, match="cwd"):
            real.run("hi", cwd=str(tmp_path / "missing"))

    @pytest.mark.skipif(
        os.geteuid() == 0 if hasattr(os, "geteuid") else False, reason="root can write anywhere"
    )
    def test_unwritable_mcp_config(self, tmp_path: Path) -> None:
        tmp_path.chmod(stat.S_IRUSR | stat.S_IXUSR)
        try:
            with pytest.raises(McpConfigError):
                agent("claude", scripted_turn("claude", text="x")).run(
                    TurnRequest(
                        "hi", cwd=str(tmp_path), mcp_servers=(StdioMcpServer("srv", "/bin/true"),)
                    )
                )
        finally:
            tmp_path.chmod(stat.S_IRWXU)

    def test_mcp_config_that_cannot_be_written(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # The same failure as a read-only directory, for a test process that runs as root.
        def refuse(path: Path | str, data: bytes | str) -> None:
            raise PermissionError(13, "Permission denied", str(path))

        monkeypatch.setattr("agentshim.mcp.install.atomic_write", refuse)
        with pytest.raises(McpConfigError) as raised:
            agent("claude", scripted_turn("claude", text="x")).run(
                TurnRequest(
                    "hi", cwd=str(tmp_path), mcp_servers=(StdioMcpServer("srv", "/bin/true"),)
                )
            )
        assert "Permission denied" in str(raised.value)
        assert not (tmp_path / ".mcp.json").exists()

    @pytest.mark.parametrize("timeout", [0, -1.0, math.nan, math.inf, True])
    def test_a_timeout_that_is_not_a_positive_number_of_seconds(self, timeout: float) -> None:
        fake = FakeExecutor(scripted_turn("claude", text="x"), binaries=BINARIES)
        cli = CliAgent("claude", executor=fake, env={"PATH": "/usr/bin"})
        with pytest.raises(InvalidRequestError, match="timeout") as raised:
            cli.run(TurnRequest("hi", timeout=timeout))
        assert isinstance(raised.value, ValueError)
        assert fake.requests == []

    @pytest.mark.parametrize(
        ("field", "build"),
        [
            ("prompt", lambda: TurnRequest(5)),  # type: ignore[arg-type]
            ("cwd", lambda: TurnRequest("hi", cwd=5)),  # type: ignore[arg-type]
            ("timeout", lambda: TurnRequest("hi", timeout="10")),  # type: ignore[arg-type]
            ("reasoning_effort", lambda: TurnRequest("hi", reasoning_effort=5)),  # type: ignore[arg-type]
            ("extra_args", lambda: TurnRequest("hi", extra_args="--yolo")),
            ("extra_args", lambda: TurnRequest("hi", extra_args=["--x", 1])),  # type: ignore[list-item]
            ("env", lambda: TurnRequest("hi", env={"A": 1})),  # type: ignore[dict-item]
            ("mcp_servers", lambda: TurnRequest("hi", mcp_servers=["x"])),  # type: ignore[list-item]
            ("output_schema", lambda: TurnRequest("hi", output_schema={"type": "object"})),  # type: ignore[arg-type]
        ],
    )
    def test_a_request_of_the_wrong_shape_is_refused_where_it_is_built(
        self, field: str, build: Callable[[], TurnRequest]
    ) -> None:
        with pytest.raises(InvalidRequestError, match=field):
            build()

    @pytest.mark.parametrize("request_value", [None, 5, {"prompt": "hi"}])
    def test_a_turn_of_neither_prompt_nor_request_is_refused(self, request_value: object) -> None:
        fake = FakeExecutor(scripted_turn("claude", text="x"), binaries=BINARIES)
        cli = CliAgent("claude", executor=fake, env={"PATH": "/usr/bin"})
        with pytest.raises(InvalidRequestError, match="request"):
            cli.run(request_value)  # type: ignore[arg-type]
        assert fake.requests == []

    def test_an_event_handler_neither_callable_nor_with_on_event_is_refused_at_construction(
        self,
    ) -> None:
        fake = FakeExecutor(scripted_turn("claude", text="x"), binaries=BINARIES)
        with pytest.raises(InvalidRequestError, match="event handlers"):
            CliAgent(
                "claude",
                executor=fake,
                env={"PATH": "/usr/bin"},
                event_handlers=object(),  # type: ignore[arg-type]
            )
        assert fake.requests == []

    def test_mcp_config_that_is_not_an_object(self, tmp_path: Path) -> None:
        (tmp_path / ".mcp.json").write_text("[1, 2]")
        with pytest.raises(McpConfigError):
            agent("claude", scripted_turn("claude", text="x")).run(
                TurnRequest(
                    "hi", cwd=str(tmp_path), mcp_servers=(StdioMcpServer("srv", "/bin/true"),)
                )
            )
        assert (tmp_path / ".mcp.json").read_text() == "[1, 2]"

    def test_schema_json_cannot_encode(self, tmp_path: Path) -> None:
        schema = OutputSchema(
            {"type": "object", "properties": {"a": {"maximum": math.nan}}}, tmp_path
        )
        with pytest.raises(SchemaDialectError):
            agent("claude", scripted_turn("claude", text="x")).run(
                TurnRequest("hi", output_schema=schema)
            )

    def test_schema_on_a_provider_without_schemas(self, tmp_path: Path) -> None:
        schema = OutputSchema({"type": "object"}, tmp_path)
        with pytest.raises(ProviderCapabilityError):
            agent("gemini", FakeRun()).run(TurnRequest("hi", output_schema=schema))

    def test_reasoning_effort_unsupported(self) -> None:
        with pytest.raises(ProviderCapabilityError, match="reasoning"):
            agent("gemini", FakeRun()).run(TurnRequest("hi", reasoning_effort="high"))

    def test_strict_dialect_problems_listed(self, tmp_path: Path) -> None:
        schema = OutputSchema({"type": "object", "properties": {"a": {"type": "string"}}}, tmp_path)
        with pytest.raises(SchemaDialectError) as caught:
            agent("codex", FakeRun()).run(TurnRequest("hi", output_schema=schema))
        assert caught.value.problems

    def test_timeout_raises_with_partial(self) -> None:
        run = scripted_turn("claude", text="partial answer", session_id="sess-1")
        timed_out = FakeRun(stdout=run.stdout[:2], timeout=True)
        session = agent("claude", timed_out).start_session()
        with pytest.raises(CliTimeoutError) as caught:
            session.turn("hi")
        assert caught.value.partial is not None
        assert caught.value.partial.session_id == "sess-1"
        assert session.session_id == "sess-1"

    def test_nonzero_exit_is_a_cli_exit_error(self) -> None:
        with pytest.raises(CliExitError) as caught:
            agent("claude", FakeRun(stderr=["boom\n"], returncode=3)).run("hi")
        assert caught.value.returncode == 3

    def test_empty_stream_with_exit_zero_fails(self) -> None:
        with pytest.raises(CliExitError) as caught:
            agent("claude", FakeRun(stdout=["not json\n"])).run("hi")
        assert caught.value.kind is FailureKind.OTHER
        assert caught.value.returncode == 0

    def test_handler_that_raises_fails_with_its_own_exception(self) -> None:
        class Boom(Exception):
            pass

        class Raising:
            def on_event(self, event: AgentEvent) -> None:
                if isinstance(event, AssistantText):
                    raise Boom("handler")

        with pytest.raises(Boom):
            agent("claude", scripted_turn("claude", text="hello"), event_handlers=Raising()).run(
                "hi"
            )


class TestSessionIds:
    def test_adopted_before_raising(self) -> None:
        run = scripted_turn("claude", text="x", session_id="sess-9", returncode=1)
        session = agent("claude", run).start_session()
        with pytest.raises(CliExitError):
            session.turn("hi")
        assert session.session_id == "sess-9"

    def test_not_adopted_on_resume_failure(self) -> None:
        from agentshim.testing import scripted_resume_failure

        session = agent(
            "claude", scripted_resume_failure("claude", session_id="gone-1")
        ).start_session(session_id="gone-1")
        with pytest.raises(SessionResumeError) as caught:
            session.turn("hi")
        assert caught.value.session_id == "gone-1"


class TestEventsOnEveryPath:
    def test_run_finished_even_on_timeout(self) -> None:
        recorder = RecordingEventHandler()
        with pytest.raises(CliTimeoutError):
            agent("claude", FakeRun(timeout=True), event_handlers=recorder).run("hi")
        assert recorder.of_type(RunFinished) == [RunFinished(None)]


def test_stand_in_runs_a_real_process() -> None:
    result = CliAgent("claude", executor=stand_in_executor("claude"), env=dict(os.environ)).run(
        "Say hi"
    )
    assert "stand-in" in result.text
    assert result.session_id
    assert sys.executable
