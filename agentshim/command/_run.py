"""``agentshim run``: one turn, shown as it happens; a stop signal interrupts, a second kills.

Ctrl-C (SIGINT), SIGTERM and SIGHUP are one thing here: the first stops the turn (its CLI and
everything the CLI started end, what the turn got is printed), the second kills the CLI, and
the command exits 128 + the first signal's number, as a shell reports a process a signal
ended.
"""

from __future__ import annotations

import dataclasses
import enum
import json
import queue
import signal
import tempfile
import threading
from collections.abc import Callable, Generator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, TextIO, cast

from agentshim.agent import Agent
from agentshim.core.conversation import TransportKind
from agentshim.core.errors import (
    AgentShimError,
    CliExitError,
    CliNotFoundError,
    ContinuityError,
    FailureKind,
    InvalidRequestError,
    SessionResumeError,
)
from agentshim.core.event_json import event_to_json
from agentshim.core.events import AgentEvent, ConsoleEventHandler, UsageReport, UsageScope
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import OutputSchema, TurnRequest, TurnResult
from agentshim.core.usage import ProviderUsage
from agentshim.execution.executor import (
    CommandExecutor,
    CommandHandle,
    CommandRequest,
    CommandResult,
    CommandStreamSink,
)
from agentshim.execution.host import HostCommandExecutor
from agentshim.execution.process import Process, SpawnRequest
from agentshim.execution.pty_process import PtyExecutor, PtyProcess, PtySize
from agentshim.execution.readiness import check_version
from agentshim.providers import DEFAULT_CATALOG, ProviderCatalog

from ._exits import EXIT_INTERRUPTED, EXIT_NOT_INSTALLED, EXIT_OK, EXIT_TURN_FAILED, EXIT_USAGE
from ._status import StatusLine, is_terminal, wants_color

__all__ = [
    "STOP_SIGNALS",
    "RunOptions",
    "exit_status_of",
    "run_turn",
    "summary",
]

