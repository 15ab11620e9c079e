"""FakeExecutor: a CommandExecutor that replays scripted runs and spawns fake processes.

Build an agent on a FakeExecutor, serve it :class:`FakeRun` objects (``scripted_turn`` makes
them in a provider's real stream format), and assert on what the agent returned and on
:attr:`FakeExecutor.requests`.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TypeVar, cast

from agentshim.core.errors import (
    CliNotFoundError,
    CliTimeoutError,
    LineTooLongError,
    TurnStalledError,
)
from agentshim.core.stream import DEFAULT_MAX_LINE_BYTES
from agentshim.execution.executor import (
    CommandRequest,
    CommandResult,
    CommandStreamSink,
)
from agentshim.execution.process import SpawnRequest
from agentshim.execution.readiness import check_version

from .process import FakePeer, FakeProcess, ReplayGates

__all__ = ["FakeCommandHandle", "FakeExecutor", "FakeRun"]

_T = TypeVar("_T")
_R = TypeVar("_R", CommandRequest, SpawnRequest)


@dataclass
class FakeRun:
    """What one fake command prints and how it ends.

    Each ``stdout``/``stderr`` entry is one line; a newline is added to an entry without one,
    as a real process's printed line would have it, except that with
    ``final_newline=False`` the last entry of each stream arrives as given (a process whose
    output does not end in a newline). With ``timeout=True`` the run delivers its lines and
    then raises CliTimeoutError at once, like a real run killed for overrunning. With
    ``until_stopped=True`` it delivers its lines and then keeps running, like a process that
    waits, until its handle is terminated or killed (``-SIGTERM``/``-SIGKILL``), the
    request's ``idle_timeout`` passes (TurnStalledError) or its timeout does
    (CliTimeoutError).
    """

    stdout: Sequence[str] = ()
    stderr: Sequence[str] = ()
    returncode: int = 0
    timeout: bool = False
    final_newline: bool = True
    until_stopped: bool = False


class FakeCommandHandle:
    """The handle a fake run hands its sink; records ``terminate()`` and ``kill()`` calls.

    A run whose handle is terminated or killed while it delivers lines stops delivering and
    ends with ``-SIGTERM`` or ``-SIGKILL``, as a real process group would.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._stopped = threading.Event()
        self.terminate_calls = 0
        self.kill_calls = 0

    @property
    def terminated(self) -> bool:
        """Whether ``terminate()`` was called."""
        return self.terminate_calls > 0

    @property
    def killed(self) -> bool:
        """Whether ``kill()`` was called."""
        return self.kill_calls > 0

    def terminate(self) -> None:
        """Record a terminate request."""
        with self._lock:
            self.terminate_calls += 1
        self._stopped.set()

    def kill(self) -> None:
        """Record a kill request."""
        with self._lock:
            self.kill_calls += 1
        self._stopped.set()

    def wait_stopped(self, timeout: float | None) -> bool:
        """Wait until ``terminate()`` or ``kill()`` is called; False when ``timeout`` passed."""
        return self._stopped.wait(timeout)

    def stopped_code(self) -> int | None:
        """The exit status a stop request forces (``-SIGKILL`` over ``-SIGTERM``), else None."""
        if self.killed:
            return -signal.SIGKILL
        if self.terminated:
            return -signal.SIGTERM
        return None


RunSource = FakeRun | Sequence[FakeRun] | Callable[[CommandRequest], FakeRun]
"""What FakeExecutor serves: one run for every request, one per request in order, or a function."""
PeerSource = FakePeer | Sequence[FakePeer] | Callable[[SpawnRequest], FakePeer]
"""What FakeExecutor spawns: one peer, one per spawn in order, or a function of the request."""


