"""The Claude Code TUI transport against the fake interactive CLI, on a real terminal."""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import shutil
import signal
import stat
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from agentshim.agent import Agent
from agentshim.core import lifecycle_kinds as lk
from agentshim.core.approvals import ApprovalDecision, ApprovalRequest
from agentshim.core.conversation import ConversationSpec, Transport, TransportKind
from agentshim.core.errors import (
    ApprovalRequiredError,
    CliExitError,
    FailureKind,
    InvalidRequestError,
    ProviderCapabilityError,
)
from agentshim.core.events import (
    AgentEvent,
    ApprovalAnswered,
    AssistantText,
    Lifecycle,
    RunStarted,
    SessionTitle,
    ToolCall,
    ToolResult,
    TurnInterrupted,
)
from agentshim.core.hooks import HookCallbacks
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.tools import tool
from agentshim.core.turn import TurnRequest
from agentshim.execution import HostCommandExecutor, PtyProcess, PtySize, SpawnRequest
from agentshim.providers.claude import ClaudeProvider
from agentshim.providers.claude.tui_transport import ClaudeTuiConversation, ClaudeTuiTransport
from agentshim.testing import FakeExecutor
from agentshim.testing.claude_tui import FakeTuiScript, FakeTuiTurn, install_fake_claude_tui
from agentshim.testing.long_lived_contract import (
    LongLivedCapability,
    LongLivedConversationContract,
)
from agentshim.testing.session_contracts import ContractTurn
from agentshim.transport.conversation import ProcessOptions
from agentshim.transport.installed import InstalledCli

pytestmark = pytest.mark.skipif(os.name != "posix", reason="the TUI runs on a pseudo-terminal")

BYPASS = NativePermissions.bypass()


class CountingPty:
    """A terminal that counts how often its reader waits on it, and keeps what was written
    to it, with when."""

    def __init__(self, process: PtyProcess) -> None:
        self.process = process
        self.reads = 0
        self.empty_wakes = 0
        self.writes: list[tuple[float, bytes]] = []

    def write(self, data: bytes) -> None:
        self.process.write(data)
        self.writes.append((time.monotonic(), data))

    def read(self, timeout: float | None) -> bytes | None:
        self.reads += 1
        data = self.process.read(timeout)
        self.empty_wakes += not data
        return data

    def __getattr__(self, name: str) -> Any:
        return getattr(self.process, name)


class RecordingExecutor(HostCommandExecutor):
    """The host executor, keeping every terminal it starts (to kill one as an operator would,
    or count its reader's waits)."""

    def __init__(self) -> None:
        super().__init__()
        self.terminals: list[CountingPty] = []
        self.requests: list[SpawnRequest] = []

    def spawn_pty(self, request: SpawnRequest, size: PtySize | None = None) -> PtyProcess:
        self.requests.append(request)
        process = CountingPty(super().spawn_pty(request, size))
        self.terminals.append(process)
        return cast(PtyProcess, process)


class Rig:
    """A fake CLI install, its HOME and a work directory."""

    def __init__(self, root: Path, script: FakeTuiScript) -> None:
        self.root = root
        self.home = root / "home"
        self.work = root / "work"
        self.home.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        self.binary = install_fake_claude_tui(root / "bin", script)
        self.env = {"PATH": "/usr/bin:/bin", "HOME": str(self.home), "SECRET_TOKEN": "s3cr3t"}
        self.executor = RecordingExecutor()
        self.context = InstalledCli(
            provider=ClaudeProvider(),
            executor=self.executor,
            binary_path=str(self.binary),
            env=self.env,
        )

    def transport(self, **timing: float) -> ClaudeTuiTransport:
        values = {"first_paste_delay": 0.0, "submit_retry_after": 0.5, "transcript_wait": 1.0}
        values.update(timing)
        return ClaudeTuiTransport(self.context, scratch_cwd=str(self.root / "scratch"), **values)

    def open(
        self,
        *,
        permissions: NativePermissions = BYPASS,
        approvals: object = ApprovalPolicy.DENY,
        resume_session_id: str | None = None,
        cwd: str | None = "work",
        **timing: float,
    ) -> ClaudeTuiConversation:
        spec = ConversationSpec(
            permissions=permissions,
            approvals=approvals,  # type: ignore[arg-type]
            cwd=str(self.work) if cwd == "work" else cwd,
            resume_session_id=resume_session_id,
        )
        return self.transport(**timing).open(spec)


