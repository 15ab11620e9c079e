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
from typing import Any

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
from agentshim.doctor.offline import OfflineCli, offline_cli
from agentshim.providers.acp import AcpAgentConfig
from agentshim.session import Session

from .claude_checks import LONG_TOOL
from .streams import NEEDS_PROC, TURN_TIMEOUT, Background, acp_agent, run_processes, wait_for

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


class Adapter:
    """An adapter installed from npm, pointed at the model server with the offline recipe of
    the CLI behind it, and configured as a user would: by its command line only.

    ``answer`` is what its script answers a plain prompt; ``config`` are the rest of its
    AcpAgentConfig. Its approval handler allows every tool call but one whose name holds
    "denied", and keeps the names it was asked about in ``asked``.
    """

    def __init__(
        self, root: Path, binary: Path, cli: OfflineCli, answer: str, **config: Any
    ) -> None:
        self.answer = answer
        self.cli = cli
        self.work = root / "work"
        self.work.mkdir()
        self.config = AcpAgentConfig(command=[str(binary)], env=dict(cli.env), **config)
        self.asked: list[str] = []

    def agent(
        self,
        transport: TransportKind = TransportKind.LONG_LIVED,
        permissions: NativePermissions | None = None,
    ) -> Agent:
        def decide(request: ApprovalRequest) -> ApprovalDecision:
            self.asked.append(request.tool)
            if "denied" in request.tool:
                return ApprovalDecision.deny("not this one")
            return ApprovalDecision.allow()

        return acp_agent(self.config, decide, dict(self.cli.env), transport, permissions)


def _modes(bypass: str, workspace_write: str, read_only: str) -> dict[NativeMode, str]:
    """An adapter's mode for each native mode (its ``permission_modes``)."""
    return {
        NativeMode.BYPASS: bypass,
        NativeMode.WORKSPACE_WRITE: workspace_write,
        NativeMode.READ_ONLY: read_only,
    }


def _codex_acp(root: Path, server: ModelServer) -> Adapter:
    binary = _installed(CODEX_ACP, CODEX_ACP_VERSION)
    cli = offline_cli("codex", server, root=root, bin_dir=binary.parent)
    return Adapter(
        root,
        binary,
        cli,
        ANSWER,
        name="codex-acp",
        notice_prefixes=(CODEX_WARNING,),
        # It starts read-only; each native mode is one of its presets.
        permission_modes=_modes(
            bypass="full-access", workspace_write="auto", read_only="read-only"
        ),
    )


def _script(answer: str, **touches: str) -> list[Rule]:
    """A prompt holding a word of ``touches`` runs ``touch`` of its file, one holding ``SLOW``
    a long shell call (``LONG_TOOL``); a call's result is answered AFTER_TOOL, anything else ``answer``."""

    def on(word: str, said: str, command: str) -> Rule:
        calls = Message((Text(said), ToolCall(command=command)))
        return Rule(
            match=Match(last_input_is_tool_result=False, user_text_contains=word), respond=calls
        )

    return [
        *(on(word, "Running it.", f"touch {name}") for word, name in touches.items()),
        on("SLOW", "Waiting.", LONG_TOOL),
        Rule(match=Match(last_input_is_tool_result=True), respond=Text(AFTER_TOOL)),
        Rule(respond=Text(answer)),
    ]


@pytest.mark.parametrize("adapter", ["codex-acp"], indirect=True)
class TestCodexAcp:
    def bypass_session(self, adapter: Adapter) -> Session:
        """A session in bypass, codex-acp's "full-access" preset (the sandboxed ones need
        bubblewrap)."""
        return adapter.agent(permissions=NativePermissions.bypass()).start_session(
            str(adapter.work)
        )

    def test_two_turns_a_mode_switch_its_warning_kept_out_and_close(self, adapter: Adapter) -> None:
        events: list[AgentEvent] = []
        with adapter.agent().start_session(str(adapter.work)) as session:
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

    def test_a_tool_runs_in_bypass_and_its_call_is_reported_end_to_end(
        self, adapter: Adapter
    ) -> None:
        events: list[AgentEvent] = []
        with self.bypass_session(adapter) as session:
            result = session.turn("TOUCH it", on_event=events.append).result
        assert result.text.endswith(AFTER_TOOL)
        assert (adapter.work / "made.txt").exists()
        (call,) = [e for e in events if isinstance(e, ToolCallEvent)]
        assert call.tool == "touch made.txt"
        statuses = [e.status for e in events if isinstance(e, ToolCallUpdated)]
        assert statuses[0] == "in_progress"
        assert statuses[-1] == "completed"
        assert [e.exit_code for e in events if isinstance(e, ToolResult)] == [0]

    def test_an_interrupt_mid_tool_ends_the_turn_and_leaves_no_process(
        self, adapter: Adapter
    ) -> None:
        events: list[AgentEvent] = []
        with self.bypass_session(adapter) as session:
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


