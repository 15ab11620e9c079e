"""ClaudeTuiTransport: one interactive ``claude`` per conversation, driven on a terminal.

For deployments that can only use the interactive CLI. The process runs on a pseudo-terminal
of its own (``PtyExecutor.spawn_pty``) with a settings file of the transport's (in a private
directory, mode 0600) registering command hooks; the hooks, never the screen, say when the
CLI is ready (SessionStart), took a prompt (UserPromptSubmit), finished a turn (Stop, with
the reply in ``last_assistant_message``) or failed one (StopFailure, with its ``error``).
Prompts go in as a bracketed paste, sanitized, then Enter a moment later; Enter is sent once
more when no UserPromptSubmit came within ``submit_retry_after``. Tool calls, tool results,
per-call usage and the conversation's title are read from the session transcript, which may
lag the hooks (best effort). The screen is read only for the start-up dialogs (answered),
authentication failures before the CLI is ready (a typed AUTH error at once) and the
weekly-limit banner (``Lifecycle("rate_limit")``).

Threading: a turn runs on the thread that calls :meth:`ClaudeTuiConversation.turn`, the only
one that reads the terminal and the hooks and the only one that sends events or calls the
approval handler; ``interrupt`` and ``close`` may come from any thread (they wake it).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import tempfile
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from agentshim.core import lifecycle_kinds as lk
from agentshim.core.conversation import ConversationSpec, TransportKind, TurnStop
from agentshim.core.errors import (
    AgentShimError,
    CliDiedError,
    CliExitError,
    FailureKind,
    InvalidRequestError,
    ProcessClosedError,
    ProviderCapabilityError,
    TurnTimeoutError,
)
from agentshim.core.events import (
    AgentEvent,
    Emit,
    Lifecycle,
    RunFinished,
    RunStarted,
    SessionStarted,
    SessionTitle,
    TurnInterrupted,
    UsageReport,
    UsageScope,
)
from agentshim.core.jsonvalues import as_str
from agentshim.core.permissions import NativeMode
from agentshim.core.provider import (
    ParserContext,
)
from agentshim.core.turn import TurnRequest, TurnResult
from agentshim.core.usage import ProviderUsage
from agentshim.execution.process import ProcessExited, SpawnRequest
from agentshim.execution.pty_process import PtyExecutor, PtyProcess
from agentshim.tools.local import refuse_remote_executor
from agentshim.transport.conversation import (
    LiveTurn,
    LongLivedConversation,
    ProcessOptions,
    ProcessTransport,
)
from agentshim.transport.fixed import refuse_fixed_changes
from agentshim.transport.installed import InstalledCli
from agentshim.transport.watch import TurnWatch

from .failures import StreamFailure, classify
from .parser import ClaudeStreamParser
from .provider import PROFILE, ClaudeProvider
from .transcript import TITLE_FIELD, TITLE_RECORD
from .tui_argv import tui_argv
from .tui_protocol import (
    CLEAR_LINE,
    CTRL_C,
    ENTER,
    ESCAPE,
    EVENTS_FILE,
    WAKE_FIFO,
    HookRecord,
    approval_request,
    auth_marker,
    dialog_answer,
    hook_output,
    munged_cwd,
    parse_hook_line,
    paste,
    sanitize_prompt,
    screen_text,
    send_answer,
    tui_settings,
    weekly_limit_used,
)
from .tui_tools import TuiTools, TuiWaits
from .tui_transcript import TURN_END, TranscriptFollower, transcript_path

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = ["ClaudeTuiConversation", "ClaudeTuiTransport"]

_TRANSCRIPT_SETTLE = 0.2
"""After Stop, how long after the CLI last drew something the transcript is looked at once
more: Claude Code flushes its transcript on a short timer of its own and draws nothing then."""
_TAIL_CHARS = 64 * 1024
"""How much of what the terminal showed is kept (for errors and the dialogs)."""
_DIALOG_QUIET = 0.5
"""How long a dialog must stay still on screen before it is answered (it may redraw)."""
_KEY_GAP = 0.3
"""Between two keys that answer one dialog."""
_INTERRUPT_SETTLE = 1.0
"""After Esc, how long a Stop may still come before the turn counts as interrupted."""


class ClaudeTuiTransport(ProcessTransport):
    """A Transport whose conversations each keep one interactive ``claude`` on a terminal.

    ``context`` resolves the installed CLI on first use; its executor must be a
    :class:`~agentshim.execution.PtyExecutor` (the host executor is). ``turn_timeout`` is
    the budget of a turn whose request sets none; ``start_timeout`` how long the CLI may take
    to fire SessionStart; ``submit_retry_after`` how long after Enter a UserPromptSubmit must
    come before Enter is sent once more; ``paste_to_enter`` the pause between the paste and
    Enter (the CLI drops an Enter that arrives with the paste); ``first_paste_delay`` the
    pause after SessionStart before the first paste; ``transcript_wait`` how long after Stop
    the transcript may take to close the turn (for usage); ``interrupt_grace`` and
    ``close_grace`` bound an interrupt and each step of closing. ``scratch_cwd`` is where a
    conversation without a cwd runs (default ``~/.cache/agentshim/claude-tui/cwd``, stable,
    so the workspace trust the CLI remembers by path is asked for once).
    """

    kind = TransportKind.TUI

    def __init__(
        self,
        context: InstalledCli | Callable[[], InstalledCli],
        *,
        submit_retry_after: float = 2.0,
        paste_to_enter: float = 0.03,
        first_paste_delay: float = 0.75,
        transcript_wait: float = 1.0,
        scratch_cwd: str | None = None,
        **options: Unpack[ProcessOptions],
    ) -> None:
        super().__init__(context, **options)
        self.timing = _Timing(
            ready=self.start_timeout,
            retry=submit_retry_after,
            paste_to_enter=paste_to_enter,
            first_paste=first_paste_delay,
            transcript=transcript_wait,
        )
        self.scratch_cwd = scratch_cwd

    profile = PROFILE
    """Claude Code's capabilities."""

    def open(self, spec: ConversationSpec) -> ClaudeTuiConversation:
        """Open a conversation; its process starts with its first turn.

        Raises:
            ProviderCapabilityError: the CLI is not Claude Code, its executor cannot
                start a process on a terminal (or, with Python tools, runs it on another
                machine), or ``spec`` asks for hook callbacks (the stream transport has them).
        """
        provider = self._provider(ClaudeProvider, "Claude Code's terminal protocol")
        if spec.hooks is not None:
            raise ProviderCapabilityError(
                "the Claude Code TUI transport has no hook callbacks; use "
                "TransportKind.LONG_LIVED, which has them"
            )
        context = self.context
        if spec.tools:
            refuse_remote_executor(context.executor)
        if not isinstance(context.executor, PtyExecutor):
            raise ProviderCapabilityError(
                f"the TUI transport needs an executor that can start a process on a terminal "
                f"(HostCommandExecutor); {type(context.executor).__name__} cannot; use "
                "TransportKind.LONG_LIVED with this executor"
            )
        return ClaudeTuiConversation(self, provider, context.executor, spec)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Timing:
    """The transport's waits of its own, in seconds (the graces are every transport's)."""

    ready: float
    retry: float
    paste_to_enter: float
    first_paste: float
    transcript: float