@pytest.fixture
def make(tmp_path: Path) -> Iterator[object]:
    opened: list[ClaudeTuiConversation] = []

    def build(script: FakeTuiScript, **options: object) -> tuple[Rig, ClaudeTuiConversation]:
        rig = Rig(tmp_path, script)
        conversation = rig.open(**options)  # type: ignore[arg-type]
        opened.append(conversation)
        return rig, conversation

    yield build
    for conversation in opened:
        conversation.close()


def _pids_of(binary: Path) -> list[int]:
    found: list[int] = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if str(binary).encode() in cmdline and state != "Z":
            found.append(int(entry.name))
    return found


def _kinds(events: Sequence[AgentEvent], kind: str) -> list[Lifecycle]:
    return [e for e in events if isinstance(e, Lifecycle) and e.kind == kind]


def test_two_turns_run_on_one_process_with_reply_usage_and_title(make) -> None:  # type: ignore[no-untyped-def]
    _rig, conversation = make(
        FakeTuiScript(
            [FakeTuiTurn("one", input_tokens=120, output_tokens=7), FakeTuiTurn("two")],
            title="Fake title",
        )
    )
    events: list[AgentEvent] = []
    first = conversation.turn(TurnRequest("hi"), events.append)
    second = conversation.turn(TurnRequest("again"), events.append)
    assert (first.text, second.text) == ("one", "two")
    assert first.session_id == second.session_id == conversation.session_id
    assert not first.resumed
    assert second.resumed
    assert first.usage.tokens.input_tokens == 120
    assert first.usage.tokens.output_tokens == 7
    assert first.usage.increment_known
    assert len([e for e in events if isinstance(e, RunStarted)]) == 1
    assert [e.title for e in events if isinstance(e, SessionTitle)] == ["Fake title"]
    assert [e.text for e in events if isinstance(e, AssistantText)] == ["one", "two"]


def test_the_argv_names_the_session_and_settings_and_carries_no_secret(make) -> None:  # type: ignore[no-untyped-def]
    rig, conversation = make(FakeTuiScript([FakeTuiTurn("ok")]))
    events: list[AgentEvent] = []
    result = conversation.turn(TurnRequest("hi"), events.append)
    (started,) = [e for e in events if isinstance(e, RunStarted)]
    argv = list(started.argv)
    assert argv[:3] == [str(rig.binary), "--session-id", result.session_id]
    settings_file = Path(argv[argv.index("--settings") + 1])
    assert "--dangerously-skip-permissions" in argv
    assert not any("s3cr3t" in part for part in argv)
    mode = stat.S_IMODE(settings_file.stat().st_mode)
    assert mode == 0o600
    assert stat.S_IMODE(settings_file.parent.stat().st_mode) == 0o700
    conversation.close()
    assert not settings_file.parent.exists(), "the private directory outlived the conversation"


def test_the_trust_dialog_is_answered_in_either_order(tmp_path: Path) -> None:
    for refuse_first in (False, True):
        rig = Rig(
            tmp_path / str(refuse_first),
            FakeTuiScript([FakeTuiTurn("in")], trust_prompt=True, refuse_first=refuse_first),
        )
        conversation = rig.open()
        events: list[AgentEvent] = []
        try:
            assert conversation.turn(TurnRequest("hi"), events.append).text == "in"
        finally:
            conversation.close()
        assert [e.detail for e in _kinds(events, "dialog_answered")] == ["trust"]


def test_a_lost_enter_is_retried_once(make) -> None:  # type: ignore[no-untyped-def]
    _, conversation = make(
        FakeTuiScript([FakeTuiTurn("took it"), FakeTuiTurn("next")], drop_enters=1)
    )
    events: list[AgentEvent] = []
    assert conversation.turn(TurnRequest("hi"), events.append).text == "took it"
    assert len(_kinds(events, "submit_retried")) == 1
    events.clear()
    assert conversation.turn(TurnRequest("hi"), events.append).text == "next"
    assert _kinds(events, "submit_retried") == []


