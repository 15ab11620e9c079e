from __future__ import annotations

import json
import os
import signal
import stat
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from agentshim import CliAgent
from agentshim.core.errors import (
    CliExitError,
    CliTimeoutError,
    FailureKind,
    McpConfigError,
    ProviderCapabilityError,
    SessionResumeError,
)
from agentshim.core.events import (
    AgentEvent,
    CallbackEventHandler,
    SessionStarted,
    ToolCall,
    ToolResult,
)
from agentshim.core.mcp import HttpMcpServer, StdioMcpServer
from agentshim.core.permissions import NativePermissions
from agentshim.core.turn import TurnRequest
from agentshim.core.usage import TokenUsage
from agentshim.execution.executor import CommandRequest
from agentshim.execution.host import HostCommandExecutor
from agentshim.providers.gemini import GeminiProvider
from agentshim.testing import FakeExecutor, FakeRun, RecordingEventHandler, installed_mcp_servers
from tests.unit.execution.execution_helpers import wait_dead
from tests.unit.providers.fixtures import load_capture

BIN = "/usr/bin/gemini"
ENV = {"PATH": "/usr/bin"}


def agent_for(
    runs: Any, *, provider: GeminiProvider | None = None
) -> tuple[CliAgent, FakeExecutor, RecordingEventHandler]:
    recorder = RecordingEventHandler()
    fake = FakeExecutor(runs, binaries={"gemini": BIN})
    agent = CliAgent(provider or "gemini", executor=fake, env=ENV, event_handlers=recorder)
    return agent, fake, recorder


def exit_error(
    returncode: int, *, stderr: str = "", kind: FailureKind = FailureKind.OTHER, detail: str = ""
) -> CliExitError:
    return CliExitError(
        ["gemini", "--output-format", "stream-json"],
        returncode,
        "",
        stderr,
        kind=kind,
        detail=detail,
    )


class TestRecordedTurnsThroughTheAgent:
    def test_plain(self) -> None:
        agent, _, recorder = agent_for(load_capture("gemini", "plain").fake_run())
        result = agent.run("Say hello.")
        assert result.text == "Hello from the fake model."
        assert result.session_id == "46294fb8-1bce-4d0d-be6d-0bb81ca98aa8"
        assert result.usage.tokens == TokenUsage(input_tokens=200, output_tokens=20, turns=1)
        assert result.cost_usd is None
        assert result.exit_code == 0
        assert not result.resumed
        assert recorder.of_type(SessionStarted) == [SessionStarted(result.session_id)]

    def test_tool_shell(self) -> None:
        agent, _, recorder = agent_for(load_capture("gemini", "tool_shell_yolo").fake_run())
        result = agent.run("TOOL: run echo hello")
        assert result.text == "Done."
        assert [c.tool for c in recorder.of_type(ToolCall)] == ["run_shell_command"]
        assert [r.stdout for r in recorder.of_type(ToolResult)] == ["hello"]

    def test_tool_not_registered_turn_still_succeeds(self) -> None:
        agent, _, recorder = agent_for(
            load_capture("gemini", "tool_shell_default_approval").fake_run()
        )
        result = agent.run("TOOL: run echo hello")
        assert result.text == "Done."
        assert recorder.of_type(ToolResult)[0].failed

    def test_resume_by_uuid(self) -> None:
        agent, fake, _ = agent_for(load_capture("gemini", "resume_by_uuid").fake_run())
        session = agent.start_session(session_id="0516902a-c752-4b12-ab4c-e4c301a72044")
        result = session.turn("Say hello again.")
        assert result.resumed
        assert result.session_id == "0516902a-c752-4b12-ab4c-e4c301a72044"
        assert "--resume" in fake.requests[-1].argv

    def test_json_output_format_fails_loudly(self) -> None:
        agent, _, _ = agent_for(load_capture("gemini", "plain_json_format").fake_run())
        with pytest.raises(CliExitError) as caught:
            agent.run("Say hello.")
        assert "result frame" in caught.value.detail


# The kind of failure each exit code of the Gemini CLI stands for.
KINDS_BY_EXIT_CODE = {
    41: FailureKind.AUTH,
    145: FailureKind.AUTH,
    244: FailureKind.TRANSIENT,
    1: FailureKind.OTHER,
}


