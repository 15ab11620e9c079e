"""Live: Claude Code's TUI transport on the real pinned binary, against the model server.

Every test runs ``Agent("claude", transport=TransportKind.TUI)`` on the real host executor:
one interactive ``claude`` per session on a pseudo-terminal, driven by its command hooks,
offline (``agentshim.doctor.offline``), the model scripted per test. What is asserted is
what a user sees: results, errors and their kind, events, files the agent wrote, the
processes that ran (counted at ``spawn_pty``, found in ``/proc`` by the run's HOME). The
checks it shares with the stream-json transport are in ``claude_checks.py``.

Run with ``pytest tests/live/test_claude_tui.py -s``; skipped when the pinned claude is not
installed.
"""

from __future__ import annotations

import time

import pytest

from agentshim.core.conversation import TransportKind
from agentshim.core.errors import CliExitError, FailureKind
from agentshim.core.events import Lifecycle, ToolResult
from agentshim.core.events import ToolCall as ToolCallEvent
from agentshim.doctor.model_server import Hang, HttpError, RequestKind, Rule, Text
from agentshim.tools import tool

from . import streams as st
from .claude_checks import ClaudeChecks
from .test_stream_robustness import WakeCountingExecutor
from .test_tools import ANSWER as TOOL_ANSWER
from .test_tools import _script as tool_script

pytestmark = st.NEEDS_PROC

rig, live = st.suite_fixtures("claude", TransportKind.TUI)


class TestClaudeChecks(ClaudeChecks):
    """The checks Claude Code passes on both transports, on its TUI (the approval handler's
    answer goes back through the PermissionRequest hook)."""

    tool_ends_within_s = 5.0
    # The PermissionRequest hook's input does not name the tool call.
    approvals_name_the_call = False


def test_two_turns_run_on_one_process(live: st.Live) -> None:
    live.script(Rule(respond=Text(st.HELLO)))
    with live.session() as session:
        started = time.monotonic()
        first = session.turn("Say hello.").result
        cold_s = time.monotonic() - started
        started = time.monotonic()
        second = session.turn("Say hello\x1b[201~ again.\r\nPlease.").result
        warm_s = time.monotonic() - started
    print(f"\nclaude tui: turn 1 (start-up, trust dialog) {cold_s:.2f} s; turn 2 {warm_s:.2f} s")
    assert first.text == second.text == st.HELLO
    assert len(live.executor.spawned) == 1, live.executor.argvs
    argv = live.executor.argvs[0]
    assert "-p" not in argv
    assert argv[1] == "--session-id"
    assert second.session_id == first.session_id == argv[2]
    assert not first.resumed
    assert second.resumed
    assert first.usage.tokens.input_tokens > 0
    assert "dialog_answered" in [e.kind for e in live.events if isinstance(e, Lifecycle)]
    sent = [r.facts.user_text for r in live.server.requests if "again" in r.facts.user_text]
    assert sent, "the second prompt never reached the model"
    assert "\x1b" not in sent[-1]
    assert "Please." in sent[-1]


def test_a_tool_turn_reports_the_call_and_its_result(live: st.Live) -> None:
    live.script(*st.tool_then_text("echo tui-tool-output"))
    with live.session() as session:
        result = session.turn("Run echo.").result
    assert result.text == st.AFTER_TOOL
    calls = [e for e in live.events if isinstance(e, ToolCallEvent)]
    results = [e for e in live.events if isinstance(e, ToolResult)]
    assert [c.tool for c in calls] == ["Bash"]
    assert "tui-tool-output" in results[0].stdout


def test_a_401_turn_is_auth_within_ten_seconds(live: st.Live) -> None:
    live.script(Rule(respond=Text(st.HELLO), times=1), Rule(respond=HttpError(401)))
    with live.session() as session:
        assert session.turn("Say hello.").result.text == st.HELLO
        started = time.monotonic()
        with pytest.raises(CliExitError) as caught:
            session.turn("Now fail.")
        took = time.monotonic() - started
    print(f"\nclaude tui: 401 turn classified in {took:.2f} s")
    assert caught.value.kind is FailureKind.AUTH
    assert "authentication_failed" in caught.value.detail
    assert took < 10.0


def test_interrupt_while_the_model_is_silent(live: st.Live) -> None:
    live.script(Rule(respond=Hang(60.0), times=1), Rule(respond=Text(st.HELLO)))
    with live.session() as session:
        running = st.Background(lambda: session.turn("Take your time.").result)
        st.wait_for(lambda: st.model_asked(live.server), st.SEEN_WITHIN_S, "the model request")
        time.sleep(0.5)
        session.interrupt()
        assert running.join(st.PROMPT_RETURN_S + st.TURN_TIMEOUT).interrupted
        after = session.turn("Say hello.").result
    assert after.text == st.HELLO
    # The interrupted prompt came back into the input box; it must not ride along.
    last = [r.facts.user_text for r in live.server.requests if r.kind is RequestKind.MAIN][-1]
    assert "Take your time" not in last.split("Say hello")[-1]


def test_close_leaves_no_process_behind(live: st.Live) -> None:
    live.script(Rule(respond=Text(st.HELLO)))
    home = live.rig.cli.home
    with live.session() as session:
        session.turn("Say hello.")
        (pid,) = live.cli_pids()
    st.wait_for(lambda: not st.alive(pid), st.PROMPT_RETURN_S, "the TUI process ending")
    kinds = [e.kind for e in live.events if isinstance(e, Lifecycle)]
    assert kinds.count("dialog_answered") == 1
    # Ctrl-C twice: the CLI exits 0 by itself (no signal was needed).
    ((_, process),) = live.executor.spawned
    assert process.wait(0) == 0
    assert not st.run_processes(home, "claude")


def test_whole_turns_wake_the_reader_on_events_only(live: st.Live) -> None:
    # Start-up (dialogs, SessionStart), the prompt, Stop and the transcript's close: each
    # wait ends on the terminal, a hook, or a single timer, never on a 50 ms clock.
    live.executor = WakeCountingExecutor()
    live.script(Rule(respond=Text(st.HELLO)))
    with live.session() as session:
        first = session.turn("Say hello.").result
        second = session.turn("Say hello again.").result
        (process,) = [p for _, p in live.executor.spawned]
        wakes = process.empty_wakes  # type: ignore[attr-defined]
    print(f"\nclaude tui: {wakes} empty wakes over start-up and two turns")
    assert first.text == second.text == st.HELLO
    assert first.usage.increment_known
    assert second.usage.increment_known
    # Looking every 50 ms was about 60 empty wakes over the same two turns (and the pause
    # before the first paste spun on an undrained FIFO).
    assert wakes <= 20, f"the reader woke {wakes} times with nothing to read"


@pytest.mark.parametrize("attempt", range(5))
def test_the_first_turn_has_the_python_tools(live: st.Live, attempt: int) -> None:
    """Claude Code lists MCP servers in the background; the first prompt waits for the tools."""
    calls: list[tuple[str, int]] = []

    @tool
    def lookup(key: str, count: int) -> str:
        """Look a key up; returns what it holds."""
        calls.append((key, count))
        return f"{count}-blue"

    live.script(*tool_script("claude"))
    agent = live.agent()
    with agent.start_session(str(live.work), tools=(lookup,)) as session:
        result = session.turn("Look up the colour.").result
    first = next(r for r in live.server.requests if r.kind is RequestKind.MAIN)
    assert b"mcp__agentshim__lookup" in first.raw_body, "the first request had no tools"
    assert calls == [("colour", 42)]
    assert result.text == TOOL_ANSWER