def test_the_enter_comes_after_the_paste_not_with_it(make) -> None:  # type: ignore[no-untyped-def]
    # The fake drops an Enter that arrives with the paste. Whether it saw the two apart is up
    # to when a busy machine let it read, so what is checked is what the transport wrote: the
    # paste, and Enter on its own at least the 30 ms pause later (a bound no load can break).
    rig, conversation = make(FakeTuiScript([FakeTuiTurn("first try")], enter_race=0.01))
    assert conversation.turn(TurnRequest("hi"), lambda e: None).text == "first try"
    writes = rig.executor.terminals[-1].writes
    pasted = next(n for n, (_, data) in enumerate(writes) if b"hi" in data)
    (pasted_at, paste), (entered_at, enter) = writes[pasted], writes[pasted + 1]
    assert paste.endswith(b"\x1b[201~")
    assert enter == b"\r"
    assert entered_at - pasted_at >= 0.03


def test_a_stop_failure_is_classified_at_once_and_the_conversation_goes_on(make) -> None:  # type: ignore[no-untyped-def]
    _, conversation = make(
        FakeTuiScript(
            [
                FakeTuiTurn(
                    error="authentication_failed",
                    error_text="Invalid API key · Fix external API key",
                ),
                FakeTuiTurn(error="rate_limit", error_text="API Error: 429"),
                FakeTuiTurn("fine again"),
            ]
        )
    )
    # A failure left to the turn's timeout (a minute) would end in CliTimeoutError instead.
    with pytest.raises(CliExitError) as auth:
        conversation.turn(TurnRequest("go", timeout=60), lambda e: None)
    assert auth.value.kind is FailureKind.AUTH
    assert "authentication_failed" in auth.value.detail
    with pytest.raises(CliExitError) as limited:
        conversation.turn(TurnRequest("go"), lambda e: None)
    assert limited.value.kind is FailureKind.TRANSIENT
    assert conversation.turn(TurnRequest("go"), lambda e: None).text == "fine again"


def test_an_auth_failure_before_ready_is_auth_with_its_marker_and_tail(make) -> None:  # type: ignore[no-untyped-def]
    rig, conversation = make(
        FakeTuiScript(auth_failure="Not logged in · Please run /login"), start_timeout=60
    )
    # Waiting for readiness instead would end a minute later in TurnTimeoutError.
    with pytest.raises(CliExitError) as caught:
        conversation.turn(TurnRequest("hi"), lambda e: None)
    assert caught.value.kind is FailureKind.AUTH
    assert caught.value.detail in ("Not logged in", "Please run /login")
    assert "Please run /login" in caught.value.stdout
    assert "Please run /login" in str(caught.value)
    assert _pids_of(rig.binary) == []


def test_usage_is_read_when_the_transcript_lags_the_hook(make) -> None:  # type: ignore[no-untyped-def]
    _, conversation = make(
        FakeTuiScript([FakeTuiTurn("late", input_tokens=300, transcript_delay=0.4)])
    )
    result = conversation.turn(TurnRequest("hi"), lambda e: None)
    assert result.text == "late"
    assert result.usage.tokens.input_tokens == 300
    assert result.usage.increment_known


def test_a_transcript_too_late_leaves_usage_unknown_but_the_reply_intact(make) -> None:  # type: ignore[no-untyped-def]
    _, conversation = make(
        FakeTuiScript([FakeTuiTurn("reply first", transcript_delay=3.0)]), transcript_wait=0.3
    )
    events: list[AgentEvent] = []
    result = conversation.turn(TurnRequest("hi"), events.append)
    assert result.text == "reply first"
    assert not result.usage.increment_known
    assert len(_kinds(events, "usage_unknown")) == 1


class _Submitted:
    """An event handler that keeps a turn's events and says when its prompt was submitted."""

    def __init__(self) -> None:
        self.events: list[AgentEvent] = []
        self.submitted = threading.Event()

    def __call__(self, event: AgentEvent) -> None:
        self.events.append(event)
        if isinstance(event, Lifecycle) and event.kind == "prompt_submitted":
            self.submitted.set()


