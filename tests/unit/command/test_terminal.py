"""``agentshim`` on a real terminal: every stop at every phase, exit codes, colour, closed pipes.

The command runs on a pseudo-terminal of its own (the library's PtyProcess), so Ctrl-C is the
byte a terminal turns into SIGINT, and a fake ``claude`` on PATH (fake_claude.py) starts a
tool process, so a test sees whether a stop reached everything the turn started. Timeouts
here only guard against a hang; nothing asserts how long anything took.
"""

from __future__ import annotations

import json
import os
import re
import select
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentshim.core.event_json import event_from_json
from agentshim.core.events import RawOutput
from tests.unit.agentshim_command import COMMAND, agentshim
from tests.unit.command.terminal import HANG_GUARD_S, Terminal

ROOT = Path(__file__).resolve().parents[3]
FAKE = Path(__file__).resolve().parent / "fake_claude.py"
TOOL_TURN = ROOT / "tests" / "fixtures" / "claude" / "b_tool_bash.stdout.jsonl"
SESSION = "080a6a65-480a-4d27-853f-064fd2b09ac8"

pytestmark = pytest.mark.skipif(
    not hasattr(os, "pidfd_open") or not Path("/proc").is_dir(),
    reason="needs Linux (a pty, /proc and pidfd) to watch the processes",
)


class Fake:
    """A fake ``claude`` in its own bin directory, with a FIFO it announces its phases on."""

    def __init__(self, tmp_path: Path, **config: Any) -> None:
        self.bin = tmp_path / "bin"
        self.bin.mkdir()
        script = self.bin / "claude"
        script.write_text(f"#!{sys.executable}\n" + FAKE.read_text())
        script.chmod(0o755)
        (self.bin / "fake.json").write_text(json.dumps({"fixture": str(TOOL_TURN), **config}))
        os.mkfifo(self.bin / "notices")
        self._reader = os.open(self.bin / "notices", os.O_RDONLY | os.O_NONBLOCK)
        # Held open so the FIFO never reads as ended between two announcements.
        self._writer = os.open(self.bin / "notices", os.O_WRONLY | os.O_NONBLOCK)
        self._pending = b""
        home = tmp_path / "home"
        home.mkdir()
        self.env = {
            "HOME": str(home),  # no rc file for the interactive shell the env comes from
            "PATH": os.pathsep.join([str(self.bin), "/usr/local/bin", "/usr/bin", "/bin"]),
            "PYTHONPATH": str(ROOT),
            "LANG": "C.UTF-8",
            "TERM": "xterm",
        }

    def next_notice(self) -> tuple[str, int]:
        """The next ``(phase, pid)`` the fake announced."""
        while b"\n" not in self._pending:
            ready, _, _ = select.select([self._reader], [], [], HANG_GUARD_S)
            assert ready, "the fake CLI announced nothing"
            self._pending += os.read(self._reader, 4096)
        line, _, self._pending = self._pending.partition(b"\n")
        phase, pid = line.decode().split()
        return phase, int(pid)

    def close(self) -> None:
        os.close(self._reader)
        os.close(self._writer)


