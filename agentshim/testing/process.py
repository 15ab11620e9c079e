"""FakeProcess: a Process whose other end is a Python object answering reactively.

A :class:`FakePeer` is told when the process starts, each line written to its stdin, when
stdin closes and when it is asked to terminate; each hook returns the outputs the "process"
prints in answer, so a protocol fake can reply to a request by its id. A peer may return a
:class:`GateMarker`: nothing past it is delivered while that gate is closed in the process's
:class:`ReplayGates`, which lets a test pause a conversation at a chosen point.
"""

from __future__ import annotations

import signal
import threading
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from agentshim.core.errors import ProcessClosedError
from agentshim.execution._deadline import Deadline
from agentshim.execution.process import (
    ProcessExited,
    ProcessOutput,
    SpawnRequest,
    StderrLine,
    StdoutLine,
)

__all__ = [
    "EchoPeer",
    "FakePeer",
    "FakeProcess",
    "GateMarker",
    "PeerOutput",
    "ReplayGates",
    "SilentPeer",
]


@dataclass(frozen=True, slots=True)
class GateMarker:
    """A point in a peer's output that is only passed while gate ``name`` is open."""

    name: str


PeerOutput = StdoutLine | StderrLine | ProcessExited | GateMarker
"""What a peer hook may return: lines, a gate marker, or the process's exit."""


class FakePeer:
    """The other end of a FakeProcess; subclass it and override the hooks you need.

    Every hook returns what the process prints in answer, in order. Returning a
    :class:`ProcessExited` ends the process (anything after it is dropped). Hooks run
    under the process's lock, on the thread that called the process method.
    """

    def on_start(self) -> Iterable[PeerOutput]:
        """The process started; by default it prints nothing."""
        return ()

    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        """A line arrived on stdin (with its newline, unless it was cut off by close)."""
        del line
        return ()

    def on_stdin_closed(self) -> Iterable[PeerOutput]:
        """Stdin reached end-of-file; by default the process keeps running."""
        return ()

    def on_terminate(self) -> Iterable[PeerOutput]:
        """SIGTERM arrived; by default the process exits with ``-SIGTERM``.

        Return no :class:`ProcessExited` to model a process that ignores SIGTERM.
        """
        return (ProcessExited(-signal.SIGTERM),)


class EchoPeer(FakePeer):
    """Prints every stdin line back on stdout and exits with ``exit_code`` when stdin closes."""

    def __init__(self, *, exit_code: int = 0) -> None:
        self.exit_code = exit_code

    def on_stdin(self, line: str) -> Iterable[PeerOutput]:
        """Echo ``line``."""
        return (StdoutLine(line),)

    def on_stdin_closed(self) -> Iterable[PeerOutput]:
        """Exit with ``exit_code``."""
        return (ProcessExited(self.exit_code),)


class SilentPeer(FakePeer):
    """Reads everything, prints nothing, and runs until it is terminated or killed."""


class ReplayGates:
    """Named gates that hold back a FakeProcess's output at a :class:`GateMarker`.

    A gate is open unless it was closed (here or with ``closed=``). Safe from any thread;
    opening a gate wakes every process waiting at it.
    """

    def __init__(self, closed: Iterable[str] = ()) -> None:
        self._lock = threading.Lock()
        self._closed = set(closed)
        self._reached: set[str] = set()
        self._listeners: list[Callable[[], None]] = []

    def close(self, name: str) -> None:
        """Close gate ``name``."""
        with self._lock:
            self._closed.add(name)

    def open(self, name: str) -> None:
        """Open gate ``name`` and wake the processes held at it."""
        with self._lock:
            self._closed.discard(name)
            listeners = list(self._listeners)
        for wake in listeners:
            wake()

    def is_open(self, name: str) -> bool:
        """Whether gate ``name`` lets output pass."""
        with self._lock:
            return name not in self._closed

    def reached(self, name: str) -> bool:
        """Whether some process has been held at gate ``name``."""
        with self._lock:
            return name in self._reached

    def holds(self, name: str) -> bool:
        """Whether output must wait at gate ``name`` now; a closed gate counts as reached."""
        with self._lock:
            if name not in self._closed:
                return False
            self._reached.add(name)
            return True

    def subscribe(self, wake: Callable[[], None]) -> None:
        """Call ``wake`` whenever a gate opens (FakeProcess uses it to stop waiting)."""
        with self._lock:
            self._listeners.append(wake)