def test_interrupt_presses_esc_and_the_next_turn_gets_a_clean_box(make) -> None:  # type: ignore[no-untyped-def]
    _, conversation = make(FakeTuiScript([FakeTuiTurn(hang=True), FakeTuiTurn("after")]))
    seen = _Submitted()

    def interrupt_once_submitted() -> None:
        if seen.submitted.wait(60):
            conversation.interrupt()

    helper = threading.Thread(target=interrupt_once_submitted)
    helper.start()
    # An interrupt that did not end the turn would leave it to its timeout (CliTimeoutError).
    result = conversation.turn(TurnRequest("wait", timeout=60), seen)
    helper.join(60)
    assert not helper.is_alive()
    assert result.interrupted
    assert any(isinstance(e, TurnInterrupted) for e in seen.events)
    after = conversation.turn(TurnRequest("next"), seen)
    assert after.text == "after"


class _Keeping(HostCommandExecutor):
    def __init__(self) -> None:
        super().__init__()
        self.processes: list[PtyProcess] = []

    def spawn_pty(self, request: SpawnRequest, size: PtySize | None = None) -> PtyProcess:
        process = super().spawn_pty(request, size)
        self.processes.append(process)
        return process


def test_a_silent_turn_wakes_its_reader_only_when_something_happens(make) -> None:  # type: ignore[no-untyped-def]
    rig, conversation = make(FakeTuiScript([FakeTuiTurn(hang=True)]))
    seen = _Submitted()
    runner = threading.Thread(target=lambda: conversation.turn(TurnRequest("wait"), seen))
    runner.start()
    assert seen.submitted.wait(30), "the prompt was never submitted"
    (terminal,) = rig.executor.terminals
    before = terminal.reads
    time.sleep(2.0)  # two seconds of a turn in which nothing happens
    woke = terminal.reads - before
    conversation.interrupt()
    runner.join(30)
    assert not runner.is_alive()
    assert woke <= 5, f"the reader woke {woke} times in 2 s of silence"


def test_a_whole_turn_wakes_its_reader_on_events_not_on_a_clock(make) -> None:  # type: ignore[no-untyped-def]
    # A slow start with the trust dialog, then a transcript that lags the Stop hook: every
    # wait a clock would fill (50 ms looks) instead ends on the screen, a hook, or one timer.
    slow = FakeTuiTurn("late", input_tokens=300, transcript_delay=0.6)
    rig, conversation = make(
        FakeTuiScript([slow], trust_prompt=True, startup_delay=1.0), transcript_wait=3.0
    )
    events: list[AgentEvent] = []
    result = conversation.turn(TurnRequest("hi"), events.append)
    assert result.text == "late"
    assert result.usage.tokens.input_tokens == 300
    assert result.usage.increment_known
    assert [e.detail for e in _kinds(events, "dialog_answered")] == ["trust"]
    (terminal,) = rig.executor.terminals
    # Looking every 50 ms would be about 30 empty wakes in the 1.6 s of silence alone.
    assert terminal.empty_wakes <= 12, f"{terminal.empty_wakes} empty wakes in one turn"


def test_close_ends_the_process_with_ctrl_c_and_leaves_nothing(tmp_path: Path) -> None:
    rig = Rig(tmp_path, FakeTuiScript([FakeTuiTurn("hi")]))
    executor = _Keeping()
    context = dataclasses.replace(rig.context, executor=executor)
    conversation = ClaudeTuiTransport(context, first_paste_delay=0.0).open(
        ConversationSpec(permissions=BYPASS, approvals=ApprovalPolicy.DENY, cwd=str(rig.work))
    )
    conversation.turn(TurnRequest("hi"), lambda e: None)
    assert len(_pids_of(rig.binary)) == 1
    conversation.close()
    assert _pids_of(rig.binary) == []
    (process,) = executor.processes
    assert process.returncode == 0, "the CLI did not exit on Ctrl-C twice"


