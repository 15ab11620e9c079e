from __future__ import annotations

import os
from pathlib import Path

import pytest

from agentshim.core.errors import CliCheckError, CliNotFoundError
from agentshim.execution import HostCommandExecutor

ENV = {"PATH": "/usr/bin:/bin"}
# A check's timeout where the check must not time out: only a hang guard, never a measure of
# speed.
GUARD = 60.0


def script(directory: Path, name: str, body: str, *, executable: bool = True) -> str:
    path = directory / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755 if executable else 0o644)
    return str(path)


class TestFindBinary:
    def test_searches_the_path_of_the_given_env(self, tmp_path: Path) -> None:
        found = script(tmp_path, "agentshim-cli", "echo 1")
        assert HostCommandExecutor().find_binary("agentshim-cli", {"PATH": str(tmp_path)}) == found

    def test_not_on_that_path_is_cli_not_found(self, tmp_path: Path) -> None:
        script(tmp_path, "agentshim-cli", "echo 1")
        with pytest.raises(CliNotFoundError) as caught:
            HostCommandExecutor().find_binary("agentshim-cli", ENV)
        assert caught.value.binary == "agentshim-cli"

    def test_a_file_that_is_not_executable_is_not_found(self, tmp_path: Path) -> None:
        script(tmp_path, "agentshim-cli", "echo 1", executable=False)
        with pytest.raises(CliNotFoundError):
            HostCommandExecutor().find_binary("agentshim-cli", {"PATH": str(tmp_path)})

    def test_a_path_is_checked_as_given(self, tmp_path: Path) -> None:
        found = script(tmp_path, "agentshim-cli", "echo 1")
        assert HostCommandExecutor().find_binary(found, {}) == found


class TestCheckBinary:
    def test_a_healthy_binary_passes(self, tmp_path: Path) -> None:
        path = script(tmp_path, "ok", 'test "$1" = --version && echo "ok 1.2.3"')
        HostCommandExecutor().check_binary(path, ENV, timeout=GUARD)

    def test_a_nonzero_exit_fails_with_what_it_said(self, tmp_path: Path) -> None:
        path = script(tmp_path, "broken", "echo 'error: missing runtime' >&2; exit 2")
        with pytest.raises(CliCheckError) as caught:
            HostCommandExecutor().check_binary(path, ENV, timeout=GUARD)
        assert caught.value.path == path
        assert "exited 2" in caught.value.detail
        assert "missing runtime" in caught.value.detail

    def test_a_hanging_binary_fails_after_the_timeout(self, tmp_path: Path) -> None:
        # Waited out instead of timed out, the script would exit 0 and the check would pass.
        path = script(tmp_path, "hangs", "sleep 180")
        with pytest.raises(CliCheckError, match="did not finish"):
            HostCommandExecutor().check_binary(path, ENV, timeout=0.5)

    def test_the_probe_gets_a_pipe_at_end_of_file_not_a_terminal(self, tmp_path: Path) -> None:
        # Waits forever on a terminal; on a pipe at end of file, read fails and it answers.
        path = script(tmp_path, "asks", "if [ -t 0 ]; then sleep 180; fi; read answer; echo v1")
        HostCommandExecutor().check_binary(path, ENV, timeout=GUARD)

    def test_a_missing_binary_fails_the_check(self, tmp_path: Path) -> None:
        with pytest.raises(CliCheckError):
            HostCommandExecutor().check_binary(str(tmp_path / "gone"), ENV, timeout=GUARD)

    def test_the_check_uses_the_given_env(self, tmp_path: Path) -> None:
        path = script(tmp_path, "needs", 'test "$AGENTSHIM_TOKEN" = yes')
        HostCommandExecutor().check_binary(path, {**ENV, "AGENTSHIM_TOKEN": "yes"}, timeout=GUARD)
        with pytest.raises(CliCheckError):
            HostCommandExecutor().check_binary(path, ENV, timeout=GUARD)
        assert os.environ.get("AGENTSHIM_TOKEN") is None


class TestCheckBinaryIsRemembered:
    """A passed health check is not run again on the same unchanged binary and env."""

    def counting(self, directory: Path, *, healthy: bool = True) -> tuple[str, Path]:
        runs = directory / "runs"
        status = 0 if healthy else 3
        return script(directory, "cli", f'echo run >> "{runs}"; echo v1; exit {status}'), runs

    def test_a_second_check_of_the_same_binary_does_not_run_it(self, tmp_path: Path) -> None:
        path, runs = self.counting(tmp_path)
        HostCommandExecutor().check_binary(path, ENV, timeout=GUARD)
        HostCommandExecutor().check_binary(path, ENV, timeout=GUARD)
        assert runs.read_text().splitlines() == ["run"]

    def test_a_changed_binary_is_checked_again(self, tmp_path: Path) -> None:
        path, runs = self.counting(tmp_path)
        HostCommandExecutor().check_binary(path, ENV, timeout=GUARD)
        with open(path, "a") as handle:
            handle.write("# upgraded\n")
        HostCommandExecutor().check_binary(path, ENV, timeout=GUARD)
        assert runs.read_text().splitlines() == ["run", "run"]

    def test_a_touched_binary_is_checked_again(self, tmp_path: Path) -> None:
        path, runs = self.counting(tmp_path)
        HostCommandExecutor().check_binary(path, ENV, timeout=GUARD)
        later = os.stat(path).st_mtime_ns + 5_000_000_000
        os.utime(path, ns=(later, later))
        HostCommandExecutor().check_binary(path, ENV, timeout=GUARD)
        assert runs.read_text().splitlines() == ["run", "run"]

    def test_another_env_is_checked_again(self, tmp_path: Path) -> None:
        path, runs = self.counting(tmp_path)
        HostCommandExecutor().check_binary(path, ENV, timeout=GUARD)
        HostCommandExecutor().check_binary(path, {**ENV, "HOME": str(tmp_path)}, timeout=GUARD)
        assert runs.read_text().splitlines() == ["run", "run"]

    def test_a_failed_check_is_never_remembered(self, tmp_path: Path) -> None:
        path, runs = self.counting(tmp_path, healthy=False)
        for _ in range(2):
            with pytest.raises(CliCheckError):
                HostCommandExecutor().check_binary(path, ENV, timeout=GUARD)
        assert runs.read_text().splitlines() == ["run", "run"]