class FakeExecutor:
    """A CommandExecutor that never starts a process.

    Args:
        runs: The run every request gets, a sequence (one per request, in order), or a
            function of the request.
        binaries: Maps names to paths for :meth:`find_binary`; a name not in it is not
            found. ``None`` finds every name as itself.
        peers: What :meth:`spawn` connects a :class:`FakeProcess` to: a peer, a sequence of
            peers (one per spawn), or a function of the SpawnRequest.
        gates: Gates shared by every spawned process.
        unhealthy: Maps binary paths to the detail their health check fails with.
        versions: Maps binary paths to the run their ``--version`` health check gets.
        max_line_bytes: The longest line (UTF-8 bytes before its newline) a run may print,
            as on :class:`~agentshim.execution.host.HostCommandExecutor`: a longer one
            ends the run with LineTooLongError after the lines before it on its stream.

    Attributes:
        requests: Every CommandRequest run, in order.
        handles: The handle of each run, in order.
        checked: Every path :meth:`check_binary` was called on.
        spawned: Every SpawnRequest, in order.
        processes: The FakeProcess of each spawn, in order.
    """

    def __init__(
        self,
        runs: RunSource = (),
        *,
        binaries: Mapping[str, str] | None = None,
        peers: PeerSource | None = None,
        gates: ReplayGates | None = None,
        unhealthy: Mapping[str, str] | None = None,
        versions: Mapping[str, FakeRun] | None = None,
        max_line_bytes: int = DEFAULT_MAX_LINE_BYTES,
    ) -> None:
        self._runs = runs
        self._run_count = 0
        self._peers = peers
        self._spawn_count = 0
        self._binaries = None if binaries is None else dict(binaries)
        self._gates = gates
        self._unhealthy = dict(unhealthy or {})
        self._versions = dict(versions or {})
        self._max_line = max_line_bytes
        self._lock = threading.Lock()
        self.requests: list[CommandRequest] = []
        self.handles: list[FakeCommandHandle] = []
        self.checked: list[str] = []
        self.spawned: list[SpawnRequest] = []
        self.processes: list[FakeProcess] = []

    def find_binary(self, name: str, env: Mapping[str, str]) -> str:
        """Return ``binaries[name]`` (or ``name`` when no mapping was given).

        Raises:
            CliNotFoundError: ``name`` is not in ``binaries``.
        """
        del env
        if self._binaries is None:
            return name
        try:
            return self._binaries[name]
        except KeyError:
            raise CliNotFoundError(name) from None

    def check_binary(self, path: str, env: Mapping[str, str], *, timeout: float) -> None:
        """Record ``path`` and judge its ``--version`` as every executor does.

        The check does not use up a scripted run (and is not in :attr:`requests`): its
        ``--version`` is ``versions[path]`` when given, a failure printing
        ``unhealthy[path]`` when listed there, and otherwise a healthy answer.

        Raises:
            CliCheckError: That ``--version`` fails (see
                :func:`~agentshim.execution.readiness.check_version`).
        """
        with self._lock:
            self.checked.append(path)
        if path in self._versions:
            answer = self._versions[path]
        elif path in self._unhealthy:
            answer = FakeRun(stderr=[self._unhealthy[path]], returncode=1)
        else:
            answer = FakeRun(stdout=[f"{path} (fake)"])
        check_version(FakeExecutor(answer), path, env, timeout=timeout)

    def run(self, request: CommandRequest, sink: CommandStreamSink) -> CommandResult:
        """Deliver the scripted run's lines to ``sink`` on the calling thread.

        The handle comes first, then the stdout lines, then the stderr lines; a stop
        request through the handle ends the delivery. The result keeps what was delivered.

        Raises:
            CliTimeoutError: The run has ``timeout=True``, or ``until_stopped=True`` and
                the request's timeout passed before a stop (after its lines were delivered).
            LineTooLongError: A line is longer than ``max_line_bytes`` (after the lines
                before it on its stream were delivered).
        """
        handle = FakeCommandHandle()
        with self._lock:
            self.requests.append(request)
            self.handles.append(handle)
            scripted = None if callable(self._runs) else self._next_run(request)
        # A callable source runs outside the lock: it may block to hold a turn open, and
        # concurrent runs must stay concurrent.
        run = scripted if scripted is not None else self._next_run(request)
        sink.started(handle)
        delivered: tuple[list[str], list[str]] = ([], [])
        for lines, emit, kept in (
            (run.stdout, sink.stdout, delivered[0]),
            (run.stderr, sink.stderr, delivered[1]),
        ):
            for index, text in enumerate(lines):
                if handle.stopped_code() is not None:
                    break
                last = index == len(lines) - 1
                line = text if last and not run.final_newline else _line(text)
                self._check_length(request, line)
                emit(line)
                kept.append(line)
        if run.until_stopped:
            # It prints nothing more: the idle limit, when sooner, ends it before the budget.
            idle = request.idle_timeout
            stalls = idle is not None and (request.timeout is None or idle < request.timeout)
            if not handle.wait_stopped(idle if stalls else request.timeout):
                if stalls:
                    raise TurnStalledError(idle)
                raise CliTimeoutError(request.argv, request.timeout)
        stopped = handle.stopped_code()
        if run.timeout and stopped is None:
            raise CliTimeoutError(request.argv, request.timeout)
        return CommandResult(
            run.returncode if stopped is None else stopped,
            "".join(delivered[0]),
            "".join(delivered[1]),
        )

    def _check_length(self, request: CommandRequest, line: str) -> None:
        size = len(line.encode("utf-8", "replace")) - line.endswith("\n")
        if size > self._max_line:
            raise LineTooLongError(
                self._max_line,
                message=(
                    f"a line of {request.argv[0]!r} grew past {self._max_line} bytes "
                    "(FakeExecutor(max_line_bytes=...))"
                ),
            )

    def spawn(self, request: SpawnRequest) -> FakeProcess:
        """Start a FakeProcess talking to the next peer.

        Raises:
            AssertionError: No peers were configured, or the sequence is used up.
        """
        with self._lock:
            self.spawned.append(request)
            peer = self._next_peer(request)
        process = FakeProcess(peer, gates=self._gates, request=request)
        with self._lock:
            self.processes.append(process)
        return process

    def _next_run(self, request: CommandRequest) -> FakeRun:
        self._run_count += 1
        return _scripted(self._runs, FakeRun, request, self._run_count, "run(s)", "a run")

    def _next_peer(self, request: SpawnRequest) -> FakePeer:
        peers = self._peers
        if peers is None:
            raise AssertionError("FakeExecutor.spawn needs peers=...; none were given")
        self._spawn_count += 1
        return _scripted(peers, FakePeer, request, self._spawn_count, "peer(s)", "spawn")


def _scripted(
    script: _T | Sequence[_T] | Callable[[_R], _T],
    single: type[_T],
    request: _R,
    number: int,
    given: str,
    what: str,
) -> _T:
    """What the ``number``-th request (from 1) gets from ``script``.

    ``script`` is one ``single`` value every request gets, a function of the request, or a
    sequence handed out in order; AssertionError past its last item.
    """
    if isinstance(script, single):
        return cast("_T", script)
    if callable(script):
        return cast("Callable[[_R], _T]", script)(request)
    items = cast("Sequence[_T]", script)
    if number > len(items):
        raise AssertionError(
            f"FakeExecutor was given {len(items)} {given} but {what} number {number} was "
            f"requested: {list(request.argv)}"
        )
    return items[number - 1]


def _line(text: str) -> str:
    return text if text.endswith("\n") else text + "\n"