class TestClassifyExit:
    @pytest.mark.parametrize(("code", "kind"), KINDS_BY_EXIT_CODE.items())
    def test_exit_codes(self, code: int, kind: FailureKind) -> None:
        classified = GeminiProvider().classify_exit(exit_error(code), resumed=False)
        assert isinstance(classified, CliExitError)
        assert classified.kind is kind
        assert classified.returncode == code

    @pytest.mark.parametrize(
        ("stderr", "kind"),
        [
            (
                "_ApiError: Your input exceeds the context window of this model.",
                FailureKind.CONTEXT_OVERFLOW,
            ),
            (
                "The input token count (1200000) exceeds the maximum number of tokens allowed",
                FailureKind.CONTEXT_OVERFLOW,
            ),
            (
                '{"error":{"code":400,"message":"bad field","status":"INVALID_ARGUMENT"}}',
                FailureKind.OTHER,
            ),
        ],
    )
    def test_http_400_is_read_from_its_message(self, stderr: str, kind: FailureKind) -> None:
        classified = GeminiProvider().classify_exit(exit_error(144, stderr=stderr), resumed=False)
        assert isinstance(classified, CliExitError)
        assert classified.kind is kind

    def test_a_kind_from_the_stream_wins_over_the_exit_code(self) -> None:
        error = exit_error(145, kind=FailureKind.USAGE_LIMIT, detail="quota exceeded")
        assert GeminiProvider().classify_exit(error, resumed=False) is error

    def test_429_on_a_resumed_turn_stays_transient(self) -> None:
        error = exit_error(1, kind=FailureKind.TRANSIENT, detail="429 Too Many Requests")
        classified = GeminiProvider().classify_exit(error, resumed=True)
        assert not isinstance(classified, SessionResumeError)
        assert isinstance(classified, CliExitError)
        assert classified.kind is FailureKind.TRANSIENT

    def test_exit_42_without_the_resume_text_is_not_a_resume_error(self) -> None:
        classified = GeminiProvider().classify_exit(
            exit_error(42, stderr="Input error: bad arguments"), resumed=True
        )
        assert not isinstance(classified, SessionResumeError)

    def test_no_previous_sessions_is_a_resume_error(self) -> None:
        # What 0.61.0 prints when the project has no sessions at all.
        error = CliExitError(
            ["gemini", "--output-format", "stream-json", "--resume", "abc"],
            42,
            "",
            "Error resuming session: No previous sessions found for this project.\n",
        )
        classified = GeminiProvider().classify_exit(error, resumed=True)
        assert isinstance(classified, SessionResumeError)
        assert classified.session_id == "abc"


def _settings(workspace: Path) -> dict[str, Any]:
    return json.loads((workspace / ".gemini" / "settings.json").read_text())


class TestMcp:
    def test_servers_are_installed_for_the_turn_and_removed_after(self, tmp_path: Path) -> None:
        (tmp_path / ".gemini").mkdir()
        original = {"general": {"vimMode": True}, "mcpServers": {"mine": {"command": "keep"}}}
        (tmp_path / ".gemini" / "settings.json").write_text(json.dumps(original))
        seen: dict[str, Any] = {}
        plain = load_capture("gemini", "plain").fake_run()

        def run(request: CommandRequest) -> FakeRun:
            seen["servers"] = installed_mcp_servers("gemini", request, tmp_path)
            seen["file"] = _settings(tmp_path)
            seen["env"] = dict(request.env)
            return plain

        agent, _, _ = agent_for(run)
        stdio = StdioMcpServer("files", "/usr/bin/mcp-files", ("--root", "/w"), {"TOKEN": "t"})
        http = HttpMcpServer("docs", "https://example.test/mcp", headers={"Authorization": "x"})
        sse = HttpMcpServer("old", "https://example.test/sse", transport="sse", tool_timeout=2.5)
        agent.run(TurnRequest("hi", cwd=str(tmp_path), mcp_servers=(stdio, http, sse)))
        assert seen["servers"]["files"] == {
            "command": "/usr/bin/mcp-files",
            "args": ["--root", "/w"],
            "env": {"TOKEN": "t"},
        }
        assert seen["servers"]["docs"] == {"url": "https://example.test/mcp", "transport": "http"}
        assert seen["servers"]["old"] == {"url": "https://example.test/sse", "transport": "sse"}
        written = seen["file"]["mcpServers"]
        header = written["docs"].pop("headers")["Authorization"]
        assert written["docs"] == {"url": "https://example.test/mcp", "type": "http", "trust": True}
        # The file names a variable; the secret is only in the CLI's environment.
        assert header.startswith("${AGENTSHIM_MCP_")
        assert seen["env"][header[2:-1]] == "x"
        assert written["old"]["timeout"] == 2500
        assert written["mine"] == {"command": "keep"}
        assert seen["file"]["general"] == {"vimMode": True}
        assert _settings(tmp_path) == original

    def test_read_only_does_not_trust_servers(self, tmp_path: Path) -> None:
        provider = GeminiProvider(permissions=NativePermissions.read_only())
        install = provider.install_mcp(tmp_path, [StdioMcpServer("s", "srv")])
        try:
            assert _settings(tmp_path)["mcpServers"]["s"]["trust"] is False
        finally:
            install.restore()
        assert not (tmp_path / ".gemini").exists()

    def test_no_servers_touch_nothing(self, tmp_path: Path) -> None:
        install = GeminiProvider().install_mcp(tmp_path, [])
        assert list(install.argv) == []
        assert install.restore() is None
        assert list(tmp_path.iterdir()) == []

    def test_startup_timeout_cannot_be_expressed(self, tmp_path: Path) -> None:
        with pytest.raises(ProviderCapabilityError, match="startup"):
            GeminiProvider().install_mcp(tmp_path, [StdioMcpServer("s", "srv", startup_timeout=5)])
        assert list(tmp_path.iterdir()) == []

    def test_servers_need_a_workspace(self) -> None:
        with pytest.raises(McpConfigError):
            GeminiProvider().install_mcp(None, [StdioMcpServer("s", "srv")])