def test_an_approval_handler_answers_the_permission_hook(make) -> None:  # type: ignore[no-untyped-def]
    asked: list[ApprovalRequest] = []

    def handler(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision.allow({"command": "ls -la"})

    _rig, conversation = make(
        FakeTuiScript([FakeTuiTurn("ran", tool="Bash", tool_input={"command": "ls"}, ask=True)]),
        permissions=NativePermissions.workspace_write([str(Path.cwd())]),
        approvals=handler,
    )
    events: list[AgentEvent] = []
    assert conversation.turn(TurnRequest("list"), events.append).text == "ran"
    assert [r.args for r in asked] == [{"command": "ls"}]
    (answer,) = [e for e in events if isinstance(e, ApprovalAnswered)]
    assert answer.allowed
    assert answer.decided_by == "handler"
    (result,) = [e for e in events if isinstance(e, ToolResult)]
    assert "ls -la" in result.stdout
    assert [e.tool for e in events if isinstance(e, ToolCall)] == ["Bash"]


def test_read_only_denies_and_fail_turn_fails(make, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    turn = FakeTuiTurn("after deny", tool="Bash", tool_input={"command": "touch x"}, ask=True)
    _, conversation = make(FakeTuiScript([turn]), permissions=NativePermissions.read_only())
    events: list[AgentEvent] = []
    assert conversation.turn(TurnRequest("touch"), events.append).text == "after deny"
    (answer,) = [e for e in events if isinstance(e, ApprovalAnswered)]
    assert not answer.allowed
    assert answer.decided_by == "read_only"
    rig = Rig(tmp_path / "strict", FakeTuiScript([turn]))
    strict = rig.open(
        permissions=NativePermissions.workspace_write([str(rig.work)]),
        approvals=ApprovalPolicy.FAIL_TURN,
    )
    try:
        with pytest.raises(ApprovalRequiredError):
            strict.turn(TurnRequest("touch"), lambda e: None)
    finally:
        strict.close()


def test_the_weekly_limit_banner_is_a_rate_limit_event(make) -> None:  # type: ignore[no-untyped-def]
    _, conversation = make(FakeTuiScript([FakeTuiTurn("one"), FakeTuiTurn("two")], weekly_used=42))
    events: list[AgentEvent] = []
    conversation.turn(TurnRequest("hi"), events.append)
    conversation.turn(TurnRequest("hi"), events.append)
    assert [e.detail for e in _kinds(events, "rate_limit")] == ["weekly 42% used"]


def test_a_prompt_of_only_controls_is_refused_and_one_with_escapes_is_sanitized(make) -> None:  # type: ignore[no-untyped-def]
    rig, conversation = make(FakeTuiScript([FakeTuiTurn("clean")]))
    with pytest.raises(InvalidRequestError):
        conversation.turn(TurnRequest("\x1b\x07\x00"), lambda e: None)
    result = conversation.turn(TurnRequest("say \x1b[201~ hi\r\nthere"), lambda e: None)
    assert result.text == "clean"
    hooks = next((Path(p) for p in rig.home.rglob("*.jsonl")), None)
    assert hooks is not None
    assert "say [201~ hi\\nthere" in hooks.read_text()


def test_no_cwd_runs_in_the_stable_scratch_directory(make) -> None:  # type: ignore[no-untyped-def]
    rig, conversation = make(FakeTuiScript([FakeTuiTurn("a")], trust_prompt=True), cwd=None)
    events: list[AgentEvent] = []
    conversation.turn(TurnRequest("hi"), events.append)
    conversation.close()
    scratch = rig.root / "scratch"
    assert scratch.is_dir()
    assert any(p.parent.name.endswith("scratch") for p in rig.home.rglob("*.jsonl"))


def test_a_turn_cannot_change_the_model_or_schema_of_the_running_process(make) -> None:  # type: ignore[no-untyped-def]
    _, conversation = make(FakeTuiScript([FakeTuiTurn("a")]))
    with pytest.raises(ProviderCapabilityError):
        conversation.turn(TurnRequest("hi", model="other-model"), lambda e: None)


def test_an_executor_without_a_terminal_is_refused(tmp_path: Path) -> None:
    context = InstalledCli(
        provider=ClaudeProvider(), executor=FakeExecutor([]), binary_path="/bin/claude"
    )
    with pytest.raises(ProviderCapabilityError):
        ClaudeTuiTransport(context).open(
            ConversationSpec(permissions=BYPASS, approvals=ApprovalPolicy.DENY)
        )


def test_hooks_and_tools_on_another_machine_are_refused_rather_than_dropped() -> None:
    def ping(text: str) -> str:
        """Echo ``text``."""
        return text

    context = InstalledCli(
        provider=ClaudeProvider(), executor=HostCommandExecutor(), binary_path="/bin/claude"
    )
    hooks = ConversationSpec(
        permissions=BYPASS, approvals=ApprovalPolicy.DENY, hooks=HookCallbacks()
    )
    with pytest.raises(ProviderCapabilityError, match="LONG_LIVED"):
        ClaudeTuiTransport(context).open(hooks)
    remote = dataclasses.replace(context, executor=FakeExecutor([]))
    tools = ConversationSpec(permissions=BYPASS, approvals=ApprovalPolicy.DENY, tools=(tool(ping),))
    with pytest.raises(ProviderCapabilityError, match="HostCommandExecutor"):
        ClaudeTuiTransport(remote).open(tools)


def test_the_first_prompt_waits_until_the_cli_has_listed_the_python_tools(
    tmp_path: Path,
) -> None:
    # The CLI connects its MCP servers after SessionStart, in the background: a prompt sent
    # before the bridge's tools are listed would meet "No such tool available".
    ran: list[str] = []

    def lookup(key: str) -> str:
        """Look ``key`` up."""
        ran.append(key)
        return f"{key} is blue"

    turn = FakeTuiTurn("looked up", tool="mcp__agentshim__lookup", tool_input={"key": "sky"})
    rig = Rig(tmp_path, FakeTuiScript([turn], mcp_list_delay=1.0))
    conversation = rig.transport().open(
        ConversationSpec(
            permissions=BYPASS,
            approvals=ApprovalPolicy.DENY,
            cwd=str(rig.work),
            tools=(tool(lookup),),
        )
    )
    events: list[AgentEvent] = []
    try:
        assert conversation.turn(TurnRequest("look"), events.append).text == "looked up"
    finally:
        conversation.close()
    assert ran == ["sky"]
    results = [e for e in events if isinstance(e, ToolResult) and e.tool == "lookup"]
    assert [e.stdout for e in results] == ["sky is blue"]


@pytest.fixture
def private_tmp(monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A temp root of this test's own, so another run's files in /tmp cannot be taken for ours.

    Short (under /tmp, not under ``tmp_path``) because the tools' socket lives in it.
    """
    root = Path(tempfile.mkdtemp(prefix="t"))
    monkeypatch.setattr(tempfile, "tempdir", str(root))
    try:
        yield root
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_a_python_tool_is_served_through_the_bridge_asked_and_reported(
    tmp_path: Path, private_tmp: Path
) -> None:
    ran: list[str] = []

    def lookup(key: str) -> str:
        """Look ``key`` up."""
        ran.append(key)
        return f"{key} is blue"

    asked: list[ApprovalRequest] = []

    def handler(request: ApprovalRequest) -> ApprovalDecision:
        asked.append(request)
        return ApprovalDecision.allow()

    call = FakeTuiTurn(
        "looked up", tool="mcp__agentshim__lookup", tool_input={"key": "sky"}, ask=True
    )
    rig = Rig(
        tmp_path,
        FakeTuiScript(
            [call, FakeTuiTurn("again", tool="mcp__agentshim__lookup", tool_input={"key": "sea"})]
        ),
    )
    conversation = rig.transport().open(
        ConversationSpec(
            permissions=NativePermissions.workspace_write([str(rig.work)]),
            approvals=handler,
            cwd=str(rig.work),
            tools=(tool(lookup),),
        )
    )
    events: list[AgentEvent] = []
    try:
        assert conversation.turn(TurnRequest("look"), events.append).text == "looked up"
        (run,) = [e for e in events if isinstance(e, RunStarted)]
        config = Path(run.argv[run.argv.index("--mcp-config") + 1])
        assert stat.S_IMODE(config.stat().st_mode) == 0o600
        written = config.read_text()
        assert conversation.turn(TurnRequest("again"), events.append).text == "again"
    finally:
        conversation.close()
    assert ran == ["sky", "sea"]
    # Where the CLI asks (the first call), its hook asks the handler; the socket then asks it
    # for every call that reaches it, asked by the CLI or not.
    assert [(r.tool, dict(r.args)) for r in asked] == [
        ("mcp__agentshim__lookup", {"key": "sky"}),
        ("lookup", {"key": "sky"}),
        ("lookup", {"key": "sea"}),
    ]
    at_socket = [r.tool_id for r in asked if r.tool == "lookup"]
    reported = [e for e in events if isinstance(e, ToolCall) and e.tool == "lookup"]
    assert [e.tool_id for e in reported] == at_socket
    results = [e.stdout for e in events if isinstance(e, ToolResult) and e.tool == "lookup"]
    assert results == ["sky is blue", "sea is blue"]
    # The bridge's credential is in the CLI's environment only: argv and the file name it.
    (request,) = rig.executor.requests
    env = dict(request.env or {})
    (bridge,) = json.loads(written)["mcpServers"].values()
    [(variable, reference)] = bridge["env"].items()
    assert variable.startswith("AGENTSHIM_TOOLS_CREDENTIAL_")
    credential = env[reference.removeprefix("${").removesuffix("}")]
    assert len(credential) >= 32
    assert not any(credential in arg for arg in run.argv)
    assert credential not in written
    assert "${AGENTSHIM_" in written
    assert not config.exists()
    left = sorted(os.listdir(private_tmp))
    assert not left, f"left behind: {left}"


def test_agent_offers_the_tui_transport_for_claude_only() -> None:
    agent = Agent(
        "claude", permissions=BYPASS, approvals=ApprovalPolicy.DENY, transport=TransportKind.TUI
    )
    assert isinstance(agent.transport, ClaudeTuiTransport)
    with pytest.raises(ProviderCapabilityError):
        Agent("pi", permissions=BYPASS, approvals=ApprovalPolicy.DENY, transport=TransportKind.TUI)


# -- the shared contracts, on the fake ----------------------------------------------------------


def _script(turns: Sequence[ContractTurn]) -> FakeTuiScript:
    return FakeTuiScript([FakeTuiTurn(turn.text, hang=turn.hang) for turn in turns])


# -- the shared contract, on the fake ---------------------------------------------------------


def _script(turns: Sequence[ContractTurn]) -> FakeTuiScript:
    return FakeTuiScript(
        [
            FakeTuiTurn(t.text, hang=t.hang, ask=t.ask, tool="Bash", tool_input={"command": "ls"})
            if t.ask
            else FakeTuiTurn(t.text, hang=t.hang)
            for t in turns
        ]
    )


class TestClaudeTuiContract(LongLivedConversationContract):
    """The contract on the fake interactive CLI: a real process on a real terminal.

    The terminal carries no protocol lines to break, and the TUI takes no steer. Nor can an
    interrupt go unanswered: Esc gets no answer from the CLI, the turn ends a moment after it.
    """

    capabilities = LongLivedCapability.APPROVALS
    short_s = 1.0  # the fake CLI is a Python process: it takes a moment to start

    @pytest.fixture(autouse=True)
    def _root(self, tmp_path: Path) -> None:
        self.root = tmp_path
        self.rigs: list[Rig] = []

    def make_transport(
        self, turns: Sequence[ContractTurn], options: ProcessOptions | None = None
    ) -> Transport:
        rig = Rig(self.root / str(len(self.rigs)), _script(turns))
        self.rigs.append(rig)
        return rig.transport(**(options or {}))  # type: ignore[arg-type]

    def saw_event(self, event: AgentEvent) -> None:
        if isinstance(event, Lifecycle) and event.kind == lk.PROMPT_SUBMITTED:
            self.prompt_reached.set()

    def _terminals(self) -> list[CountingPty]:
        return [terminal for rig in self.rigs for terminal in rig.executor.terminals]

    def kill_cli(self) -> None:
        for pid in _pids_of(self.rigs[-1].binary):
            os.kill(pid, signal.SIGKILL)
            with contextlib.suppress(ChildProcessError):  # not ours, or reaped already
                os.waitid(os.P_PID, pid, os.WEXITED | os.WNOWAIT)

    def cli_processes(self) -> int:
        return sum(1 for rig in self.rigs for _ in _pids_of(rig.binary))
