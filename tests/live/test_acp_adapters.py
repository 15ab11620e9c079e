"""Live: third-party ACP adapters through the public generic provider, offline.

``@zed-industries/codex-acp`` (Codex behind ACP) and ``@agentclientprotocol/claude-agent-acp``
(Claude Code behind ACP) are installed from npm into agentshim's CLI cache
(``agentshim.doctor.clis.cache_root()``) on first use and pointed at the scripted model
server with Codex's and Claude Code's offline recipes. Each is named only by its command line
(``AcpAgentConfig``), as a user would name it. Skipped when npm is missing or the install
fails (the Claude adapter also needs Node.js 22: the cache's ``node@22``, else the system's).

Run with ``pytest tests/live/test_acp_adapters.py``.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentshim import Agent
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import TransportKind
from agentshim.core.events import (
    AgentEvent,
    ConfigOptionsChanged,
    ModeChanged,
    ToolCallUpdated,
    ToolResult,
    UsageReport,
)
from agentshim.core.events import ToolCall as ToolCallEvent
from agentshim.core.permissions import NativeMode, NativePermissions
from agentshim.doctor.clis import cache_root
from agentshim.doctor.model_server import Match, Message, ModelServer, Rule, Text, ToolCall
from agentshim.doctor.offline import offline_cli
from agentshim.providers.acp import AcpAgentConfig, acp_catalog

from .claude_checks import LONG_TOOL
from .streams import NEEDS_PROC, TURN_TIMEOUT, Background, alive, wait_for

CLAUDE_ACP = "@agentclientprotocol/claude-agent-acp"
CLAUDE_ACP_VERSION = "0.101.0"
CLAUDE_ANSWER = "Hello from claude-agent-acp."

pytestmark = NEEDS_PROC

CODEX_ACP = "@zed-industries/codex-acp"
CODEX_ACP_VERSION = "0.16.0"
ANSWER = "Hello from codex-acp."
AFTER_TOOL = "The command ran."
# Codex's own warning, which codex-acp sends as agent text before the answer.
CODEX_WARNING = "Model metadata for"


def _installed(package: str, version: str) -> Path:
    directory = cache_root() / f"{package}@{version}"
    binary = directory / "node_modules" / ".bin" / package.rsplit("/", 1)[-1]
    if binary.exists():
        return binary
    npm = shutil.which("npm")
    if npm is None:
        pytest.skip("npm is not on PATH")
    directory.mkdir(parents=True, exist_ok=True)
    argv = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(directory)]
    done = subprocess.run(
        [*argv, f"{package}@{version}"], capture_output=True, text=True, timeout=600, check=False
    )
    if done.returncode != 0 or not binary.exists():
        pytest.skip(f"could not install {package}@{version}: {done.stderr[-300:]}")
    return binary


def _left(home: Path) -> list[int]:
    """Live processes whose environment has this run's HOME."""
    marker = f"HOME={home}".encode()
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            environ = (entry / "environ").read_bytes().split(b"\0")
        except OSError:
            continue
        if marker in environ and alive(int(entry.name)):
            found.append(int(entry.name))
    return found


class CodexAcp:
    def __init__(self, root: Path, server: ModelServer) -> None:
        binary = _installed(CODEX_ACP, CODEX_ACP_VERSION)
        self.cli = offline_cli("codex", server, root=root, bin_dir=binary.parent)
        self.work = root / "work"
        self.work.mkdir()
        self.config = AcpAgentConfig(
            name="codex-acp",
            command=[str(binary)],
            env=dict(self.cli.env),
            notice_prefixes=(CODEX_WARNING,),
            # It starts read-only; each native mode is one of its presets.
            permission_modes={
                NativeMode.BYPASS: "full-access",
                NativeMode.WORKSPACE_WRITE: "auto",
                NativeMode.READ_ONLY: "read-only",
            },
        )

    def agent(
        self,
        transport: TransportKind = TransportKind.LONG_LIVED,
        permissions: NativePermissions | None = None,
    ) -> Agent:
        return Agent(
            "codex-acp",
            permissions=permissions or NativePermissions.workspace_write(),
            approvals=lambda request: ApprovalDecision.allow(),
            env=dict(self.cli.env),
            transport=transport,
            catalog=acp_catalog(self.config),
        )


SCRIPT = [
    Rule(
        match=Match(last_input_is_tool_result=False, user_text_contains="TOUCH"),
        respond=Message((Text("Running it."), ToolCall(command="touch made.txt"))),
    ),
    Rule(
        match=Match(last_input_is_tool_result=False, user_text_contains="SLOW"),
        respond=Message((Text("Waiting."), ToolCall(command="sleep 30"))),
    ),
    Rule(match=Match(last_input_is_tool_result=True), respond=Text(AFTER_TOOL)),
    Rule(respond=Text(ANSWER)),
]


