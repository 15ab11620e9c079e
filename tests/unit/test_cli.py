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


class TestMcpRecover:
    def test_nothing_to_recover_exits_0(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("AGENTSHIM_STATE_DIR", str(tmp_path / "state"))
        out = io.StringIO()
        assert main(["mcp", "recover", str(tmp_path)], out=out) == 0
        assert out.getvalue() == f"nothing to recover under {tmp_path}\n"

    def test_a_killed_install_is_restored_and_exits_1(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        state = tmp_path / "state"
        monkeypatch.setenv("AGENTSHIM_STATE_DIR", str(state))
        config = tmp_path / ".mcp.json"
        config.write_bytes(b'{"mine": true}\n')
        code = (
            "import os, sys\n"
            "from agentshim.core.mcp_config import install_json_config\n"
            "install_json_config(sys.argv[1], ('mcpServers',), {'s': {'command': 'x'}})\n"
            "os.kill(os.getpid(), 9)\n"
        )
        env = {**os.environ, "PYTHONPATH": str(ROOT), "AGENTSHIM_STATE_DIR": str(state)}
        done = subprocess.run([sys.executable, "-c", code, str(config)], env=env, check=False)
        assert done.returncode == -9
        assert '"s"' in config.read_text()
        out = io.StringIO()
        assert main(["mcp", "recover", str(tmp_path)], out=out) == 1
        assert out.getvalue() == f"restored: {config}\n"
        assert config.read_bytes() == b'{"mine": true}\n'

    def test_recover_needs_a_directory(self) -> None:
        with pytest.raises(SystemExit):
            main(["mcp", "recover"], out=io.StringIO(), err=io.StringIO())
