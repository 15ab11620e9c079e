from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentshim import RawOutput, __version__
from agentshim.command import (
    EXIT_INTERRUPTED,
    EXIT_NOT_INSTALLED,
    EXIT_OK,
    EXIT_TURN_FAILED,
    EXIT_USAGE,
    main,
)
from agentshim.command._caps import flag_name
from agentshim.core.event_json import event_from_json
from agentshim.doctor.clis import find_cli, pinned_cli
from agentshim.providers import DEFAULT_CATALOG, provider_names
from agentshim.providers.catalog import transports_offered
from tests.unit.agentshim_command import agentshim
from tests.unit.command.terminal import Terminal
from tests.unit.execution.execution_helpers import wait_dead

ROOT = Path(__file__).resolve().parents[2]
TOOL_TURN = ROOT / "tests" / "fixtures" / "claude" / "b_tool_bash.stdout.jsonl"


def run_cli(*args: str, stdin: str = "") -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(args), out=out, err=err, stdin=io.StringIO(stdin))
    return code, out.getvalue(), err.getvalue()


def usage_error(capsys: pytest.CaptureFixture[str], *args: str, stdin: str = "") -> str:
    with pytest.raises(SystemExit) as caught:
        main(list(args), out=io.StringIO(), err=io.StringIO(), stdin=io.StringIO(stdin))
    assert caught.value.code == 2
    return capsys.readouterr().err


# -- fake CLIs on PATH, for the subprocess and pty tests -----------------------------------

FAKE_CLAUDE = """#!{python}
# A Claude Code that prints the start of a real tool turn, then works until it is stopped.
import os, signal, sys, time
if "--version" in sys.argv:
    print({version!r})
    sys.exit(0)
with open({pidfile!r}, "w") as f:
    f.write(str(os.getpid()))
if {ignore_term}:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
sys.stdin.read()
lines = open({fixture!r}).read().splitlines()
for line in lines[:{lines}]:
    print(line, flush=True)
if {exit_code} is not None:
    print("the fake CLI failed", file=sys.stderr, flush=True)
    sys.exit({exit_code})
time.sleep(300)  # works on until it is stopped
"""


def fake_claude(
    bin_dir: Path,
    *,
    version: str = "2.1.197 (Claude Code)",
    ignore_term: bool = False,
    lines: int = 3,
    exit_code: int | None = None,
) -> Path:
    bin_dir.mkdir(parents=True, exist_ok=True)
    script = bin_dir / "claude"
    script.write_text(
        FAKE_CLAUDE.format(
            python=sys.executable,
            version=version,
            pidfile=str(bin_dir / "pid"),
            ignore_term=ignore_term,
            fixture=str(TOOL_TURN),
            lines=lines,
            exit_code=exit_code,
        )
    )
    script.chmod(0o755)
    return script


def clean_env(tmp_path: Path, bin_dir: Path | None = None, **extra: str) -> dict[str, str]:
    """An env with HOME under tmp_path (so the interactive shell reads no rc file)."""
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    path = os.pathsep.join(
        [*([str(bin_dir)] if bin_dir else []), "/usr/local/bin", "/usr/bin", "/bin"]
    )
    return {"HOME": str(home), "PATH": path, "PYTHONPATH": str(ROOT), "LANG": "C.UTF-8", **extra}


# -- the command itself ------------------------------------------------------------------