def _claude_acp(root: Path, server: ModelServer) -> Adapter:
    node = _node22()
    if node is None:
        pytest.skip("claude-agent-acp needs Node.js 22 or later")
    binary = _installed(CLAUDE_ACP, CLAUDE_ACP_VERSION)
    path = os.pathsep.join((str(node), "/usr/local/bin", "/usr/bin", "/bin"))
    cli = offline_cli("claude", server, root=root, bin_dir=binary.parent, path=path)
    return Adapter(
        root,
        binary,
        cli,
        CLAUDE_ANSWER,
        name="claude-agent-acp",
        notice_prefixes=("**Warning:**",),  # Claude Code's notices come as agent text
        # It starts in "auto", which never asks: workspace_write() is its "default".
        permission_modes=_modes(
            bypass="bypassPermissions", workspace_write="default", read_only="plan"
        ),
    )


#: Each adapter: how it is installed and set up, and what the model server answers it.
ADAPTERS = {
    "codex-acp": (_codex_acp, _script(ANSWER, TOUCH="made.txt")),
    "claude-agent-acp": (
        _claude_acp,
        _script(CLAUDE_ANSWER, ALLOWED="allowed.txt", DENIED="denied.txt"),
    ),
}


@pytest.fixture
def adapter(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Adapter]:
    """The adapter of ADAPTERS a test is parametrized with (``indirect=True``), against its
    script; no process of it may be left once the test is done."""
    make, script = ADAPTERS[request.param]
    with ModelServer(script) as server:
        running = make(tmp_path, server)
        yield running
        home = running.cli.home
        wait_for(lambda: run_processes(home, "") == [], 15, f"{running.config.name}'s exit")


@pytest.mark.parametrize("adapter", sorted(ADAPTERS), indirect=True)
def test_one_shot_turns_reopen_the_session_in_a_new_process(adapter: Adapter) -> None:
    with adapter.agent(TransportKind.ONE_SHOT).start_session(str(adapter.work)) as session:
        first = session.turn("Say hello.").result
        second = session.turn("Again.").result
    assert second.session_id == first.session_id
    assert second.resumed
    assert second.text == adapter.answer


@pytest.mark.parametrize("adapter", ["claude-agent-acp"], indirect=True)
class TestClaudeAgentAcp:
    def test_two_turns_a_tool_allowed_one_denied_a_mode_switch_and_close(
        self, adapter: Adapter
    ) -> None:
        events: list[AgentEvent] = []
        with adapter.agent().start_session(str(adapter.work)) as session:
            first = session.turn("Say hello.", on_event=events.append).result
            allowed = session.turn("ALLOWED", on_event=events.append).result
            denied = session.turn("DENIED", on_event=events.append).result
            session.set_mode("plan")
            session.turn("Again.", on_event=events.append)
        assert first.text == CLAUDE_ANSWER
        assert allowed.text.endswith(AFTER_TOOL)
        assert (adapter.work / "allowed.txt").exists()
        assert not (adapter.work / "denied.txt").exists()
        assert denied.stop_reason is not None
        assert adapter.asked == ["touch allowed.txt", "touch denied.txt"]
        modes = [e.mode_id for e in events if isinstance(e, ModeChanged)]
        assert modes[:2] == ["auto", "default"]
        assert modes[-1] == "plan"
        calls = [e.tool_id for e in events if isinstance(e, ToolCallEvent)]
        assert sorted(calls) == sorted(e.tool_id for e in events if isinstance(e, ToolResult))

    def test_an_interrupt_mid_tool_ends_the_turn_and_leaves_no_process(
        self, adapter: Adapter
    ) -> None:
        events: list[AgentEvent] = []
        with adapter.agent().start_session(str(adapter.work)) as session:
            running = Background(lambda: session.turn("SLOW", on_event=events.append).result)
            wait_for(
                lambda: (
                    any(isinstance(e, (ToolResult, ToolCallUpdated)) for e in events)
                    or LONG_TOOL in adapter.asked
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