class _Terminal:
    """One running interactive CLI: its terminal, its private directory, what it showed."""

    def __init__(
        self, pty: PtyProcess, argv: list[str], directory: Path, session_id: str, cwd: str
    ) -> None:
        self.pty = pty
        self.argv = tuple(argv)
        self.directory = directory
        self.session_id = session_id
        self.cwd = cwd
        self.tail = ""
        self.events_offset = 0
        self.events_partial = b""
        self.ready_at: float | None = None
        self.pasted = False
        self.transcript = TranscriptFollower()
        self.titles: set[str] = set()
        self.weekly: int | None = None
        self.wake: int | None = None
        self.tools: TuiTools | None = None
        self.waits: TuiWaits | None = None

    def wait(self, timeout: float | None) -> bytes | None:
        """What the terminal drew next; None when a hook ran, on a wake, or after ``timeout``.

        The hooks' FIFO is drained after each wait, so a hook that ran wakes the reader once
        (an undrained byte would keep the FIFO readable and every later wait would return at
        once).
        """
        data = self.pty.read(timeout)
        if self.wake is not None:
            with contextlib.suppress(BlockingIOError, OSError):
                while os.read(self.wake, 4096):
                    pass
        if self.tools is not None:
            # A tool call runs here, on the turn's thread, as on every other transport.
            self.tools.serving.ready()
        return data

    def show(self, data: bytes) -> str:
        """Keep what the terminal drew; return its words."""
        text = data.decode("utf-8", "replace")
        self.tail = (self.tail + text)[-_TAIL_CHARS:]
        return screen_text(text)

    def words(self) -> str:
        """The words of the kept tail."""
        return screen_text(self.tail)

    def hooks(self) -> list[HookRecord]:
        """The hook records appended since the last call (a malformed line costs that line)."""
        try:
            with (self.directory / EVENTS_FILE).open("rb") as handle:
                handle.seek(self.events_offset)
                data = handle.read()
        except OSError:
            return []
        self.events_offset += len(data)
        lines = (self.events_partial + data).split(b"\n")
        self.events_partial = lines.pop()
        records: list[HookRecord] = []
        for line in lines:
            record = parse_hook_line(line.decode("utf-8", "replace"))
            if record is not None:
                records.append(record)
        return records