#: The signals that stop a turn: Ctrl-C, a polite stop (``kill``, ``timeout``, a service
#: manager) and a closed terminal. SIGHUP does not exist on every platform.
STOP_SIGNALS: tuple[signal.Signals, ...] = (
    signal.SIGINT,
    signal.SIGTERM,
    *((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ()),
)


def exit_status_of(signum: int) -> int:
    """The exit status after a stop by signal ``signum``: 128 + its number, as a shell says."""
    return 128 + signum


def _executor(options: RunOptions) -> CommandExecutor:
    if not options.stand_in:
        return HostCommandExecutor()
    # Imported here: the protocol fakes the stand-in brings are needed only with --stand-in.
    from agentshim.testing.stand_in import stand_in_executor

    return stand_in_executor(options.provider)


class _KillableExecutor:
    """Runs on ``inner`` and remembers what runs, so a stop can end it at any phase.

    The CLI's ``--version`` health check goes through :meth:`run` too (tracked apart as a
    probe), so a stop that arrives while it runs ends it at once instead of waiting for it.
    """

    def __init__(self, inner: CommandExecutor) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._probing = threading.local()
        self._handles: list[CommandHandle] = []
        self._probes: list[CommandHandle] = []
        self._processes: list[Process] = []

    def find_binary(self, name: str, env: Mapping[str, str]) -> str:
        """Look ``name`` up on ``inner``."""
        return self._inner.find_binary(name, env)

    def check_binary(self, path: str, env: Mapping[str, str], *, timeout: float) -> None:
        """Health-check ``path`` (``--version``) through :meth:`run`, as a probe."""
        self._probing.active = True
        try:
            check_version(self, path, env, timeout=timeout)
        finally:
            self._probing.active = False

    def run(self, request: CommandRequest, sink: CommandStreamSink) -> CommandResult:
        """Run on ``inner``, keeping the command's handle while it runs."""
        kept: list[CommandHandle] = []
        into = self._probes if getattr(self._probing, "active", False) else self._handles

        def started(handle: CommandHandle) -> None:
            with self._lock:
                into.append(handle)
            kept.append(handle)
            sink.started(handle)

        try:
            return self._inner.run(request, _Sink(started, sink))
        finally:
            with self._lock:
                for handle in kept:
                    into.remove(handle)

    def spawn(self, request: SpawnRequest) -> Process:
        """Spawn on ``inner``, keeping the process so it can be killed."""
        process = self._inner.spawn(request)
        with self._lock:
            self._processes.append(process)
        return process

    def kill_probes(self) -> None:
        """SIGKILL a running health check: a stop before the CLI runs has nothing to wait for."""
        with self._lock:
            probes = list(self._probes)
        for handle in probes:
            handle.kill()

    def kill(self) -> None:
        """SIGKILL every command and process started here that may still run."""
        with self._lock:
            handles = [*self._probes, *self._handles]
            processes = list(self._processes)
        for handle in handles:
            handle.kill()
        for process in processes:
            process.kill()


class _KillablePtyExecutor(_KillableExecutor):
    """A killable executor that can also start a process on a terminal (the TUI transport)."""

    def __init__(self, inner: CommandExecutor, pty: PtyExecutor) -> None:
        super().__init__(inner)
        self._pty = pty
        self._terminals: list[PtyProcess] = []

    def spawn_pty(self, request: SpawnRequest, size: PtySize | None = None) -> PtyProcess:
        """Start on a terminal through ``pty``, keeping the process so it can be killed."""
        process = self._pty.spawn_pty(request, size)
        self._terminals.append(process)
        return process

    def kill(self) -> None:
        """SIGKILL every command and process started here, terminals included."""
        super().kill()
        for process in list(self._terminals):
            process.kill()


def _killable(base: CommandExecutor) -> _KillableExecutor:
    """``base`` made killable; it keeps its terminal (and so the TUI transport) if it has one."""
    if isinstance(base, PtyExecutor):
        return _KillablePtyExecutor(base, base)
    return _KillableExecutor(base)


class _Sink:
    """Forwards output to ``sink``; ``started`` goes through ``on_started`` first."""

    def __init__(self, on_started: Callable[[CommandHandle], None], sink: CommandStreamSink):
        self._on_started = on_started
        self.stdout = sink.stdout
        self.stderr = sink.stderr

    def started(self, handle: CommandHandle) -> None:
        """Record the handle, then pass it on."""
        self._on_started(handle)


_DONE = 0
"""Put on the inbox when the turn's worker has finished (no signal has number 0)."""


@contextmanager
def _signals_to(inbox: queue.SimpleQueue[int]) -> Generator[None]:
    """While in use, each stop signal puts its number on ``inbox`` instead of acting.

    A handler that only enqueues cannot be interrupted half-way (a KeyboardInterrupt can land
    anywhere, even inside the code handling the previous one); ``SimpleQueue.put`` is safe in
    a signal handler. Off the main thread no handler can be set and nothing changes.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def arrived(signum: int, frame: object) -> None:
        inbox.put(signum)

    previous = {signum: signal.signal(signum, arrived) for signum in STOP_SIGNALS}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """What ``agentshim run`` was asked to do, checked by the parser.

    ``resume_or_new`` lets a ``resume`` the CLI cannot honour start a new conversation;
    without it such a turn fails. ``schema`` is the JSON Schema the answer must follow.
    ``catalog`` holds the provider (``--acp`` adds the agent it names).
    """

    provider: str
    prompt: str
    model: str | None = None
    cwd: str | None = None
    timeout: float = 600.0
    resume: str | None = None
    resume_or_new: bool = False
    transport: TransportKind = TransportKind.ONE_SHOT
    json: bool = False
    stand_in: bool = False
    schema: Mapping[str, Any] | None = None
    catalog: ProviderCatalog = DEFAULT_CATALOG


class _Reported:
    """The usage a turn reported so far: the turn's report, or the sum of its calls' reports."""

    def __init__(self) -> None:
        self.calls = ProviderUsage()
        self.turn: ProviderUsage | None = None

    def note(self, event: UsageReport) -> None:
        if event.scope is UsageScope.TURN:
            self.turn = event.usage
            self.calls = ProviderUsage()
        else:
            self.calls = self.calls + event.usage

    @property
    def usage(self) -> ProviderUsage | None:
        """What was reported, or None when nothing was."""
        if self.turn is not None:
            return self.turn
        tokens = self.calls.tokens
        return self.calls if tokens.input_tokens or tokens.output_tokens else None


class _Screen:
    """Where a turn's events go: readable lines or JSON lines on ``out``, a status line on ``err``.

    A stream that went away (a closed pipe, a hung-up terminal) is not an error of the turn:
    writing to it stops, and ``on_gone`` is called once so the turn can be stopped.
    """

    def __init__(
        self, options: RunOptions, out: TextIO, err: TextIO, on_gone: Callable[[], None]
    ) -> None:
        self.out = out
        self.err = err
        self.json = options.json
        self.console = ConsoleEventHandler(stream=out, color=wants_color(out))
        self.status = (
            StatusLine(err, color=wants_color(err))
            if is_terminal(err) and not options.json
            else None
        )
        self.lock = self.status.lock if self.status is not None else threading.RLock()
        self.reported = _Reported()
        self._gone: set[int] = set()
        self._on_gone = on_gone

    def on_event(self, event: AgentEvent) -> None:
        """Show ``event``: as a JSON line, or readably (usage only in the summary)."""
        if isinstance(event, UsageReport):
            self.reported.note(event)
        with self.lock:
            self._guarded(self.out, lambda: self._show(event))

    def _show(self, event: AgentEvent) -> None:
        if self.status is not None:
            self.status.erase()
        if self.json:
            self.out.write(json.dumps(event_to_json(event), ensure_ascii=False) + "\n")
            self.out.flush()
        elif not isinstance(event, UsageReport):
            self.console.on_event(event)
        if self.status is not None:
            self.status.note(event)

    def say(self, stream: TextIO, text: str) -> None:
        """Write a line of the command's own (not the CLI's) without tearing the status line."""

        def write() -> None:
            if self.status is not None:
                self.status.erase()
            if stream is self.out and not self.json:
                self.console.end_line()
            stream.write(text + "\n")
            stream.flush()

        with self.lock:
            self._guarded(stream, write)

    def _guarded(self, stream: TextIO, write: Callable[[], None]) -> None:
        if id(stream) in self._gone:
            return
        try:
            write()
        except (OSError, ValueError):  # EPIPE, EIO after a hang-up, a closed stream
            self._gone.add(id(stream))
            if stream is self.out:
                self._on_gone()


def summary(result: TurnResult, reported: ProviderUsage | None = None) -> str:
    """The one-line summary printed after a turn.

    ``reported`` is the usage the turn's events reported; an interrupted turn whose result
    has no counts shows it instead of zeros.
    """
    usage = result.usage
    counted = "" if usage.increment_known else " (not reported)"
    if result.interrupted and reported is not None and not _has_tokens(usage):
        usage, counted = reported, " (reported before the interrupt)"
    tokens = usage.tokens
    cost = f"${result.cost_usd:.4f}" if result.cost_usd is not None else "cost unknown"
    state = "interrupted | " if result.interrupted else ""
    return (
        f"{state}session {result.session_id or '-'} | tokens {tokens.input_tokens:,} in, "
        f"{tokens.output_tokens:,} out{counted} | {cost} | {result.duration_ms / 1000:.2f} s"
    )


def _has_tokens(usage: ProviderUsage) -> bool:
    return bool(usage.tokens.input_tokens or usage.tokens.output_tokens)


def _not_installed(options: RunOptions, screen: _Screen, error: CliNotFoundError) -> int:
    profile = options.catalog.plugin(options.provider).profile
    install = error.install or profile.install_command
    message = f"{profile.display_name} is not installed ({profile.binary} is not on PATH)"
    if options.json:
        _json_error(screen, "CliNotFoundError", message, install=install)
    screen.say(screen.err, message)
    if install:
        screen.say(screen.err, f"install it with: {install}")
    screen.say(screen.err, "or try the bundled stand-in CLI: add --stand-in")
    return EXIT_NOT_INSTALLED


def _json_error(screen: _Screen, kind: str, message: str, **more: Any) -> None:
    line = {"type": "error", "error": kind, "message": message, **more}
    screen.say(screen.out, json.dumps(line, ensure_ascii=False))


def _agent(options: RunOptions, executor: CommandExecutor, screen: _Screen) -> Agent:
    return Agent(
        options.provider,
        permissions=NativePermissions.bypass(),
        approvals=ApprovalPolicy.DENY,
        model=options.model,
        executor=executor,
        transport=options.transport,
        event_handlers=(screen,),
        catalog=options.catalog,
    )


def run_turn(options: RunOptions, out: TextIO, err: TextIO) -> int:
    """Run one turn as ``options`` say; return the exit status (see the ``EXIT_*`` values).

    The turn runs on a worker thread so that this one can take the stop signals (see the
    module's docstring); what the turn produced so far is shown either way.
    """
    executor = _killable(_executor(options))
    inbox: queue.SimpleQueue[int] = queue.SimpleQueue()
    # A closed stdout stops the turn like SIGPIPE would have stopped a plain program.
    screen = _Screen(options, out, err, lambda: inbox.put(signal.SIGPIPE))
    try:
        agent = _agent(options, executor, screen)
        session = agent.start_session(options.cwd, session_id=options.resume)
    except AgentShimError as error:
        return _failed(options, screen, error)
    outcome: list[TurnResult | BaseException] = []
    # The schema file lives as long as the turn: a private directory removed after it.
    schema_dir = tempfile.TemporaryDirectory(prefix="agentshim-schema-")
    schema = (
        OutputSchema(options.schema, Path(schema_dir.name)) if options.schema is not None else None
    )

    def work() -> None:
        try:
            request = TurnRequest(options.prompt, timeout=options.timeout, output_schema=schema)
            # Pinned: a conversation the CLI cannot resume fails the turn instead of being
            # replaced by a new one that lacks the context the caller asked for.
            pin = options.resume is not None and not options.resume_or_new
            # Closed with the turn: a long-lived CLI (and the files its transport made for
            # it, such as the terminal transport's hook settings) ends with the command.
            with session:
                outcome.append(session.turn(request, pin=pin).result)
        except BaseException as error:
            outcome.append(error)
        finally:
            inbox.put(_DONE)

    worker = threading.Thread(target=work, name="agentshim-turn", daemon=True)
    stops: list[int] = []
    if screen.status is not None:
        screen.status.start()
    with _signals_to(inbox):
        worker.start()
        while (signum := inbox.get()) != _DONE:
            if signum == signal.SIGPIPE and stops:
                continue  # the output went away while the turn was already stopping
            stops.append(signum)
            if len(stops) == 1:
                _first_stop(signum, screen)
                session.interrupt()
                executor.kill_probes()
            elif len(stops) == 2:
                screen.say(err, "killing the CLI")
                executor.kill()
    if screen.status is not None:
        screen.status.stop()
    try:
        session.close()
    except AgentShimError:
        pass  # the turn's own outcome is what gets reported
    schema_dir.cleanup()
    return _report(options, screen, outcome, stops[0] if stops else None)


def _first_stop(signum: int, screen: _Screen) -> None:
    if signum == signal.SIGINT:
        screen.say(screen.err, "interrupting the turn (Ctrl-C again to kill the CLI)")
    elif signum != signal.SIGPIPE:
        name = signal.Signals(signum).name
        screen.say(screen.err, f"{name}: stopping the turn ({name} again to kill the CLI)")


def _json_value(value: object) -> Any:
    """``value`` as plain JSON data: enums by value, mappings as objects, tuples as lists."""
    if isinstance(value, ProviderUsage):
        return value.to_dict()
    if isinstance(value, enum.Enum):
        return _json_value(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _json_value(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        items = cast("Mapping[object, object]", value).items()
        return {str(k): _json_value(v) for k, v in items}
    if isinstance(value, (list, tuple)):
        return [_json_value(v) for v in cast("Sequence[object]", value)]
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def _result_json(result: TurnResult) -> dict[str, Any]:
    """The result line of ``--json``: ``{"type": "result", <the TurnResult's fields>}``."""
    return {"type": "result", **_json_value(result)}


def _report(
    options: RunOptions,
    screen: _Screen,
    outcome: list[TurnResult | BaseException],
    stopped_by: int | None,
) -> int:
    done = outcome[0] if outcome else None
    stopped = exit_status_of(stopped_by) if stopped_by is not None else None
    if isinstance(done, TurnResult):
        if options.json:
            screen.say(screen.out, json.dumps(_result_json(done), ensure_ascii=False))
        else:
            screen.say(screen.out, summary(done, screen.reported.usage))
        if stopped is not None:
            return stopped
        return EXIT_INTERRUPTED if done.interrupted else EXIT_OK
    if stopped is not None:
        screen.say(screen.err, "interrupted before the CLI answered")
        return stopped
    if isinstance(done, AgentShimError):
        return _failed(options, screen, done)
    if done is not None:
        raise done
    return EXIT_TURN_FAILED  # pragma: no cover - the worker always records an outcome


# The library's advice names its own API; the command says it in its own words.
_IN_COMMAND_WORDS = {
    "see stderr and stdout on this error for the CLI's own output": "its last output is below",
    "(the model= option)": "(--model)",
}
_OUTPUT_LINES = 10


def _in_command_words(error: AgentShimError) -> tuple[str, list[str]]:
    """The error's message for the terminal, and the CLI's last stderr lines worth showing."""
    message = str(error)
    for library, command in _IN_COMMAND_WORDS.items():
        message = message.replace(library, command)
    shown: list[str] = []
    if isinstance(error, CliExitError) and "its last output is below" in message:
        output = (error.stderr or error.stdout).strip().splitlines()
        shown = [f"  | {line}" for line in output[-_OUTPUT_LINES:]]
    return message, shown


def _failed(options: RunOptions, screen: _Screen, error: AgentShimError) -> int:
    if isinstance(error, CliNotFoundError):
        return _not_installed(options, screen, error)
    message, output = _in_command_words(error)
    if isinstance(error, (SessionResumeError, ContinuityError)) and options.resume is not None:
        message = (
            f"could not resume conversation {options.resume}: {error}; nothing was answered "
            "in it. Run without --resume to start a new conversation, or add --resume-or-new "
            "to start one whenever the conversation cannot be resumed"
        )
    # A request refused before it ran, or a model the CLI does not know, is the command
    # line's fault: the usage status, not a failed turn.
    usage = isinstance(error, InvalidRequestError) or (
        isinstance(error, CliExitError) and error.kind is FailureKind.MODEL
    )
    if options.json:
        _json_error(screen, type(error).__name__, message)
    screen.say(screen.err, f"{'error' if usage else 'turn failed'}: {message}")
    for line in output:
        screen.say(screen.err, line)
    return EXIT_USAGE if usage else EXIT_TURN_FAILED
