from __future__ import annotations

import contextlib
import os
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentshim.core.errors import CliNotFoundError
from agentshim.execution.env import (
    clear_interactive_env_cache,
    interactive_env,
    read_interactive_env,
)
from agentshim.execution.executor import CommandRequest
from agentshim.testing import FakeExecutor, FakeRun
from tests.unit.execution.execution_helpers import HANG_GUARD_S, OUTLAST, is_alive, wait_dead

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash")


def home_with_rc(tmp_path: Path, rc: str) -> dict[str, str]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    (home / ".bashrc").write_text(rc)
    return {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}


@pytest.fixture
def fresh_cache() -> Iterator[None]:
    clear_interactive_env_cache()
    yield
    clear_interactive_env_cache()


class TestReadInteractiveEnv:
    def test_reads_what_the_rc_file_exports(self, tmp_path: Path) -> None:
        env = home_with_rc(tmp_path, "export FROM_RC='a value\nwith = signs'\n")
        result = read_interactive_env(base_env=env)
        assert result is not None
        assert result["FROM_RC"] == "a value\nwith = signs"
        assert result["HOME"] == env["HOME"]

    def test_text_printed_by_rc_files_is_ignored(self, tmp_path: Path) -> None:
        rc = "echo 'Welcome!'; printf 'NOT_A_VAR=1\\0'; export REAL=yes\n"
        result = read_interactive_env(base_env=home_with_rc(tmp_path, rc))
        assert result is not None
        assert result["REAL"] == "yes"
        assert "NOT_A_VAR" not in result
        assert not any("Welcome" in key for key in result)

    def test_probe_shell_variables_are_left_out(self, tmp_path: Path) -> None:
        result = read_interactive_env(base_env=home_with_rc(tmp_path, ""))
        assert result is not None
        assert "_" not in result
        assert "SHLVL" not in result

    def test_missing_bash_is_none(self, tmp_path: Path) -> None:
        assert read_interactive_env(bash=str(tmp_path / "no-bash")) is None

    def test_failing_rc_is_none(self, tmp_path: Path) -> None:
        assert read_interactive_env(base_env=home_with_rc(tmp_path, "exit 3\n")) is None

    def test_timeout_is_none_and_kills_what_the_rc_started(self, tmp_path: Path) -> None:
        # Without the timeout the rc would wait out its sleep and the probe would answer.
        pidfile = tmp_path / "pid"
        rc = f"sleep {OUTLAST} & echo $! > {pidfile}; wait\n"
        assert read_interactive_env(0.5, base_env=home_with_rc(tmp_path, rc)) is None
        pid = int(pidfile.read_text())
        assert wait_dead(pid)  # killed: left alone it would sleep past the guard

    def test_background_daemon_does_not_delay_the_answer(self, tmp_path: Path) -> None:
        # The daemon leaves a file behind only if it lives out its sleep: a probe that waited
        # for it (it holds the shell's output) would find the file there.
        pidfile = tmp_path / "pid"
        outlived = tmp_path / "outlived"
        daemon = f"(sleep {OUTLAST}; touch {outlived}) & echo $! > {pidfile}"
        rc = f"{daemon}\nexport AFTER_DAEMON=1\n"
        result = read_interactive_env(HANG_GUARD_S, base_env=home_with_rc(tmp_path, rc))
        pid = int(pidfile.read_text())
        # The host executor ends what the probe left running before it answers.
        running = is_alive(pid)
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
        assert result is not None
        assert result["AFTER_DAEMON"] == "1"
        assert not running
        assert not outlived.exists()


@pytest.mark.usefixtures("fresh_cache")
class TestInteractiveEnv:
    def test_asks_once_and_returns_fresh_copies(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("HOME", home_with_rc(tmp_path, "export CACHED=first\n")["HOME"])
        first = interactive_env()
        assert first["CACHED"] == "first"
        first["CACHED"] = "mutated by caller"
        (tmp_path / "home" / ".bashrc").write_text("export CACHED=second\n")
        assert interactive_env()["CACHED"] == "first"
        clear_interactive_env_cache()
        assert interactive_env()["CACHED"] == "second"

    def test_falls_back_to_the_process_environment(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("PATH", str(tmp_path))  # no bash on this PATH
        monkeypatch.setenv("ONLY_IN_PROCESS", "1")
        assert interactive_env() == dict(os.environ)
        monkeypatch.setenv("SET_LATER", "2")
        assert interactive_env()["SET_LATER"] == "2"


class TestThroughTheExecutor:
    def test_a_fake_executor_answers_the_probe(self) -> None:
        printed = "Welcome!\n\0__agentshim_env_begins__\0PATH=/opt/bin\0MULTI=a\nb\0SHLVL=2\0"
        fake = FakeExecutor(FakeRun(stdout=printed.splitlines(keepends=True), final_newline=False))
        result = read_interactive_env(7.0, base_env={"HOME": "/h"}, executor=fake)
        assert result == {"PATH": "/opt/bin", "MULTI": "a\nb"}
        [request] = fake.requests
        assert list(request.argv[:3]) == ["bash", "-i", "-c"]
        assert dict(request.env) == {"HOME": "/h"}
        assert request.timeout == 7.0

    @pytest.mark.parametrize(
        "run",
        [
            FakeRun(stdout=["\0__agentshim_env_begins__\0A=1\0"], returncode=1),
            FakeRun(stdout=["\0__agentshim_env_begins__\0A=1\0"], timeout=True),
            FakeRun(stdout=["no marker at all\n"]),
        ],
        ids=["exit-1", "timeout", "no-marker"],
    )
    def test_a_failed_probe_is_none(self, run: FakeRun) -> None:
        assert read_interactive_env(executor=FakeExecutor(run)) is None

    def test_a_missing_bash_reported_by_the_executor_is_none(self) -> None:
        def not_found(request: CommandRequest) -> FakeRun:
            raise CliNotFoundError(request.argv[0])

        assert read_interactive_env(bash="no-bash", executor=FakeExecutor(not_found)) is None