class _Turn(LiveTurn):
    """What the reader knows about the turn in flight."""

    __slots__ = (
        "calls",
        "entered_at",
        "failure",
        "in_transcript",
        "interrupted_at",
        "parser",
        "prompt_id",
        "redrawn",
        "retried",
        "stop",
        "submitted",
        "transcript_done",
    )

    def __init__(self, emit: Emit, watch: TurnWatch) -> None:
        super().__init__(emit, watch)
        self.prompt_id: str | None = None
        self.submitted = False
        self.entered_at: float | None = None
        self.retried = False
        self.interrupted_at: float | None = None
        # Whether the terminal drew anything after Esc: a CLI that reads nothing (stopped,
        # hung) draws nothing, and is killed after the interrupt grace instead.
        self.redrawn = False
        self.stop: HookRecord | None = None
        self.failure: HookRecord | None = None
        self.transcript_done = False
        self.in_transcript = False
        self.calls: list[ProviderUsage] = []
        self.parser: ClaudeStreamParser | None = None

    @property
    def over(self) -> bool:
        """The turn's Stop hook came: Esc can no longer reach it."""
        return self.stop is not None


class ClaudeTuiConversation(LongLivedConversation[_Turn]):
    """One Claude Code conversation on one interactive process.

    An interrupt presses Esc (the process stays); closing presses Ctrl-C twice, then sends
    SIGTERM, then SIGKILL, and removes the conversation's files. Besides the failures every
    long-lived conversation has, a turn raises InvalidRequestError for a prompt that is empty
    once terminal controls are removed, CliExitError when the CLI could not start (kind AUTH
    for an authentication failure, with the marker and the terminal's tail) or the turn
    failed (StopFailure, classified into its FailureKind), SessionResumeError when the CLI no
    longer has the conversation to resume, TurnTimeoutError when the CLI did not get ready
    within ``start_timeout``, and ApprovalRequiredError when a permission request met
    ApprovalPolicy.FAIL_TURN. A model other than the conversation's cannot be asked for.
    """

    _start_waits_for_ready = True

    _unanswered = "the turn did not end {grace:g} s after Esc; killing the process"

    def __init__(
        self,
        transport: ClaudeTuiTransport,
        provider: ClaudeProvider,
        executor: PtyExecutor,
        spec: ConversationSpec,
    ) -> None:
        super().__init__(transport, spec, name="Claude Code")
        self._provider = provider
        self._executor = executor
        self._timing = transport.timing
        self._scratch = transport.scratch_cwd
        self._terminal: _Terminal | None = None

    def _refuse(self, request: TurnRequest) -> None:
        also = ("model",) if request.model is not None and request.model != self._model else ()
        refuse_fixed_changes("Claude Code", request, self._spec, also=also)
        if not sanitize_prompt(request.prompt).strip():
            raise InvalidRequestError(
                "TurnRequest.prompt",
                "empty once terminal control characters are removed",
                "the interactive CLI ignores an empty prompt; send some text",
            )

    # -- the turn ------------------------------------------------------------------------

    def _run(self, request: TurnRequest, emit: Emit, stop: TurnStop) -> TurnResult:
        started = self._clock()
        resumed = self._resumes
        terminal = self._ensure_terminal(emit)
        # The turn's clock starts once the CLI is ready: starting it has a budget of its own.
        turn = _Turn(emit, self._watch(request, self._clock()))
        turn.parser = self._parser(turn, resumed)
        if terminal.tools is not None:
            host = terminal.tools.serving.host
            host.emit, host.approve = emit, self._tool_approvals(turn)
        with self._lock:
            self._turn = turn
        # A stop that came while the CLI started presses Esc as soon as the prompt is in.
        self._leftovers.turn_sent()
        self._submit(terminal, turn, sanitize_prompt(request.prompt))
        with self._stoppable(stop):
            self._read_turn(terminal, turn)
        return self._conclude(terminal, turn, resumed, started)

    def _parser(self, turn: _Turn, resumed: bool) -> ClaudeStreamParser:
        def on_event(event: AgentEvent) -> None:
            if isinstance(event, UsageReport) and event.scope is UsageScope.CALL:
                turn.calls.append(event.usage)
            if not isinstance(event, SessionStarted):
                turn.emit(event)

        parser = self._provider.new_parser(on_event, expect_structured=False)
        parser.configure(ParserContext(model=self._model, resumed=resumed))
        return parser

    def _submit(self, terminal: _Terminal, turn: _Turn, text: str) -> None:
        if not terminal.pasted and terminal.ready_at is not None:
            self._pause(terminal, turn, terminal.ready_at + self._timing.first_paste)
        terminal.pasted = True
        # Whatever a previous turn left (a Stop after its interrupt) is not this turn's.
        for record in terminal.hooks():
            turn.emit(Lifecycle(lk.BETWEEN_TURNS, record.event))
        try:
            terminal.pty.write(paste(text))
            self._pause(terminal, turn, self._clock() + self._timing.paste_to_enter)
            terminal.pty.write(ENTER)
        except ProcessClosedError:
            return  # the read meets the exit and reports it
        turn.entered_at = self._clock()

    def _pause(self, terminal: _Terminal, turn: _Turn | None, until: float) -> None:
        """Wait until ``until``, drawing the terminal meanwhile."""
        while True:
            left = until - self._clock()
            if left <= 0 or terminal.pty.returncode is not None:
                return
            data = terminal.wait(left)
            if data:
                self._on_screen(terminal, turn, terminal.show(data))

    def _on_screen(self, terminal: _Terminal, turn: _Turn | None, words: str) -> None:
        used = weekly_limit_used(words)
        if used is not None and used != terminal.weekly:
            terminal.weekly = used
            event = Lifecycle(lk.RATE_LIMIT, f"weekly {used}% used")
            if turn is not None:
                turn.emit(event)

    def _next_due(self, terminal: _Terminal, turn: _Turn) -> float | None:
        """When the reader must look again though nothing happened: a deadline, a retry."""
        dues = [turn.watch.deadline()]
        if (
            not turn.submitted
            and not turn.retried
            and not turn.interrupted
            and turn.entered_at is not None
        ):
            dues.append(turn.entered_at + self._timing.retry)
        if turn.interrupted_at is not None and turn.redrawn:
            dues.append(turn.interrupted_at + _INTERRUPT_SETTLE)
        known = [due for due in dues if due is not None]
        return min(known) if known else None

    def _read_turn(self, terminal: _Terminal, turn: _Turn) -> None:
        pty, clock = terminal.pty, self._clock
        while True:
            due_at = self._next_due(terminal, turn)
            data = terminal.wait(None if due_at is None else max(due_at - clock(), 0.0))
            if data:
                turn.redrawn = turn.interrupted_at is not None
                self._on_screen(terminal, turn, terminal.show(data))
            for record in terminal.hooks():
                self._on_hook(terminal, turn, record)
            if turn.submitted:
                self._read_transcript(terminal, turn)
            if turn.stop is not None or turn.failure is not None or turn.fail is not None:
                return
            if pty.returncode is not None:
                return
            now = clock()
            if (
                not turn.submitted
                and not turn.retried
                and not turn.interrupted
                and turn.entered_at is not None
                and now - turn.entered_at >= self._timing.retry
            ):
                turn.retried = True
                turn.emit(
                    Lifecycle(
                        lk.SUBMIT_RETRIED,
                        f"no UserPromptSubmit {self._timing.retry:g} s after Enter; Enter again",
                    )
                )
                with contextlib.suppress(ProcessClosedError):
                    pty.write(ENTER)
            if (
                turn.redrawn
                and turn.interrupted_at is not None
                and now - turn.interrupted_at >= _INTERRUPT_SETTLE
            ):
                # Esc ends the turn without a hook; the prompt comes back into the box.
                with contextlib.suppress(ProcessClosedError):
                    pty.write(CLEAR_LINE)
                return
            if self._act_on_due(turn, now):
                pty.kill()
                pty.wait(self._close_grace)
                return

    def _on_hook(self, terminal: _Terminal, turn: _Turn, record: HookRecord) -> None:
        event, prompt_id = record.event, record.field("prompt_id")
        ours = turn.prompt_id is None or prompt_id is None or prompt_id == turn.prompt_id
        if event == "UserPromptSubmit":
            if not turn.submitted:
                turn.submitted = True
                turn.prompt_id = prompt_id
                turn.watch.heard(self._clock())
                turn.emit(Lifecycle(lk.PROMPT_SUBMITTED, prompt_id or ""))
        elif event == "PermissionRequest":
            turn.watch.heard(self._clock())
            self._answer(terminal, turn, record)
        elif event == "Stop" and ours and turn.submitted:
            turn.stop = record
        elif event == "StopFailure" and ours and turn.submitted:
            turn.failure = record
        elif event == "SessionEnd":
            turn.emit(Lifecycle(lk.SESSION_END, record.field("reason") or ""))
        else:
            turn.emit(Lifecycle(lk.BETWEEN_TURNS, f"{event} {prompt_id or ''}".strip()))

    def _answer(self, terminal: _Terminal, turn: _Turn, record: HookRecord) -> None:
        request = approval_request(record)
        answer = self._decide(turn, request)
        if record.hook is None:
            turn.emit(Lifecycle(lk.APPROVAL_NOT_SENT, "the hook record names no hook to answer"))
        else:
            try:
                text = json.dumps(hook_output(answer.decision, request))
                send_answer(terminal.directory, record.hook, text)
            except OSError as error:
                turn.emit(Lifecycle(lk.APPROVAL_NOT_SENT, str(error)))
        self._approval_sent(turn, request, answer)

    def _read_transcript(self, terminal: _Terminal, turn: _Turn) -> None:
        for record, line in terminal.transcript.read():
            kind = record.get("type")
            if kind == TITLE_RECORD:
                title = as_str(record.get(TITLE_FIELD))
                if title and title not in terminal.titles:
                    terminal.titles.add(title)
                    turn.emit(SessionTitle(title, line))
                continue
            if turn.parser is None:
                continue
            if kind == "user" and not turn.in_transcript:
                # The turn's lines begin at its own prompt (read once the prompt id is known).
                turn.in_transcript = record.get("promptId") in (None, turn.prompt_id)
                continue
            if not turn.in_transcript:
                continue
            if kind == "system" and record.get("subtype") == TURN_END:
                turn.transcript_done = True
            elif kind in ("assistant", "user"):
                turn.watch.heard(self._clock())
                turn.parser.dispatch(dict(record), line)

    def _stop_in_band(self, turn: _Turn, now: float) -> Callable[[], None] | None:
        terminal = self._terminal
        if terminal is None:
            return None
        turn.interrupted_at = now

        def press_escape() -> None:
            with contextlib.suppress(ProcessClosedError):
                terminal.pty.write(ESCAPE)
            terminal.pty.wake()

        return press_escape

    # -- the result ------------------------------------------------------------------------

    def _conclude(
        self, terminal: _Terminal, turn: _Turn, resumed: bool, started: float
    ) -> TurnResult:
        pty = terminal.pty
        if turn.stop is not None:
            self._await_transcript(terminal, turn)
        self._raise_for_reading(turn, terminal.argv)
        if turn.failure is not None:
            raise self._failed(terminal, turn.failure)
        code = pty.returncode
        if turn.stop is None and code is not None and not turn.interrupted:
            turn.emit(RunFinished(code))
            raise CliDiedError(
                session_id=self._session_id,
                returncode=code,
                stderr=terminal.words()[-4000:],
            )
        if turn.interrupted and turn.stop is None:
            turn.emit(TurnInterrupted("interrupted on request (Esc)"))
        text = (turn.stop.field("last_assistant_message") if turn.stop is not None else None) or ""
        usage = _sum(turn.calls, self._model, known=turn.transcript_done)
        interrupted = turn.interrupted and turn.stop is None
        # The transcript's calls carry no cost, so neither does their sum.
        return self._turn_result(
            text, usage, started=started, resumed=resumed, interrupted=interrupted
        )

    def _await_transcript(self, terminal: _Terminal, turn: _Turn) -> None:
        # Nothing signals the transcript's write (the CLI flushes it on a timer of its own,
        # after the Stop hook returned, and draws nothing then): it is read at Stop, whenever
        # the terminal or a hook wakes the reader, once _TRANSCRIPT_SETTLE after the CLI's
        # last sign of life, and at the deadline. A bounded number of looks, never a loop on
        # a clock.
        clock = self._clock
        until = clock() + self._timing.transcript
        look_at = min(until, clock() + _TRANSCRIPT_SETTLE)
        self._read_transcript(terminal, turn)
        while not turn.transcript_done:
            now = clock()
            if now >= until or terminal.pty.returncode is not None:
                break
            data = terminal.wait(max(look_at - now, 0.0))
            if data:
                self._on_screen(terminal, turn, terminal.show(data))
                look_at = min(until, clock() + _TRANSCRIPT_SETTLE)
            elif clock() >= look_at:
                look_at = until  # the settle look is taken: the deadline's is the last
            self._read_transcript(terminal, turn)
        if not turn.transcript_done:
            turn.emit(
                Lifecycle(
                    lk.USAGE_UNKNOWN,
                    f"the transcript did not close the turn within {self._timing.transcript:g} s",
                )
            )

    def _failed(self, terminal: _Terminal, record: HookRecord) -> AgentShimError:
        error = record.field("error") or ""
        said = record.field("last_assistant_message") or error or "no error text"
        kind = classify(StreamFailure(text=said, assistant_error=error or None))
        failure = CliExitError(
            terminal.argv,
            1,
            stdout=terminal.words()[-4000:],
            kind=kind,
            detail=f"{error}: {said}" if error else said,
        )
        return self._provider.classify_exit(failure, resumed=False)

    # -- the process -----------------------------------------------------------------------

    def _ensure_terminal(self, emit: Emit) -> _Terminal:
        terminal = self._terminal
        if terminal is not None:
            # Looked at now: a CLI killed while the conversation was idle is replaced.
            code = terminal.pty.wait(0)
            if code is None:
                return terminal
            self._process_ended(ProcessExited(code))
            self._release_process()
        terminal = self._start(emit)
        try:
            self._await_ready(terminal, emit)
        except BaseException:
            self._release_process()
            raise
        return terminal

    def _start(self, emit: Emit) -> _Terminal:
        context, spec = self._context, self._spec
        mcp_argv = self._install_mcp(spec.mcp_servers)
        cwd = spec.cwd or self._scratch_cwd()
        directory = Path(tempfile.mkdtemp(prefix="agentshim-claude-tui-"))
        wake: int | None = None
        tools: TuiTools | None = None
        waits: TuiWaits | None = None
        try:
            _write_private(directory / EVENTS_FILE, "")
            wake = _open_wake_fifo(directory / WAKE_FIFO)
            if spec.tools:
                tools = TuiTools.start(spec.tools, directory)
                tools.serving.host.emit = emit
                waits = TuiWaits((wake, tools.serving.fileno()))
                mcp_argv = (*mcp_argv, *tools.argv)
            settings = tui_settings(
                directory,
                self._provider.settings_json,
                approval_wait=spec.approval_timeout + 5.0,
                bypass=spec.permissions.mode is NativeMode.BYPASS,
                project_servers=tuple(server.name for server in spec.mcp_servers),
            )
            settings_file = directory / "settings.json"
            _write_private(settings_file, json.dumps(settings))
            fresh = self._session_id is None or self._fork
            session_id = str(uuid.uuid4()) if fresh else self._session_id
            assert session_id is not None
            argv = tui_argv(
                self._argv_context(mcp_argv, cwd=cwd),
                spec.permissions,
                session_id=session_id,
                settings_file=str(settings_file),
                fork=self._fork,
            )
            env = dict(context.env)
            env.setdefault("TERM", "xterm-256color")
            self._add_mcp_env(env)
            served = ()
            if tools is not None:
                for name, value in tools.env_defaults.items():
                    env.setdefault(name, value)
                env.update(tools.env)
                served = (tools.serving.server,)
            self._leftovers.mark(env, (*spec.mcp_servers, *served))
            self._announce_respawn(emit)
            emit(RunStarted(tuple(argv)))
            pty = self._executor.spawn_pty(SpawnRequest(argv, cwd=cwd, env=env))
        except BaseException:
            _close_waits(wake, tools, waits)
            shutil.rmtree(directory, ignore_errors=True)
            raise
        terminal = _Terminal(pty, argv, directory, session_id, cwd)
        terminal.wake, terminal.tools, terminal.waits = wake, tools, waits
        pty.watch(wake if waits is None else waits.fileno())
        self._leftovers.started(pty.pid)
        terminal.transcript.path = transcript_path(env, munged_cwd(cwd), session_id)
        with self._lock:
            self._terminal = terminal
            ended = self._start_ended
        if ended:  # the turn was stopped, or ran out of time, while the process was spawned
            self._start_killed = True
            pty.kill()
        self._session_id = session_id
        self._fork = False
        return terminal

    def _scratch_cwd(self) -> str:
        if self._scratch is not None:
            path = Path(self._scratch)
        else:
            home = self._context.env.get("HOME") or str(Path.home())
            path = Path(home) / ".cache" / "agentshim" / "claude-tui" / "cwd"
        path.mkdir(parents=True, exist_ok=True, mode=0o700)
        return str(path)

    def _await_ready(self, terminal: _Terminal, emit: Emit) -> None:
        """Wait for SessionStart (and the Python tools' listing), answering dialogs on the way.

        The hooks' FIFO, the tools' socket and the screen wake the reader; the only clocks are
        the deadline and the quiet time a dialog on screen must keep before it is answered.
        """
        pty, clock = terminal.pty, self._clock
        deadline = clock() + self._timing.ready
        due = deadline
        changed = clock()
        answered_at: dict[str, float] = {}
        while True:
            now = clock()
            if now >= deadline:
                waited = (
                    "no SessionStart hook"
                    if terminal.ready_at is None
                    else "its MCP client never listed the Python tools"
                )
                raise TurnTimeoutError(
                    self._timing.ready,
                    f"Claude Code did not get ready ({waited}) within "
                    f"{self._timing.ready:g} s; the terminal last showed: "
                    f"{_last_words(terminal)}",
                )
            data = terminal.wait(max(due - now, 0.0))
            if data:
                changed = clock()
                self._on_screen(terminal, None, terminal.show(data))
            for record in terminal.hooks():
                if record.event == "SessionStart":
                    terminal.ready_at = clock()
                    path = record.field("transcript_path")
                    if path:
                        terminal.transcript.path = Path(path)
                    emit(SessionStarted(terminal.session_id))
            if terminal.ready_at is not None and _tools_listed(terminal):
                return
            words = terminal.words()
            marker = auth_marker(words)
            if marker is not None or pty.returncode is not None:
                raise self._not_started(terminal, marker)
            due = deadline
            dialog = dialog_answer(words[-4000:])
            last = None if dialog is None else answered_at.get(dialog.name)
            if dialog is not None and (last is None or changed > last):
                quiet_at = changed + _DIALOG_QUIET  # it may still redraw until then
                if clock() < quiet_at:
                    due = min(deadline, quiet_at)
                else:
                    answered_at[dialog.name] = clock()
                    emit(Lifecycle(lk.DIALOG_ANSWERED, dialog.name))
                    self._press(terminal, dialog.keys)

    def _press(self, terminal: _Terminal, keys: tuple[bytes, ...]) -> None:
        for index, key in enumerate(keys):
            if index:
                self._pause(terminal, None, self._clock() + _KEY_GAP)
            with contextlib.suppress(ProcessClosedError):
                terminal.pty.write(key)
        # What the keys redraw is not the dialog any more.
        terminal.tail = ""

    def _not_started(self, terminal: _Terminal, marker: str | None) -> AgentShimError:
        pty = terminal.pty
        if pty.returncode is None:
            pty.kill()
            pty.wait(self._close_grace)
        code = pty.returncode if pty.returncode is not None else -9
        words = terminal.words()
        tail = words[-4000:]
        if marker is not None:
            return CliExitError(
                terminal.argv,
                code,
                stdout=tail,
                stderr=tail,
                kind=FailureKind.AUTH,
                detail=marker,
                message=(
                    f"Claude Code cannot authenticate: its terminal shows {marker!r} "
                    f"({_last_words(terminal)}); log in (claude, then /login) or set "
                    "ANTHROPIC_API_KEY in the agent's env"
                ),
            )
        error = CliExitError(
            terminal.argv, code, stdout=tail, stderr=tail, detail=_last_words(terminal)
        )
        return self._provider.classify_exit(error, resumed=self._session_id is not None)

    # -- closing ---------------------------------------------------------------------------

    def _starting_process(self) -> tuple[tuple[str, ...], Callable[[], None]] | None:
        """The terminal's process (starting: no turn is in flight): its argv and its kill."""
        with self._lock:
            terminal = self._terminal
        return None if terminal is None else (terminal.argv, terminal.pty.kill)

    def _release_process(self) -> None:
        """Ctrl-C twice, then SIGTERM, then SIGKILL; the terminal's files go with it."""
        with self._lock:
            terminal, self._terminal = self._terminal, None
        if terminal is None:
            return
        pty, grace = terminal.pty, self._close_grace
        try:
            if pty.returncode is None:
                with contextlib.suppress(ProcessClosedError):
                    pty.write(CTRL_C)
                    terminal.wait(0.2)
                    pty.write(CTRL_C)
                if pty.wait(grace) is None:
                    pty.terminate()
                    if pty.wait(grace) is None:
                        pty.kill()
                        pty.wait(grace)
        finally:
            terminal.pty.watch(None)
            _close_waits(terminal.wake, terminal.tools, terminal.waits)
            terminal.wake = terminal.tools = terminal.waits = None
            shutil.rmtree(terminal.directory, ignore_errors=True)