@pytest.fixture
def codex_acp(tmp_path: Path) -> Iterator[CodexAcp]:
    with ModelServer(SCRIPT) as server:
        adapter = CodexAcp(tmp_path, server)
        yield adapter
        wait_for(lambda: _left(adapter.cli.home) == [], 15, "codex-acp's exit")


class TestCodexAcp:
    def test_two_turns_a_mode_switch_its_warning_kept_out_and_close(
        self, codex_acp: CodexAcp
    ) -> None:
        events: list[AgentEvent] = []
        with codex_acp.agent().start_session(str(codex_acp.work)) as session:
            first = session.turn("Say hello.", on_event=events.append).result
            session.set_mode("read-only")
            second = session.turn("Again.", on_event=events.append).result
        assert first.text == ANSWER
        assert second.text == ANSWER
        modes = [e.mode_id for e in events if isinstance(e, ModeChanged)]
        # Put in "auto" for workspace_write() when the session started, then switched.
        assert modes[0] == "read-only"
        assert "auto" in modes
        assert modes[-1] == "read-only"
        assert any(isinstance(e, ConfigOptionsChanged) for e in events)
        assert any(isinstance(e, UsageReport) for e in events)
        assert first.context_window is not None

    def test_one_shot_turns_reopen_the_session_in_a_new_process(self, codex_acp: CodexAcp) -> None:
        with codex_acp.agent(TransportKind.ONE_SHOT).start_session(str(codex_acp.work)) as session:
            first = session.turn("Say hello.").result
            second = session.turn("Again.").result
        assert second.session_id == first.session_id
        assert second.resumed
        assert second.text == ANSWER

    def test_a_tool_runs_in_bypass_and_its_call_is_reported_end_to_end(
        self, codex_acp: CodexAcp
    ) -> None:
        # Its sandboxed presets need bubblewrap; bypass is its "full-access" preset.
        events: list[AgentEvent] = []
        agent = codex_acp.agent(permissions=NativePermissions.bypass())
        with agent.start_session(str(codex_acp.work)) as session:
            result = session.turn("TOUCH it", on_event=events.append).result
        assert result.text.endswith(AFTER_TOOL)
        assert (codex_acp.work / "made.txt").exists()
        (call,) = [e for e in events if isinstance(e, ToolCallEvent)]
        assert call.tool == "touch made.txt"
        statuses = [e.status for e in events if isinstance(e, ToolCallUpdated)]
        assert statuses[0] == "in_progress"
        assert statuses[-1] == "completed"
        assert [e.exit_code for e in events if isinstance(e, ToolResult)] == [0]

    def test_an_interrupt_mid_tool_ends_the_turn_and_leaves_no_process(
        self, codex_acp: CodexAcp
    ) -> None:
        events: list[AgentEvent] = []
        agent = codex_acp.agent(permissions=NativePermissions.bypass())
        with agent.start_session(str(codex_acp.work)) as session:
            running = Background(lambda: session.turn("SLOW", on_event=events.append).result)
            wait_for(
                lambda: any(isinstance(e, ToolCallEvent) for e in events), 60, "the tool's start"
            )
            session.interrupt()
            result = running.join(TURN_TIMEOUT)
            assert result.interrupted
            assert session.turn("Again.").result.text == ANSWER
        ended = {e.tool_id for e in events if isinstance(e, ToolResult)}
        assert ended == {e.tool_id for e in events if isinstance(e, ToolCallEvent)}


def _node22() -> Path | None:
    """A directory holding Node.js 22 or later: the CLI cache's ``node@22``, else PATH's."""
    cached = cache_root() / "node@22" / "node_modules" / "node" / "bin"
    if (cached / "node").exists():
        return cached
    node = shutil.which("node")
    if node is None:
        return None
    version = subprocess.run([node, "--version"], capture_output=True, text=True, check=False)
    major = version.stdout.strip().lstrip("v").split(".")[0]
    return Path(node).parent if major.isdigit() and int(major) >= 22 else None


