"""``agentshim run``: one turn, shown as it happens; Ctrl-C interrupts, a second Ctrl-C kills."""

from __future__ import annotations

import dataclasses
import enum
import json
import re
import signal
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TextIO, cast

from agentshim.agent import Agent
from agentshim.core.conversation import TransportKind
from agentshim.core.errors import AgentShimError, CliNotFoundError
from agentshim.core.events import AgentEvent, ConsoleEventHandler, UsageReport
from agentshim.core.permissions import ApprovalPolicy, NativePermissions
from agentshim.core.turn import TurnRequest, TurnResult
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
from agentshim.execution.transform import TransformingExecutor
from agentshim.providers import DEFAULT_CATALOG, ProviderCatalog

from ._exits import EXIT_INTERRUPTED, EXIT_NOT_INSTALLED, EXIT_OK, EXIT_TURN_FAILED
from ._status import StatusLine, is_terminal

__all__ = ["RunOptions", "run_turn", "stand_in_executor", "summary"]


def stand_in_executor(provider: str) -> CommandExecutor:
    """Return a host executor that runs the bundled stand-in CLI in place of ``provider``'s."""

    def to_stand_in(request: CommandRequest) -> CommandRequest:
        argv = (sys.executable, "-m", "agentshim.testing.stand_in", provider, *request.argv[1:])
        return dataclasses.replace(request, argv=argv)

    def find_stand_in(name: str, env: object) -> str:
        return name

    return TransformingExecutor(HostCommandExecutor(), to_stand_in, find_binary=find_stand_in)


class _KillableExecutor:
    """Runs on ``inner`` and remembers the running command, so a second Ctrl-C can kill it."""

    def __init__(self, inner: CommandExecutor) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._handles: list[CommandHandle] = []
        self._processes: list[Process] = []

    def find_binary(self, name: str, env: Mapping[str, str]) -> str:
        """Look ``name`` up on ``inner``."""
        return self._inner.find_binary(name, env)

    def check_binary(self, path: str, env: Mapping[str, str], *, timeout: float) -> None:
        """Health-check ``path`` on ``inner``."""
        self._inner.check_binary(path, env, timeout=timeout)

    def run(self, request: CommandRequest, sink: CommandStreamSink) -> CommandResult:
        """Run on ``inner``, keeping the command's handle while it runs."""
        kept: list[CommandHandle] = []

        def started(handle: CommandHandle) -> None:
            with self._lock:
                self._handles.append(handle)
            kept.append(handle)
            sink.started(handle)

        watched = _Sink(started, sink)
        try:
            return self._inner.run(request, watched)
        finally:
            with self._lock:
                for handle in kept:
                    self._handles.remove(handle)

    def spawn(self, request: SpawnRequest) -> Process:
        """Spawn on ``inner``, keeping the process so it can be killed."""
        process = self._inner.spawn(request)
        with self._lock:
            self._processes.append(process)
        return process

    def kill(self) -> None:
        """SIGKILL every command and process started here that may still run."""
        with self._lock:
            handles, processes = list(self._handles), list(self._processes)
        for handle in handles:
            handle.kill()
        for process in processes:
            process.kill()


class _CtrlC:
    """Counts Ctrl-C presses while in use, instead of letting each raise KeyboardInterrupt.

    A KeyboardInterrupt can land anywhere, even inside the code handling the previous one;
    a handler that only counts cannot be interrupted half-way. Off the main thread (where no
    handler can be set) Ctrl-C keeps its default behaviour.
    """

    def __init__(self) -> None:
        self.count = 0
        self._previous: Any = None
        self._installed = False

    def _pressed(self, signum: int, frame: object) -> None:
        self.count += 1

    def __enter__(self) -> _CtrlC:
        if threading.current_thread() is threading.main_thread():
            self._previous = signal.signal(signal.SIGINT, self._pressed)
            self._installed = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._installed:
            signal.signal(signal.SIGINT, self._previous)


class _Sink:
    """Forwards output to ``sink``; ``started`` goes through ``on_started`` first."""

    def __init__(self, on_started: Callable[[CommandHandle], None], sink: CommandStreamSink):
        self._on_started = on_started
        self.stdout = sink.stdout
        self.stderr = sink.stderr

    def started(self, handle: CommandHandle) -> None:
        """Record the handle, then pass it on."""
        self._on_started(handle)


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


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _event_json(event: AgentEvent) -> dict[str, Any]:
    """One event as a JSON object: ``{"type": "tool_call", <its fields>}``.

    The one place the event encoding lives, so the library's stored-event encoder can take its
    place without touching the rest of the command.
    """
    return {"type": _snake(type(event).__name__), **_json_value(event)}


def _result_json(result: TurnResult) -> dict[str, Any]:
    return {"type": "result", **_json_value(result)}


@dataclasses.dataclass(frozen=True)
class RunOptions:
    """What ``agentshim run`` was asked to do, checked by the parser."""

    provider: str
    prompt: str
    model: str | None = None
    cwd: str | None = None
    timeout: float = 600.0
    resume: str | None = None
    transport: TransportKind = TransportKind.ONE_SHOT
    json: bool = False
    stand_in: bool = False
    catalog: ProviderCatalog = DEFAULT_CATALOG