def _tools_listed(terminal: _Terminal) -> bool:
    """Whether the CLI's MCP client has the Python tools: the bridge wrote it their list.

    Claude Code connects MCP servers in the background, after SessionStart: a first prompt
    sent before the list reaches it goes to the model without them. Answering ``tools/list``
    is not enough: on a loaded machine the bridge may write the answer to the CLI only after
    the prompt. The bridge says when it has (``listing_delivered``); its socket is one of the
    descriptors the start-up wait wakes on, so the wait ends on that word itself.
    """
    return terminal.tools is None or terminal.tools.serving.listing_delivered


def _close_waits(wake: int | None, tools: TuiTools | None, waits: TuiWaits | None) -> None:
    """Release what a process's reader waited on: the selector, the tools, the FIFO."""
    if waits is not None:
        waits.close()
    if tools is not None:
        tools.close()
    if wake is not None:
        with contextlib.suppress(OSError):
            os.close(wake)


def _open_wake_fifo(path: Path) -> int:
    """Make the hooks' FIFO at ``path`` and open it; the descriptor the reader waits on.

    Read-write: with a writer always there (this one), the FIFO never reads as ended between
    two hooks, so it is readable only while a hook's byte waits.

    Raises:
        ProviderCapabilityError: no FIFO can be made there (the reader would have nothing
            to wait on but a clock).
    """
    try:
        os.mkfifo(path, 0o600)
        return os.open(path, os.O_RDWR | os.O_NONBLOCK)
    except OSError as error:
        raise ProviderCapabilityError(
            f"the Claude Code TUI transport cannot make its hooks' FIFO {path} "
            f"({error.strerror}); it needs a temporary directory (TMPDIR) that holds FIFOs, "
            "or use TransportKind.LONG_LIVED"
        ) from error


def _write_private(path: Path, text: str) -> None:
    """Write ``text`` to a new file only its owner can read (0600)."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as handle:
        handle.write(text)


def _last_words(terminal: _Terminal) -> str:
    words = " ".join(terminal.words().split())
    return repr(words[-300:]) if words else "nothing"


def _sum(calls: list[ProviderUsage], model: str | None, *, known: bool) -> ProviderUsage:
    if not calls:
        return ProviderUsage(provider=PROFILE.name, increment_known=False, model=model)
    total = calls[0]
    for call in calls[1:]:
        total = total + call
    if not known:
        total = ProviderUsage(
            tokens=total.tokens,
            provider=PROFILE.name,
            raw=total.raw,
            increment_known=False,
            model=total.model or model,
        )
    return total