def ended(pid: int) -> bool:
    """Whether process ``pid`` has ended (waited for up to the hang guard, without polling)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], HANG_GUARD_S)
        return bool(readable)
    finally:
        os.close(fd)


@pytest.fixture
def opened(tmp_path: Path) -> Iterator[list[Terminal | Fake]]:
    things: list[Terminal | Fake] = []
    yield things
    for thing in things:
        if isinstance(thing, Terminal):
            thing.process.close()
        else:
            thing.close()


def start(
    tmp_path: Path, opened: list[Terminal | Fake], *args: str, **config: Any
) -> tuple[Terminal, Fake]:
    fake = Fake(tmp_path, **config)
    opened.append(fake)
    shown = Terminal(tmp_path, fake.env, *args)
    opened.append(shown)
    return shown, fake


def turn_started(shown: Terminal, fake: Fake) -> tuple[int, int]:
    """Wait until the fake CLI runs its tool and the terminal shows the call; both pids."""
    assert fake.next_notice()[0] == "cli"
    phase, tool = fake.next_notice()
    assert phase == "tool"
    shown.read_until(r"> Bash")
    return int((fake.bin / "log").read_text().split()[1]), tool


class TestStopAtEveryPhase:
    def test_ctrl_c_while_the_prompt_is_read_from_stdin(
        self, tmp_path: Path, opened: list[Terminal | Fake]
    ) -> None:
        shown, fake = start(tmp_path, opened, "run")
        shown.read_until("reading the prompt from stdin")
        shown.type(b"half a prompt\x03")
        assert shown.finish() == 130
        assert not (fake.bin / "log").exists()  # no CLI ever started

    def test_ctrl_c_during_the_version_health_check_ends_it_at_once(
        self, tmp_path: Path, opened: list[Terminal | Fake]
    ) -> None:
        shown, fake = start(tmp_path, opened, "run", "hi", hang_version=True)
        phase, pid = fake.next_notice()
        assert phase == "version"
        shown.type(b"\x03")  # one press: the check has nothing to wait for
        assert shown.finish() == 130
        assert ended(pid)
        assert "interrupted before the CLI answered" in shown.screen
        assert "killing" not in shown.screen

    def test_ctrl_c_during_doctor(self, tmp_path: Path, opened: list[Terminal | Fake]) -> None:
        shown, fake = start(tmp_path, opened, "doctor", "claude", hang_version=True)
        phase, pid = fake.next_notice()
        assert phase == "version"
        shown.type(b"\x03")
        assert shown.finish() == 130
        assert ended(pid)

    def test_ctrl_c_during_the_turn_prints_what_it_got(
        self, tmp_path: Path, opened: list[Terminal | Fake]
    ) -> None:
        shown, fake = start(tmp_path, opened, "run", "list the files")
        cli, tool = turn_started(shown, fake)
        shown.type(b"\x03")
        assert shown.finish() == 130
        assert ended(cli)
        assert ended(tool)
        assert f"interrupted | session {SESSION}" in shown.screen
        # The tokens the status line counted stay in the summary.
        summary = shown.screen.split("interrupted | ")[-1]
        assert "tokens 0 in, 0 out" not in summary
        assert "reported before the interrupt" in summary

    @pytest.mark.parametrize(("signum", "status"), [(signal.SIGTERM, 143), (signal.SIGHUP, 129)])
    def test_sigterm_and_sighup_end_every_process_and_print_what_it_got(
        self, tmp_path: Path, opened: list[Terminal | Fake], signum: int, status: int
    ) -> None:
        shown, fake = start(tmp_path, opened, "run", "list the files")
        cli, tool = turn_started(shown, fake)
        shown.signal(signum)
        assert shown.finish() == status
        assert ended(cli)
        assert ended(tool)
        if signum == signal.SIGTERM:
            assert "SIGTERM: stopping the turn" in shown.screen
        assert f"interrupted | session {SESSION}" in shown.screen

    def test_a_second_sigterm_kills_a_cli_that_ignores_the_first(
        self, tmp_path: Path, opened: list[Terminal | Fake]
    ) -> None:
        shown, fake = start(tmp_path, opened, "run", "list the files", ignore_term=True)
        cli, tool = turn_started(shown, fake)
        shown.signal(signal.SIGTERM)
        shown.read_until("SIGTERM again to kill the CLI")
        shown.signal(signal.SIGTERM)
        assert shown.finish() == 143
        assert "killing the CLI" in shown.screen
        assert ended(cli)
        assert ended(tool)


class TestResume:
    def test_an_unknown_id_fails_and_says_so(
        self, tmp_path: Path, opened: list[Terminal | Fake]
    ) -> None:
        shown, fake = start(tmp_path, opened, "run", "--resume", "gone-1", "and now?")
        assert shown.finish() == 1
        assert "could not resume conversation gone-1" in shown.screen
        assert "--resume-or-new" in shown.screen
        assert not (fake.bin / "log").exists()  # no fresh conversation was started

    def test_resume_or_new_starts_a_new_conversation(
        self, tmp_path: Path, opened: list[Terminal | Fake]
    ) -> None:
        shown, fake = start(
            tmp_path, opened, "run", "--resume", "gone-1", "--resume-or-new", "hi", lines=6
        )
        assert shown.finish() == 0
        assert f"session {SESSION} |" in shown.screen
        assert (fake.bin / "log").read_text().startswith("cli ")


class TestExitCodesAndOutput:
    @pytest.mark.parametrize(
        ("args", "config", "code", "shown"),
        [
            pytest.param(
                ("--resume", "kept-1", "hi"),
                {"lines": 6, "known": ["kept-1"]},
                0,
                "session kept-1 |",
                id="a-known-id-continues",
            ),
            pytest.param(
                ("--model", "bad model", "hi"), {}, 2, "argument --model", id="unknown-model"
            ),
        ],
    )
    def test_a_run_exits_with_its_code_and_says_why(
        self,
        tmp_path: Path,
        opened: list[Terminal | Fake],
        args: tuple[str, ...],
        config: dict[str, Any],
        code: int,
        shown: str,
    ) -> None:
        terminal, _ = start(tmp_path, opened, "run", *args, **config)
        assert terminal.finish() == code
        assert shown in terminal.screen

    def test_json_with_a_missing_cli_writes_an_error_object(self, tmp_path: Path) -> None:
        env = {"HOME": str(tmp_path), "PATH": str(tmp_path), "PYTHONPATH": str(ROOT)}
        done = agentshim(tmp_path, "run", "--json", "hi", env=env)
        assert done.returncode == 3
        error = json.loads(done.stdout.splitlines()[-1])
        assert error["type"] == "error"
        assert error["error"] == "CliNotFoundError"
        assert error["install"] == "npm install -g @anthropic-ai/claude-code"

    def test_no_color_keeps_the_terminal_plain(
        self, tmp_path: Path, opened: list[Terminal | Fake]
    ) -> None:
        fake = Fake(tmp_path, lines=6)
        opened.append(fake)
        coloured = Terminal(tmp_path, fake.env, "run", "hi")
        opened.append(coloured)
        assert coloured.finish() == 0
        assert "\x1b[" in coloured.screen
        plain = Terminal(tmp_path, {**fake.env, "NO_COLOR": "1"}, "run", "hi")
        opened.append(plain)
        assert plain.finish() == 0
        assert "> Bash" in plain.screen
        assert "\x1b[" not in plain.screen

    def test_streamed_text_ends_its_line_before_the_summary(
        self, tmp_path: Path, opened: list[Terminal | Fake]
    ) -> None:
        fake = Fake(tmp_path)
        opened.append(fake)
        for provider in ("gemini", "pi"):
            shown = Terminal(tmp_path, fake.env, "run", "--stand-in", "--provider", provider, "hi")
            opened.append(shown)
            assert shown.finish() == 0
            assert re.search(r"(^|\r?\n)session \S+ \| tokens", shown.screen), shown.screen

    def test_a_closed_pipe_ends_the_command_quietly(self, tmp_path: Path) -> None:
        # What `agentshim run --json hi | head -1` does: read one line, close the pipe.
        env = {**os.environ, "PYTHONPATH": str(ROOT)}
        process = subprocess.Popen(
            [*COMMAND, "run", "--stand-in", "--json", "hi"],
            env=env,
            cwd=tmp_path,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert process.stdout is not None
        assert process.stderr is not None
        first = process.stdout.readline()
        process.stdout.close()
        status = process.wait(timeout=HANG_GUARD_S)
        stderr = process.stderr.read().decode()
        process.stderr.close()
        assert not isinstance(event_from_json(json.loads(first)), RawOutput)
        assert "Traceback" not in stderr
        assert "BrokenPipeError" not in stderr
        assert status in (0, 128 + signal.SIGPIPE)


@pytest.mark.skipif(shutil.which("head") is None, reason="needs head(1)")
def test_json_piped_into_head_prints_one_line_and_no_traceback(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        f"{sys.executable} -m agentshim run --stand-in --json hi | head -1",
        shell=True,
        env=env,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=HANG_GUARD_S,
        check=False,
    )
    assert done.returncode == 0
    assert len(done.stdout.splitlines()) == 1
    assert "Traceback" not in done.stderr