class _Screen:
    """Where a turn's events go: readable lines or JSON lines on ``out``, a status line on ``err``."""

    def __init__(self, options: RunOptions, out: TextIO, err: TextIO) -> None:
        self.out = out
        self.json = options.json
        self.console = ConsoleEventHandler(stream=out, color=is_terminal(out))
        self.status = StatusLine(err, color=True) if is_terminal(err) and not options.json else None
        self.lock = self.status.lock if self.status is not None else threading.RLock()

    def on_event(self, event: AgentEvent) -> None:
        """Show ``event``: as a JSON line, or readably (usage only in the summary)."""
        with self.lock:
            if self.status is not None:
                self.status.erase()
            if self.json:
                self.out.write(json.dumps(_event_json(event), ensure_ascii=False) + "\n")
                self.out.flush()
            elif not isinstance(event, UsageReport):
                self.console.on_event(event)
            if self.status is not None:
                self.status.note(event)

    def say(self, stream: TextIO, text: str) -> None:
        """Write a line of the command's own (not the CLI's) without tearing the status line."""
        with self.lock:
            if self.status is not None:
                self.status.erase()
            stream.write(text + "\n")
            stream.flush()


def summary(result: TurnResult) -> str:
    """The one-line summary printed after a turn."""
    tokens = result.usage.tokens
    cost = f"${result.cost_usd:.4f}" if result.cost_usd is not None else "cost unknown"
    counted = "" if result.usage.increment_known else " (not reported)"
    state = "interrupted | " if result.interrupted else ""
    return (
        f"{state}session {result.session_id or '-'} | tokens {tokens.input_tokens} in, "
        f"{tokens.output_tokens} out{counted} | {cost} | {result.duration_ms / 1000:.2f} s"
    )


def _not_installed(provider: str, error: CliNotFoundError, err: TextIO) -> int:
    profile = DEFAULT_CATALOG.plugin(provider).profile
    install = profile.container_install[-1] if profile.container_install else None
    err.write(f"{profile.display_name} is not installed: {error}\n")
    if install:
        err.write(f"install it with: {install}\n")
    err.write("or try the bundled stand-in CLI: add --stand-in\n")
    return EXIT_NOT_INSTALLED


def run_turn(options: RunOptions, out: TextIO, err: TextIO) -> int:
    """Run one turn as ``options`` say; return the exit status (see the ``EXIT_*`` values).

    The turn runs on a worker thread so that this one can take Ctrl-C: the first interrupts
    the turn (what it produced so far is shown, status 130), the second kills the CLI.
    """
    base = stand_in_executor(options.provider) if options.stand_in else HostCommandExecutor()
    executor = _KillableExecutor(base)
    screen = _Screen(options, out, err)
    try:
        agent = Agent(
            options.provider,
            permissions=NativePermissions.bypass(),
            approvals=ApprovalPolicy.DENY,
            model=options.model,
            executor=executor,
            transport=options.transport,
            event_handlers=(screen,),
            catalog=options.catalog,
        )
        session = agent.start_session(options.cwd, session_id=options.resume)
    except AgentShimError as error:
        err.write(f"error: {error}\n")
        return EXIT_TURN_FAILED
    outcome: list[TurnResult | BaseException] = []
    # Waited on instead of Thread.join: a Ctrl-C that lands inside join() can leave the
    # thread looking finished while it still runs.
    finished = threading.Event()

    def work() -> None:
        try:
            request = TurnRequest(options.prompt, timeout=options.timeout)
            outcome.append(session.turn(request).result)
        except BaseException as error:
            outcome.append(error)
        finally:
            finished.set()

    worker = threading.Thread(target=work, name="agentshim-turn", daemon=True)
    presses = _CtrlC()
    if screen.status is not None:
        screen.status.start()
    with presses:
        worker.start()
        handled = 0
        while not finished.is_set():
            finished.wait(0.1)
            while handled < presses.count and not finished.is_set():
                handled += 1
                if handled == 1:
                    screen.say(err, "interrupting the turn (Ctrl-C again to kill the CLI)")
                    session.interrupt()
                elif handled == 2:
                    screen.say(err, "killing the CLI")
                    executor.kill()
    interrupts = presses.count
    if screen.status is not None:
        screen.status.stop()
    return _report(options, screen, outcome, interrupts, err)


def _report(
    options: RunOptions,
    screen: _Screen,
    outcome: list[TurnResult | BaseException],
    interrupts: int,
    err: TextIO,
) -> int:
    done = outcome[0] if outcome else None
    if isinstance(done, TurnResult):
        if options.json:
            screen.say(screen.out, json.dumps(_result_json(done), ensure_ascii=False))
        else:
            screen.say(screen.out, summary(done))
        return EXIT_INTERRUPTED if done.interrupted or interrupts else EXIT_OK
    if interrupts:
        reason = f": {done}" if isinstance(done, AgentShimError) else ""
        screen.say(err, f"interrupted{reason}")
        return EXIT_INTERRUPTED
    if isinstance(done, CliNotFoundError):
        return _not_installed(options.provider, done, err)
    if isinstance(done, AgentShimError):
        if options.json:
            line = {"type": "error", "error": type(done).__name__, "message": str(done)}
            screen.say(screen.out, json.dumps(line, ensure_ascii=False))
        screen.say(err, f"turn failed: {done}")
        return EXIT_TURN_FAILED
    if done is not None:
        raise done
    return EXIT_TURN_FAILED  # pragma: no cover - the worker always records an outcome