class TestCommand:
    def test_version(self, capsys: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(SystemExit) as caught:
            main(["--version"])
        assert caught.value.code == 0
        assert capsys.readouterr().out == f"agentshim {__version__}\n"

    @pytest.mark.parametrize("command", [[], ["run"], ["doctor"], ["providers"]])
    def test_help_is_plain_text_with_the_exit_codes(
        self, command: list[str], capsys: pytest.CaptureFixture[str]
    ) -> None:
        with pytest.raises(SystemExit):
            main([*command, "--help"])
        text = capsys.readouterr().out
        assert "``" not in text
        assert ":class:" not in text
        if command != ["providers"]:
            assert "exit status:" in text
            assert f"{EXIT_INTERRUPTED}  Ctrl-C" in text

    def test_no_command_shows_the_help_as_a_usage_error(self) -> None:
        code, out, err = run_cli()
        assert code == EXIT_USAGE
        assert out == ""
        assert "COMMAND" in err
        assert "exit status:" in err

    def test_console_script_resolves_to_main(self) -> None:
        tomllib = pytest.importorskip("tomllib")
        project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        module, _, attribute = project["scripts"]["agentshim"].partition(":")
        import importlib

        assert getattr(importlib.import_module(module), attribute) is main

    def test_readme_first_command_runs_from_a_checkout(self) -> None:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
        done = agentshim(ROOT, "run", "--stand-in", "Say hello", env=env)
        assert done.returncode == EXIT_OK, done.stderr
        assert "session " in done.stdout

    def test_runs_from_any_directory(self, tmp_path: Path) -> None:
        done = agentshim(tmp_path, "run", "--stand-in", "Say hello", env=clean_env(tmp_path))
        assert done.returncode == EXIT_OK, done.stderr
        assert "session " in done.stdout


class TestRun:
    def test_stand_in_turn_prints_events_and_the_summary_once(self) -> None:
        code, out, err = run_cli("run", "--stand-in", "Say hello")
        assert code == EXIT_OK, err
        assert "stand-in" in out
        assert "Say hello" in out
        lines = out.strip().splitlines()
        assert lines[-1].startswith("session ")
        assert "tokens" in lines[-1]
        assert [line for line in lines if "tokens" in line or "usage" in line] == [lines[-1]]
        assert "\x1b[" not in out + err  # not a terminal: no colour, no status line

    @pytest.mark.parametrize("provider", ["codex", "gemini", "opencode", "copilot", "pi"])
    def test_stand_in_for_every_provider(self, provider: str) -> None:
        code, out, err = run_cli("run", "--provider", provider, "--stand-in", "hi")
        assert code == EXIT_OK, err
        assert "stand-in" in out

    @pytest.mark.parametrize("prompt", [["-"], []])
    def test_dash_or_no_prompt_reads_stdin(self, prompt: list[str]) -> None:
        code, out, err = run_cli("run", "--stand-in", *prompt, stdin="from the pipe\n")
        assert code == EXIT_OK, err
        assert "'from the pipe'" in out

    def test_empty_stdin_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        message = usage_error(capsys, "run", "--stand-in", "-", stdin="  \n")
        assert "agentshim run: error: argument PROMPT: the prompt is empty" in message

    @pytest.mark.parametrize("value", ["0", "-1", "nan", "inf", "soon"])
    def test_timeout_must_be_positive_seconds(
        self, value: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        message = usage_error(capsys, "run", "--stand-in", "--timeout", value, "hi")
        assert f"argument --timeout: {value!r} is not a positive number of seconds" in message

    def test_cwd_must_be_a_directory(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        message = usage_error(capsys, "run", "--stand-in", "--cwd", str(tmp_path / "no"), "hi")
        assert "argument --cwd:" in message

    def test_cwd_is_where_the_cli_runs(self, tmp_path: Path) -> None:
        code, out, _ = run_cli("run", "--stand-in", "--json", "--cwd", str(tmp_path), "hi")
        assert code == EXIT_OK
        assert json.loads(out.splitlines()[-1])["type"] == "result"

    def test_resume_continues_the_given_session(self) -> None:
        code, out, err = run_cli("run", "--stand-in", "--json", "--resume", "abc-123", "again")
        assert code == EXIT_OK, err
        events = [json.loads(line) for line in out.splitlines()]
        argv = next(e["argv"] for e in events if e["type"] == "run.started")
        assert argv[argv.index("--resume") + 1] == "abc-123"
        assert events[-1]["session_id"] == "abc-123"
        assert events[-1]["resumed"] is True

    def test_resume_refuses_an_unsafe_id(self, capsys: pytest.CaptureFixture[str]) -> None:
        message = usage_error(capsys, "run", "--stand-in", "--resume", "x; rm -rf ~", "hi")
        assert "argument --resume: 'x; rm -rf ~' is not a session id" in message

    def test_transport_choices_are_what_the_providers_offer(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        code, _, err = run_cli("run", "--stand-in", "--transport", "one-shot", "hi")
        assert code == EXIT_OK, err
        message = usage_error(capsys, "run", "--stand-in", "--transport", "pty", "hi")
        assert "argument --transport: invalid choice: 'pty'" in message
        assert "'one-shot', 'long-lived', 'tui'" in message
        # The old spelling of the long-lived transport is refused, not kept as an alias.
        old = "stream"
        message = usage_error(capsys, "run", "--stand-in", "--transport", old, "hi")
        assert f"argument --transport: invalid choice: '{old}'" in message
        message = usage_error(
            capsys, "run", "--stand-in", "--provider", "pi", "--transport", "tui", "hi"
        )
        assert (
            "pi does not offer tui (offered by --provider claude); choose from one-shot, long-lived"
            in message
        )

    def test_a_long_lived_turn_on_the_stand_in_runs_on_one_long_lived_process(self) -> None:
        code, out, err = run_cli("run", "--stand-in", "--transport", "long-lived", "--json", "hi")
        assert code == EXIT_OK, err
        records = [json.loads(line) for line in out.splitlines()]
        started = [r for r in records if r["type"] == "run.started"]
        assert "--input-format" in started[0]["argv"]
        assert "stand-in CLI" in records[-1]["text"]

    def test_json_writes_every_event_then_the_result(self) -> None:
        code, out, err = run_cli("run", "--stand-in", "--json", "Say hello")
        assert code == EXIT_OK, err
        records = [json.loads(line) for line in out.splitlines()]
        types = [r["type"] for r in records]
        assert types[0] == "run.started"
        assert "session.started" in types
        assert "message" in types
        assert "usage" in types
        assert types[-1] == "result"
        # Every event line is the library's stored-event encoding, read back without loss.
        for record in records[:-1]:
            assert not isinstance(event_from_json(record), RawOutput), record
        result = records[-1]
        assert "Say hello" in result["text"]
        assert result["usage"]["tokens"]["output_tokens"] > 0
        assert result["interrupted"] is False
        assert err == ""

    def test_schema_file_asks_the_cli_for_that_shape(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        temp = tmp_path / "tmp"
        temp.mkdir()
        monkeypatch.setattr(tempfile, "tempdir", str(temp))
        schema = {"type": "object", "properties": {"files": {"type": "array"}}}
        path = tmp_path / "answer.json"
        path.write_text(json.dumps(schema))
        # Whether the stand-in answers in that shape is the stand-in's business; the command's
        # is to ask the CLI for it and to leave no schema file behind.
        _, out, _ = run_cli("run", "--stand-in", "--json", "--schema", str(path), "hi")
        records = [json.loads(line) for line in out.splitlines()]
        argv = next(r["argv"] for r in records if r["type"] == "run.started")
        assert json.loads(argv[argv.index("--json-schema") + 1]) == schema
        assert list(temp.iterdir()) == []  # the schema's private directory went with the turn

    @pytest.mark.parametrize(
        ("content", "said"),
        [("[1, 2]", "holds no JSON object"), ("{nope", "is not JSON"), (None, "cannot be read")],
    )
    def test_a_schema_file_that_is_no_schema_is_a_usage_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str], content: str | None, said: str
    ) -> None:
        path = tmp_path / "schema.json"
        if content is not None:
            path.write_text(content)
        message = usage_error(capsys, "run", "--stand-in", "--schema", str(path), "hi")
        assert f"argument --schema: {str(path)!r} {said}" in message

    def test_a_provider_without_output_schemas_refuses_the_flag(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        path = tmp_path / "schema.json"
        path.write_text("{}")
        message = usage_error(
            capsys, "run", "--stand-in", "--provider", "gemini", "--schema", str(path), "hi"
        )
        assert "argument --schema: gemini cannot hold its answer to a schema" in message
        assert "claude, codex" in message

    def test_resume_or_new_needs_resume(self, capsys: pytest.CaptureFixture[str]) -> None:
        message = usage_error(capsys, "run", "--stand-in", "--resume-or-new", "hi")
        assert "argument --resume-or-new" in message

    @pytest.mark.parametrize(
        ("argv", "suggestion"),
        [
            (["runn", "hi"], "did you mean 'run'?"),
            (["run", "--provider", "cladue", "hi"], "did you mean 'claude'?"),
            (["run", "--transport", "long-livd", "hi"], "did you mean 'long-lived'?"),
            (["doctor", "codx"], "did you mean 'codex'?"),
        ],
    )
    def test_a_typo_gets_a_suggestion(
        self, argv: list[str], suggestion: str, capsys: pytest.CaptureFixture[str]
    ) -> None:
        assert suggestion in usage_error(capsys, *argv)

    def test_help_shows_examples(self, capsys: pytest.CaptureFixture[str]) -> None:
        with pytest.raises(SystemExit):
            main(["run", "--help"])
        text = capsys.readouterr().out
        assert "examples:" in text
        assert "agentshim run --stand-in" in text
        assert max(len(line) for line in text.splitlines()) <= 80

    def test_missing_cli_says_how_to_install(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("PATH", str(tmp_path))
        monkeypatch.setattr(
            "agentshim.transport.installed.interactive_env", lambda *a, **k: {"PATH": str(tmp_path)}
        )
        code, _, err = run_cli("run", "hello")
        assert code == EXIT_NOT_INSTALLED
        assert "Claude Code is not installed" in err
        assert "npm install -g @anthropic-ai/claude-code" in err
        assert "--stand-in" in err

    def test_a_failed_turn_exits_1_and_says_why(self, tmp_path: Path) -> None:
        bin_dir = tmp_path / "bin"
        fake_claude(bin_dir, lines=1, exit_code=1)
        done = agentshim(tmp_path, "run", "hi", env=clean_env(tmp_path, bin_dir))
        assert done.returncode == EXIT_TURN_FAILED
        assert "turn failed:" in done.stderr
        assert "Traceback" not in done.stderr
        json_done = agentshim(tmp_path, "run", "--json", "hi", env=clean_env(tmp_path, bin_dir))
        assert json_done.returncode == EXIT_TURN_FAILED
        last = json.loads(json_done.stdout.splitlines()[-1])
        assert last["type"] == "error"
        assert last["error"] == "CliExitError"


class TestProviders:
    def test_a_capability_row_per_provider_in_80_columns(self) -> None:
        code, out, _ = run_cli("providers")
        assert code == EXIT_OK
        assert max(len(line) for line in out.splitlines()) <= 80
        header, rule, *rest = out.splitlines()
        rows = rest[: len(provider_names())]
        for column in ("resume", "MCP", "schema", "effort", "transports", "approvals"):
            assert column in header
        assert set(rule) <= {"-", " "}
        assert [row.split()[0] for row in rows] == list(provider_names())
        cells = {row.split()[0]: re.split(r"\s{2,}", row) for row in rows}
        assert cells["claude"][2] == "config"
        assert cells["codex"][2] == "flags"
        assert cells["pi"][2] == "no"
        assert cells["codex"][3] == "file"
        for name in provider_names():
            profile = DEFAULT_CATALOG.plugin(name).profile
            assert cells[name][1] == ("yes" if profile.supports_resume else "no")
            offered = transports_offered(DEFAULT_CATALOG.plugin(name))
            assert cells[name][5] == ",".join(flag_name(kind) for kind in offered)
        assert cells["claude"][5] == "one-shot,long-lived,tui"

    def test_json_has_every_capability(self) -> None:
        code, out, _ = run_cli("providers", "--json")
        assert code == EXIT_OK
        records = json.loads(out)
        assert [r["provider"] for r in records] == list(provider_names())
        claude = records[0]
        assert claude["cli"] == "Claude Code"
        assert claude["transports"] == ["one-shot", "long-lived", "tui"]
        assert claude["mcp"] == "config file"
        assert claude["approvals"]["long-lived"] == ["deny", "fail-turn", "handler"]
        assert claude["install"] == "npm install -g @anthropic-ai/claude-code"


class TestDoctor:
    def doctor(
        self, tmp_path: Path, *args: str, bin_dir: Path | None = None, **env: str
    ) -> subprocess.CompletedProcess[str]:
        return agentshim(tmp_path, "doctor", *args, env=clean_env(tmp_path, bin_dir, **env))

    def test_the_pinned_version_with_credentials_named_not_shown(self, tmp_path: Path) -> None:
        bin_dir = tmp_path / "bin"
        fake_claude(bin_dir, version=f"{pinned_cli('claude').pinned} (Claude Code)")
        done = self.doctor(
            tmp_path, "claude", "--json", bin_dir=bin_dir, ANTHROPIC_API_KEY="sk-very-secret"
        )
        assert done.returncode == EXIT_OK, done.stdout + done.stderr
        assert "sk-very-secret" not in done.stdout
        (report,) = json.loads(done.stdout)
        assert report["ready"] is True
        assert report["binary"] == str(bin_dir / "claude")
        assert report["binary_source"] == "PATH"
        assert report["version_status"] == "pinned"
        assert report["credentials"] == ["$ANTHROPIC_API_KEY"]

    def test_a_login_file_counts_as_credentials(self, tmp_path: Path) -> None:
        bin_dir = tmp_path / "bin"
        fake_claude(bin_dir)
        login = tmp_path / "home" / ".claude" / ".credentials.json"
        login.parent.mkdir(parents=True)
        login.write_text('{"token": "do-not-print"}')
        done = self.doctor(tmp_path, "claude", bin_dir=bin_dir)
        assert "credentials  ~/.claude/.credentials.json" in done.stdout
        assert "do-not-print" not in done.stdout

    def test_a_newer_version_is_untested_not_broken(self, tmp_path: Path) -> None:
        bin_dir = tmp_path / "bin"
        fake_claude(bin_dir, version="999.0.0 (Claude Code)")
        done = self.doctor(tmp_path, "claude", bin_dir=bin_dir)
        assert done.returncode == EXIT_OK, done.stdout
        assert "claude (Claude Code): ready" in done.stdout
        assert "999.0.0 (Claude Code): untested" in done.stdout
        assert "not known to be broken" in done.stdout
        assert "broken" not in done.stdout.replace("not known to be broken", "")

    def test_a_missing_cli_is_not_ready(self, tmp_path: Path) -> None:
        done = self.doctor(tmp_path, "codex", AGENTSHIM_CLI_DIR=str(tmp_path / "empty"))
        assert done.returncode == EXIT_TURN_FAILED
        assert "codex (Codex CLI): NOT READY" in done.stdout
        assert "codex is not on PATH; install it with: npm install -g @openai/codex" in done.stdout

    def test_every_provider_by_default(self, tmp_path: Path) -> None:
        done = self.doctor(tmp_path, "--json", AGENTSHIM_CLI_DIR=str(tmp_path / "empty"))
        assert [r["provider"] for r in json.loads(done.stdout)] == list(provider_names())

    def test_unknown_provider_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert "argument PROVIDER: unknown provider nosuch" in usage_error(
            capsys, "doctor", "nosuch"
        )

    def test_offline_check_fails_with_the_reason(self, tmp_path: Path) -> None:
        bin_dir = tmp_path / "bin"
        fake_claude(bin_dir, lines=1, exit_code=1)
        done = self.doctor(tmp_path, "claude", "--offline-check", bin_dir=bin_dir)
        assert done.returncode == EXIT_TURN_FAILED
        assert "offline      fail: CliExitError" in done.stdout

    def test_offline_check_passes_with_the_real_cli(self, tmp_path: Path) -> None:
        binary = find_cli("claude")
        if binary is None:
            pytest.skip("the pinned claude CLI is not in the install cache")
        done = self.doctor(tmp_path, "claude", "--offline-check", "--json", bin_dir=binary.parent)
        (report,) = json.loads(done.stdout)
        assert report["offline_check"] == "pass", report
        assert done.returncode == EXIT_OK


# -- a terminal: the status line and Ctrl-C ------------------------------------------------


@pytest.fixture
def terminal(tmp_path: Path) -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for each in opened:
        each.process.close()


def alive(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/stat").read_text().split()[2]
    except OSError:
        return False
    return status != "Z"


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc to see the CLI's process")
class TestTerminal:
    def start(
        self, tmp_path: Path, terminal: list[Terminal], *, ignore_term: bool = False
    ) -> tuple[Terminal, Path]:
        bin_dir = tmp_path / "bin"
        fake_claude(bin_dir, ignore_term=ignore_term)
        shown = Terminal(tmp_path, clean_env(tmp_path, bin_dir), "run", "list the files")
        terminal.append(shown)
        return shown, bin_dir / "pid"

    def test_status_line_shows_time_tokens_and_the_tool_in_colour(
        self, tmp_path: Path, terminal: list[Terminal]
    ) -> None:
        shown, _ = self.start(tmp_path, terminal)
        screen = shown.read_until(r"running Bash")
        assert "I'll run echo." in screen
        # Per-call usage reports count the tokens while the turn runs.
        assert re.search(r"\x1b\[2m\.\.\. \d+s \| [0-9,]+ tokens \| running Bash", screen), screen
        shown.read_until(r"\.\.\. [2-9]s \|")  # redrawn while the CLI stays quiet
        shown.signal(signal.SIGINT)
        assert shown.finish() == EXIT_INTERRUPTED

    def test_first_ctrl_c_interrupts_and_prints_what_it_got(
        self, tmp_path: Path, terminal: list[Terminal]
    ) -> None:
        shown, pidfile = self.start(tmp_path, terminal)
        shown.read_until(r"running Bash")
        shown.signal(signal.SIGINT)
        assert shown.finish() == EXIT_INTERRUPTED
        assert "interrupting the turn (Ctrl-C again to kill the CLI)" in shown.screen
        assert re.search(
            r"interrupted \| session 080a6a65-480a-4d27-853f-064fd2b09ac8", shown.screen
        )
        assert "Traceback" not in shown.screen
        assert not alive(int(pidfile.read_text()))

    def test_second_ctrl_c_kills_a_cli_that_ignores_the_first(
        self, tmp_path: Path, terminal: list[Terminal]
    ) -> None:
        shown, pidfile = self.start(tmp_path, terminal, ignore_term=True)
        shown.read_until(r"running Bash")
        shown.signal(signal.SIGINT)
        shown.read_until(r"Ctrl-C again")
        pid = int(pidfile.read_text())
        assert alive(pid)  # the first Ctrl-C's SIGTERM did not end it
        shown.signal(signal.SIGINT)
        assert shown.finish() == EXIT_INTERRUPTED
        assert "killing the CLI" in shown.screen
        assert "Traceback" not in shown.screen
        assert wait_dead(pid)


class TestMcpRecover:
    def test_nothing_to_recover_exits_0(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("AGENTSHIM_STATE_DIR", str(tmp_path / "state"))
        out = io.StringIO()
        assert main(["mcp", "recover", str(tmp_path)], out=out) == 0
        assert out.getvalue() == f"nothing to recover under {tmp_path}\n"

    def test_a_killed_install_is_restored_and_exits_0(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        state = tmp_path / "state"
        monkeypatch.setenv("AGENTSHIM_STATE_DIR", str(state))
        config = tmp_path / ".mcp.json"
        config.write_bytes(b'{"mine": true}\n')
        code = (
            "import os, sys\n"
            "from agentshim.mcp.install import install_json_config\n"
            "install_json_config(sys.argv[1], ('mcpServers',), {'s': {'command': 'x'}})\n"
            "os.kill(os.getpid(), 9)\n"
        )
        env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENTSHIM_STATE_DIR": str(state)}
        done = subprocess.run([sys.executable, "-c", code, str(config)], env=env, check=False)
        assert done.returncode == -9
        assert '"s"' in config.read_text()
        out = io.StringIO()
        assert main(["mcp", "recover", str(tmp_path)], out=out) == EXIT_OK
        assert out.getvalue() == f"restored: {config}\n"
        assert config.read_bytes() == b'{"mine": true}\n'

    def test_recover_needs_a_directory(self, capsys: pytest.CaptureFixture[str]) -> None:
        assert "DIR" in usage_error(capsys, "mcp", "recover")

    def test_a_missing_directory_is_a_usage_error(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        message = usage_error(capsys, "mcp", "recover", str(tmp_path / "nonexistent"))
        assert "is not a directory" in message
