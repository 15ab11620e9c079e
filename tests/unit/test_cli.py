from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agentshim.cli import main

ROOT = Path(__file__).resolve().parents[2]


class TestRun:
    def test_stand_in_turn_prints_events_and_summary(self) -> None:
        out, err = io.StringIO(), io.StringIO()
        code = main(["run", "--stand-in", "Say hello"], out=out, err=err)
        assert code == 0, err.getvalue()
        text = out.getvalue()
        assert "stand-in" in text
        assert "Say hello" in text
        summary = text.strip().splitlines()[-1]
        assert summary.startswith("session ")
        assert "tokens" in summary

    @pytest.mark.parametrize("provider", ["codex", "gemini", "opencode", "copilot", "pi"])
    def test_stand_in_for_every_provider(self, provider: str) -> None:
        out, err = io.StringIO(), io.StringIO()
        assert main(["run", "--provider", provider, "--stand-in", "hi"], out=out, err=err) == 0, (
            err.getvalue()
        )
        assert "stand-in" in out.getvalue()

    def test_missing_cli_says_how_to_install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setenv("PATH", "/nonexistent")
        monkeypatch.setattr(
            "agentshim.cli_agent.interactive_env", lambda *a, **k: {"PATH": "/nonexistent"}
        )
        out, err = io.StringIO(), io.StringIO()
        code = main(["run", "hello"], out=out, err=err)
        assert code == 2
        assert "not installed" in err.getvalue()
        assert "--stand-in" in err.getvalue()

    def test_providers_lists_every_builtin(self) -> None:
        out = io.StringIO()
        assert main(["providers"], out=out) == 0
        assert [line.split("\t")[0] for line in out.getvalue().splitlines()] == [
            "claude",
            "codex",
            "gemini",
            "opencode",
            "copilot",
            "pi",
        ]


def test_readme_first_command_runs_from_a_checkout() -> None:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    proc = subprocess.run(
        [sys.executable, "-m", "agentshim", "run", "--stand-in", "Say hello"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        env=env,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr
    assert "session " in proc.stdout