class ClaudeAcp:
    def __init__(self, root: Path, server: ModelServer) -> None:
        node = _node22()
        if node is None:
            pytest.skip("claude-agent-acp needs Node.js 22 or later")
        binary = _installed(CLAUDE_ACP, CLAUDE_ACP_VERSION)
        path = os.pathsep.join((str(node), "/usr/local/bin", "/usr/bin", "/bin"))
        self.cli = offline_cli("claude", server, root=root, bin_dir=binary.parent, path=path)
        self.work = root / "work"
        self.work.mkdir()
        self.config = AcpAgentConfig(
            name="claude-agent-acp",
            command=[str(binary)],
            env=dict(self.cli.env),
            # Claude Code's notices come as agent text.
            notice_prefixes=("**Warning:**",),
            # It starts in "auto", which never asks: workspace_write() is its "default".
            permission_modes={
                NativeMode.BYPASS: "bypassPermissions",
                NativeMode.WORKSPACE_WRITE: "default",
                NativeMode.READ_ONLY: "plan",
            },
        )
        self.asked: list[str] = []

    def agent(self, transport: TransportKind = TransportKind.LONG_LIVED) -> Agent:
        asked = self.asked

        def decide(request: ApprovalRequest) -> ApprovalDecision:
            asked.append(request.tool)
            if "denied" in request.tool:
                return ApprovalDecision.deny("not this one")
            return ApprovalDecision.allow()

        return Agent(
            "claude-agent-acp",
            permissions=NativePermissions.workspace_write(),
            approvals=decide,
            env=dict(self.cli.env),
            transport=transport,
            catalog=acp_catalog(self.config),
        )


CLAUDE_SCRIPT = [
    Rule(
        match=Match(last_input_is_tool_result=False, user_text_contains="ALLOWED"),
        respond=Message((Text("Running it."), ToolCall(command="touch allowed.txt"))),
    ),
    Rule(
        match=Match(last_input_is_tool_result=False, user_text_contains="DENIED"),
        respond=Message((Text("Running it."), ToolCall(command="touch denied.txt"))),
    ),
    Rule(
        match=Match(last_input_is_tool_result=False, user_text_contains="SLOW"),
        respond=Message((Text("Waiting."), ToolCall(command=LONG_TOOL))),
    ),
    Rule(match=Match(last_input_is_tool_result=True), respond=Text(AFTER_TOOL)),
    Rule(respond=Text(CLAUDE_ANSWER)),
]


@pytest.fixture
def claude_acp(tmp_path: Path) -> Iterator[ClaudeAcp]:
    with ModelServer(CLAUDE_SCRIPT) as server:
        adapter = ClaudeAcp(tmp_path, server)
        yield adapter
        wait_for(lambda: _left(adapter.cli.home) == [], 15, "claude-agent-acp's exit")


class TestClaudeAgentAcp:
    def test_two_turns_a_tool_allowed_one_denied_a_mode_switch_and_close(
        self, claude_acp: ClaudeAcp
    ) -> None:
        events: list[AgentEvent] = []
        with claude_acp.agent().start_session(str(claude_acp.work)) as session:
            first = session.turn("Say hello.", on_event=events.append).result
            allowed = session.turn("ALLOWED", on_event=events.append).result
            denied = session.turn("DENIED", on_event=events.append).result
            session.set_mode("plan")
            session.turn("Again.", on_event=events.append)
        assert first.text == CLAUDE_ANSWER
        assert allowed.text.endswith(AFTER_TOOL)
        assert (claude_acp.work / "allowed.txt").exists()
        assert not (claude_acp.work / "denied.txt").exists()
        assert denied.stop_reason is not None
        assert claude_acp.asked == ["touch allowed.txt", "touch denied.txt"]
        modes = [e.mode_id for e in events if isinstance(e, ModeChanged)]
        assert modes[:2] == ["auto", "default"]
        assert modes[-1] == "plan"
        calls = [e.tool_id for e in events if isinstance(e, ToolCallEvent)]
        assert sorted(calls) == sorted(e.tool_id for e in events if isinstance(e, ToolResult))

    def test_an_interrupt_mid_tool_ends_the_turn_and_leaves_no_process(
        self, claude_acp: ClaudeAcp
    ) -> None:
        events: list[AgentEvent] = []
        with claude_acp.agent().start_session(str(claude_acp.work)) as session:
            running = Background(lambda: session.turn("SLOW", on_event=events.append).result)
            wait_for(
                lambda: (
                    any(isinstance(e, (ToolResult, ToolCallUpdated)) for e in events)
                    or LONG_TOOL in claude_acp.asked
                ),
                60,
                "the tool's start",
            )
            session.interrupt()
            result = running.join(TURN_TIMEOUT)
            assert result.interrupted
            again = session.turn("Again.").result
        assert not again.interrupted
        # The model is next asked with the stopped call's result, which the script answers.
        assert again.text in (CLAUDE_ANSWER, AFTER_TOOL)
        calls = {e.tool_id for e in events if isinstance(e, ToolCallEvent)}
        assert calls == {e.tool_id for e in events if isinstance(e, ToolResult)}

    def test_one_shot_turns_reopen_the_session_in_a_new_process(
        self, claude_acp: ClaudeAcp
    ) -> None:
        agent = claude_acp.agent(TransportKind.ONE_SHOT)
        with agent.start_session(str(claude_acp.work)) as session:
            first = session.turn("Say hello.").result
            second = session.turn("Again.").result
        assert second.session_id == first.session_id
        assert second.resumed
        assert second.text == CLAUDE_ANSWER
