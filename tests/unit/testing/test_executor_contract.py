"""The real executor and its fake pass one contract, so tests on the fake hold for the host."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentshim.core.stream import DEFAULT_MAX_LINE_BYTES
from agentshim.execution import CommandExecutor, CommandRequest, HostCommandExecutor
from agentshim.testing.contracts import ContractProgram, ExecutorContract
from agentshim.testing.executor import FakeExecutor, FakeRun


def _script(program: ContractProgram) -> str:
    """Python source that does what ``program`` says, on a real process."""
    return "\n".join(
        [
            "import os, sys, time",
            f"for name in {program.echo!r}:",
            "    sys.stdout.write(os.environ.get(name, '') + '\\n')",
            *(["sys.stdout.write(os.getcwd() + '\\n')"] if program.echo_cwd else []),
            *(["sys.stdout.write(sys.stdin.read())"] if program.echo_stdin else []),
            "sys.stdout.flush()",
            f"for text in {program.stdout!r}:",
            "    sys.stdout.buffer.write(text.encode()); sys.stdout.flush()",
            f"for text in {program.stderr!r}:",
            "    sys.stderr.buffer.write(text.encode()); sys.stderr.flush()",
            *(["while True: time.sleep(1)"] if program.until_stopped else []),
            f"sys.exit({program.returncode})",
        ]
    )


class TestHostExecutorContract(ExecutorContract):
    base_env = {"PATH": os.environ.get("PATH", os.defpath)}
    use_threads = False

    def stage(
        self, program: ContractProgram, *, max_line_bytes: int | None = None
    ) -> tuple[CommandExecutor, Sequence[str]]:
        executor = HostCommandExecutor(
            use_threads=self.use_threads, max_line_bytes=max_line_bytes or DEFAULT_MAX_LINE_BYTES
        )
        return executor, [sys.executable, "-u", "-c", _script(program)]

    @pytest.fixture(autouse=True)
    def _binaries_in(self, tmp_path: Path) -> None:
        # Staged binaries go in the test's own directory, which pytest removes.
        self._directory = tmp_path

    def stage_binary(self, program: ContractProgram) -> tuple[CommandExecutor, str]:
        path = os.path.join(self._directory, "tool")
        with open(path, "w") as handle:
            handle.write(f"#!{sys.executable}\n{_script(program)}\n")
        os.chmod(path, 0o755)
        return HostCommandExecutor(use_threads=self.use_threads), path


class TestHostExecutorWithThreadsContract(TestHostExecutorContract):
    use_threads = True


def _fake_run(program: ContractProgram, request: CommandRequest) -> FakeRun:
    stdout = [request.env.get(name, "") + "\n" for name in program.echo]
    if program.echo_cwd:
        stdout.append((request.cwd or os.getcwd()) + "\n")
    if program.echo_stdin and request.stdin:
        stdout.append(request.stdin)
    # The program's texts are exact, so no newline is added to a last one left open.
    return FakeRun(
        stdout=[*stdout, *program.stdout],
        stderr=program.stderr,
        returncode=program.returncode,
        final_newline=False,
        until_stopped=program.until_stopped,
    )


class TestFakeExecutorContract(ExecutorContract):
    def stage(
        self, program: ContractProgram, *, max_line_bytes: int | None = None
    ) -> tuple[CommandExecutor, Sequence[str]]:
        executor = FakeExecutor(
            lambda request: _fake_run(program, request),
            max_line_bytes=max_line_bytes or DEFAULT_MAX_LINE_BYTES,
        )
        return executor, ["contract-program"]

    def stage_binary(self, program: ContractProgram) -> tuple[CommandExecutor, str]:
        path = "/opt/contract/tool"
        run = FakeRun(stdout=program.stdout, stderr=program.stderr, returncode=program.returncode)
        return FakeExecutor(versions={path: run}), path