_FAKE_GEMINI = """#!{python}
import os, subprocess, sys, time
if "--version" in sys.argv:
    print("0.61.0")
    sys.exit(0)
# Like the real CLI, re-spawn itself as a child that does the work.
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
with open({pidfile!r}, "w") as f:
    f.write(str(child.pid))
print('{{"type":"init","timestamp":"t","session_id":"s-1","model":"auto"}}', flush=True)
time.sleep(60)
"""


def _fake_gemini(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """Install the self-re-spawning fake CLI; return the env that finds it and its pid file."""
    pidfile = tmp_path / "child.pid"
    script = tmp_path / "gemini"
    script.write_text(_FAKE_GEMINI.format(python=sys.executable, pidfile=str(pidfile)))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{tmp_path}:{os.environ.get('PATH', '')}"}, pidfile


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc")
class TestProcessGroup:
    def test_a_timed_out_turn_leaves_no_grandchild(self, tmp_path: Path) -> None:
        env, pidfile = _fake_gemini(tmp_path)
        agent = CliAgent("gemini", executor=HostCommandExecutor(), env=env)
        session = agent.start_session(cwd=str(tmp_path))
        with pytest.raises(CliTimeoutError) as caught:
            session.turn(TurnRequest("hi", timeout=2.0))
        assert caught.value.partial is not None
        assert caught.value.partial.session_id == "s-1"
        pid = int(pidfile.read_text())
        assert wait_dead(pid, 15)

    def test_a_cancelled_turn_leaves_no_grandchild(self, tmp_path: Path) -> None:
        env, pidfile = _fake_gemini(tmp_path)
        started = threading.Event()

        def on_event(event: AgentEvent) -> None:
            if isinstance(event, SessionStarted):
                started.set()

        handler = CallbackEventHandler(on_event)
        agent = CliAgent("gemini", executor=HostCommandExecutor(), env=env, event_handlers=handler)
        session = agent.start_session(cwd=str(tmp_path))
        outcome: list[BaseException] = []

        def cancel_once_started() -> None:
            # The fake CLI prints its init frame after spawning the grandchild; on a loaded
            # machine starting two interpreters can take many seconds.
            if started.wait(60):
                session.cancel(grace=5.0)
            else:
                outcome.append(AssertionError("the turn never reported SessionStarted"))

        canceller = threading.Thread(target=cancel_once_started, daemon=True)
        canceller.start()
        # The timeout is only a backstop (the fake sleeps 60 s); the cancel ends the turn.
        result = session.turn(TurnRequest("hi", timeout=120.0))
        canceller.join(60)
        assert outcome == []
        assert result.interrupted
        assert result.exit_code == -signal.SIGTERM
        assert session.session_id == "s-1"
        pid = int(pidfile.read_text())
        assert wait_dead(pid, 15)


class TestStartsAsOneNodeProcess:
    """The CLI is asked not to relaunch itself, and gets the heap limit the relaunch gave it."""

    def test_a_turn_runs_without_the_relaunch_and_with_half_the_memory_as_heap(self) -> None:
        agent, fake, _ = agent_for(load_capture("gemini", "plain").fake_run())
        agent.run("Say hello.")
        (request,) = fake.requests
        assert request.env["GEMINI_CLI_NO_RELAUNCH"] == "true"
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        expected = f"--max-old-space-size={total // (2 * 1024 * 1024)}"
        assert request.env["NODE_OPTIONS"] == expected

    def test_the_callers_env_wins(self) -> None:
        fake = FakeExecutor(load_capture("gemini", "plain").fake_run(), binaries={"gemini": BIN})
        env = {**ENV, "GEMINI_CLI_NO_RELAUNCH": "", "NODE_OPTIONS": "--no-warnings"}
        CliAgent("gemini", executor=fake, env=env).run("Say hello.")
        (request,) = fake.requests
        assert request.env["GEMINI_CLI_NO_RELAUNCH"] == ""
        assert request.env["NODE_OPTIONS"] == "--no-warnings"