class FakeProcess:
    """A Process driven by a :class:`FakePeer`, with no OS process behind it.

    Behaves like HostProcess (``agentshim.testing.contracts.ProcessContract`` checks both):
    output is pulled with :meth:`next_output`, :class:`ProcessExited` comes last and then
    forever, writes after stdin closed or the process exited raise ProcessClosedError.

    Attributes:
        peer: The peer answering this process.
        request: The SpawnRequest that started it, when spawned by FakeExecutor.
        written: The data of every successful :meth:`write` call, in order.
        terminate_calls: How often :meth:`terminate` was called.
        kill_calls: How often :meth:`kill` was called.
    """

    def __init__(
        self,
        peer: FakePeer,
        *,
        gates: ReplayGates | None = None,
        request: SpawnRequest | None = None,
    ) -> None:
        self.peer = peer
        self.request = request
        self.written: list[str] = []
        self.terminate_calls = 0
        self.kill_calls = 0
        self._gates = gates
        self._cond = threading.Condition(threading.RLock())
        self._pending: deque[PeerOutput] = deque()
        self._exit: ProcessExited | None = None
        self._stdin_closed = False
        self._partial = ""
        self._woken = False
        if gates is not None:
            gates.subscribe(self._wake)
        with self._cond:
            self._emit(peer.on_start())

    @property
    def stdin_closed(self) -> bool:
        """Whether stdin was closed."""
        return self._stdin_closed

    @property
    def returncode(self) -> int | None:
        """The exit status once the peer ended the process, else ``None``."""
        return None if self._exit is None else self._exit.returncode

    def write(self, data: str) -> None:
        """Hand every complete line of ``data`` to the peer.

        Raises:
            ProcessClosedError: stdin was closed or the process has exited.
        """
        with self._cond:
            if self._stdin_closed or self._exit is not None:
                raise ProcessClosedError(
                    "cannot write: the fake process's stdin is closed or it has exited"
                )
            self.written.append(data)
            buffered = self._partial + data
            lines = buffered.split("\n")
            self._partial = lines.pop()
            for line in lines:
                if self._exit is not None:
                    break  # an exited process reads nothing more
                self._emit(self.peer.on_stdin(line + "\n"))
            self._cond.notify_all()

    def close_stdin(self) -> None:
        """Close stdin: a cut-off last line goes to the peer, then ``on_stdin_closed``."""
        with self._cond:
            if self._stdin_closed:
                return
            self._stdin_closed = True
            if self._exit is None:
                if self._partial:
                    self._emit(self.peer.on_stdin(self._partial))
                self._partial = ""
                if self._exit is None:
                    self._emit(self.peer.on_stdin_closed())
            self._cond.notify_all()

    def next_output(self, timeout: float | None) -> ProcessOutput | None:
        """Return the next deliverable output, waiting up to ``timeout`` for one."""
        deadline = Deadline(timeout)
        with self._cond:
            while True:
                head = self._head()
                if isinstance(head, ProcessExited):
                    return head
                if head is not None:
                    self._pending.popleft()
                    return head
                if self._woken:
                    self._woken = False
                    return None
                if deadline.passed():
                    return None
                self._cond.wait(deadline.remaining())

    def wake(self) -> None:
        """Make a blocked :meth:`next_output` return now (``None`` if nothing came)."""
        with self._cond:
            self._woken = True
            self._cond.notify_all()

    def terminate(self) -> None:
        """Ask the peer to terminate (``on_terminate``); idempotent once exited."""
        with self._cond:
            self.terminate_calls += 1
            if self._exit is None:
                self._emit(self.peer.on_terminate(), stopping=True)
            self._cond.notify_all()

    def kill(self) -> None:
        """End the process with ``-SIGKILL``; idempotent once exited."""
        with self._cond:
            self.kill_calls += 1
            if self._exit is None:
                self._emit((ProcessExited(-signal.SIGKILL),), stopping=True)
            self._cond.notify_all()

    def wait(self, timeout: float | None) -> int | None:
        """Wait until the peer ended the process; return its status, or None on timeout."""
        with self._cond:
            self._cond.wait_for(lambda: self._exit is not None, timeout)
            return None if self._exit is None else self._exit.returncode

    def _emit(self, outputs: Iterable[PeerOutput], *, stopping: bool = False) -> None:
        for output in outputs:
            if self._exit is not None:
                return
            if isinstance(output, ProcessExited):
                if stopping:
                    self._drop_held_output()
                self._exit = output
            self._pending.append(output)

    def _drop_held_output(self) -> None:
        # A stopped process never prints what it was still holding back at a closed gate.
        kept: deque[PeerOutput] = deque()
        for output in self._pending:
            if isinstance(output, GateMarker) and not self._gate_open(output.name):
                break
            kept.append(output)
        self._pending = kept

    def _head(self) -> ProcessOutput | None:
        pending = self._pending
        while pending:
            head = pending[0]
            if not isinstance(head, GateMarker):
                return head
            if self._gates is not None and self._gates.holds(head.name):
                return None
            pending.popleft()
        return None

    def _gate_open(self, name: str) -> bool:
        return self._gates is None or self._gates.is_open(name)

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()
