"""A request no process can be started with is refused with InvalidRequestError, never a bare error."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import pytest
from execution_helpers import ENV, PY, RecordingSink, py

from agentshim.core.errors import AgentShimError, InvalidRequestError
from agentshim.execution import (
    CommandRequest,
    HostCommandExecutor,
    ProbeSpec,
    SpawnRequest,
)

SECRET = "s3cr3t-value"


def run_on_host(argv: list[str], env: Mapping[str, str], cwd: str | None) -> None:
    HostCommandExecutor().run(CommandRequest(argv, cwd=cwd, env=env), RecordingSink())


def spawn_on_host(argv: list[str], env: Mapping[str, str], cwd: str | None) -> None:
    HostCommandExecutor().spawn(SpawnRequest(argv, cwd=cwd, env=env)).close()


def run_threaded(argv: list[str], env: Mapping[str, str], cwd: str | None) -> None:
    HostCommandExecutor(use_threads=True).run(
        CommandRequest(argv, cwd=cwd, env=env), RecordingSink()
    )


STARTERS = [run_on_host, spawn_on_host, run_threaded]


def bad_starts(tmp_path: Path) -> list[tuple[str, list[str], dict[str, str], str | None]]:
    """(field, argv, env, cwd) of starts the operating system cannot make.

    Started anyway, the program would create the file named by its last argument.
    """
    argv = py("import pathlib, sys; pathlib.Path(sys.argv[-1]).write_text('ran')")
    return [
        ("argv", [PY + "\0", "-c", "pass"], ENV, None),
        ("argv", [*argv, "an\0argument"], ENV, None),
        ("env", argv, {**ENV, "BAD\0NAME": "1"}, None),
        ("env", argv, {**ENV, "TOKEN": SECRET + "\0"}, None),
        ("env", argv, {**ENV, "A=B": "1"}, None),
        ("cwd", argv, ENV, f"{tmp_path}\0/sub"),
    ]


@pytest.mark.parametrize("start", STARTERS, ids=lambda start: start.__name__)
@pytest.mark.parametrize("case", range(6))
def test_what_no_process_can_receive_is_refused_before_anything_starts(
    start: Callable[[list[str], Mapping[str, str], str | None], None],
    case: int,
    tmp_path: Path,
) -> None:
    field, argv, env, cwd = bad_starts(tmp_path)[case]
    marker = tmp_path / "started"
    with pytest.raises(InvalidRequestError) as caught:
        start([*argv, str(marker)], env, cwd)
    error = caught.value
    assert isinstance(error, AgentShimError)
    assert error.field == field
    assert "NUL" in error.message or "'='" in error.message
    # It says what to do, and never quotes a variable's value (values are often secrets).
    assert any(word in error.message for word in ("remove", "rename", "pass"))
    assert SECRET not in error.message
    assert not marker.exists()


def test_the_same_executor_runs_a_good_request_after_refusing_a_bad_one() -> None:
    executor = HostCommandExecutor()
    with pytest.raises(InvalidRequestError):
        executor.run(CommandRequest([PY, "-c", "pass"], env={**ENV, "X": "\0"}), RecordingSink())
    sink = RecordingSink()
    assert executor.run(CommandRequest(py("print('ok')"), env=ENV), sink).returncode == 0
    assert sink.out == ["ok\n"]


def test_unusual_but_legal_values_still_run() -> None:
    env = {**ENV, "AGENTSHIM_T": "a=b;c\n\u00e9"}
    code = "import os; print(repr(os.environ['AGENTSHIM_T']))"
    sink = RecordingSink()
    HostCommandExecutor().run(CommandRequest(py(code), env=env), sink)
    assert sink.out == [repr("a=b;c\n\u00e9") + "\n"]


def test_a_value_popen_cannot_take_is_an_invalid_request_too() -> None:
    # Not a str at all: the type checker would object, but a caller may not use one.
    env: dict[str, Any] = {**ENV, "NUMBER": 1}
    with pytest.raises(InvalidRequestError) as caught:
        HostCommandExecutor().run(CommandRequest([PY, "-c", "pass"], env=env), RecordingSink())
    assert caught.value.field == "request"
    process_env: dict[str, Any] = {**ENV, "NUMBER": 1}
    with pytest.raises(InvalidRequestError):
        HostCommandExecutor().spawn(SpawnRequest([PY, "-c", "pass"], env=process_env))


class TestRequestFields:
    @pytest.mark.parametrize(
        "timeout",
        [0, -1, 0.0, -0.5, math.nan, math.inf, -math.inf, True, False, "5"],
        ids=repr,
    )
    def test_a_timeout_must_be_a_finite_number_of_seconds_above_zero(self, timeout: Any) -> None:
        with pytest.raises(InvalidRequestError) as caught:
            CommandRequest(["x"], timeout=timeout)
        assert caught.value.field == "timeout"
        assert "None for no limit" in caught.value.message
        with pytest.raises(InvalidRequestError):
            ProbeSpec(["x"], timeout=timeout)

    @pytest.mark.parametrize("timeout", [None, 0.001, 1, 2.5, 1e9])
    def test_none_and_positive_finite_timeouts_are_kept(self, timeout: float | None) -> None:
        assert CommandRequest(["x"], timeout=timeout).timeout == timeout

    @pytest.mark.parametrize("build", [CommandRequest, SpawnRequest, ProbeSpec])
    def test_argv_must_name_a_program_and_be_a_sequence(self, build: Callable[..., Any]) -> None:
        for argv in ([], (), "claude"):
            with pytest.raises(InvalidRequestError) as caught:
                build(argv)
            assert caught.value.field == "argv"
        assert build(["claude", "-p"]).argv == ("claude", "-p")

    def test_a_refused_request_is_still_a_value_error(self) -> None:
        with pytest.raises(ValueError, match="argv"):
            CommandRequest([])

    def test_a_nan_timeout_never_reaches_a_started_process(self, tmp_path: Path) -> None:
        marker = tmp_path / "started"
        code = "import pathlib, sys; pathlib.Path(sys.argv[1]).write_text('x')"
        with pytest.raises(InvalidRequestError):
            HostCommandExecutor().run(
                CommandRequest(py(code, str(marker)), env=ENV, timeout=math.nan), RecordingSink()
            )
        assert not marker.exists()

    def test_check_binary_refuses_a_bad_timeout(self) -> None:
        with pytest.raises(InvalidRequestError):
            HostCommandExecutor().check_binary(PY, ENV, timeout=math.nan)


class TestExecutorSettings:
    @pytest.mark.parametrize(
        "settings",
        [
            {"drain_timeout": -1},
            {"drain_timeout": math.nan},
            {"terminate_grace": math.inf},
            {"output_tail": -1},
            {"max_line_bytes": 0},
        ],
        ids=repr,
    )
    def test_impossible_settings_are_refused(self, settings: dict[str, Any]) -> None:
        with pytest.raises(InvalidRequestError) as caught:
            HostCommandExecutor(**settings)
        name = next(iter(settings))
        assert caught.value.field in (name, f"HostCommandExecutor.{name}")
