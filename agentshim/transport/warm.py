"""Processes started before the conversation that will use them: a warm pool for one-per-process CLIs.

A CLI that serves one conversation per process (Claude Code's stream-json) can still be
started ahead of time: :class:`WarmProcesses` holds processes spawned with exactly the
request a new conversation would make (argv, working directory, environment), and hands one
to the first conversation that asks for that request, which then says its hello and runs its
first turn on it without waiting for the CLI to start. A process that died while it waited
is ended and never handed out. What is never taken is ended by :meth:`WarmProcesses.release`,
or, given a :class:`WarmIdle`, once it has waited that long (by the Agent's idle housekeeper,
the thread that releases idle conversations' processes: no thread of its own).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from agentshim.core.clock import Monotonic
from agentshim.core.errors import CliExitError, CliTimeoutError, FailureKind
from agentshim.core.failures import kind_from_text
from agentshim.core.stream import parse_json_object
from agentshim.execution.process import Process, ProcessExited, StderrLine, end_process
from agentshim.execution.reaping import new_run_id

from .channel import Channel
from .installed import InstalledCli
from .leftovers import TURN_PROCESS_MARKER

__all__ = [
    "HELLO_TIMEOUT",
    "IdleRelease",
    "IdleSchedule",
    "WarmIdle",
    "WarmProcess",
    "WarmProcesses",
    "greet",
]


class IdleRelease(Protocol):
    """Something that ends what it keeps once that has been idle long enough."""

    def release_if_idle(self) -> bool:
        """End what has been idle long enough (now, on this thread); whether it ended any."""
        ...


class IdleSchedule(Protocol):
    """Who looks at an :class:`IdleRelease` when it is due: an Agent's idle housekeeper."""

    def schedule(self, session: IdleRelease, due: float, /) -> None:
        """Call ``session.release_if_idle()`` at ``due``; replaces its earlier due time."""
        ...

    def forget(self, session: IdleRelease, /) -> None:
        """Do not look at ``session`` (what it keeps is in use again)."""
        ...


@dataclass(frozen=True, slots=True)
class WarmIdle:
    """How long a warm process may wait unused before it is ended, and who ends it.

    ``after`` seconds on ``monotonic`` (the schedule's clock) since it last served nobody; the
    ``schedule`` calls back when that is due.
    """

    schedule: IdleSchedule
    after: float
    monotonic: Monotonic

    def due(self) -> float:
        """When something that goes idle now is due."""
        return self.monotonic() + self.after


_Key = tuple[tuple[str, ...], str | None, tuple[tuple[str, str], ...]]


def _key(argv: Sequence[str], cwd: str | None, env: Mapping[str, str]) -> _Key:
    return tuple(argv), cwd, tuple(sorted(env.items()))


@dataclass(frozen=True, slots=True)
class WarmProcess:
    """A process started ahead, and the value of the leftovers marker its environment carries.

    The conversation that takes it takes the marker too: what the process starts carries
    that value (see :mod:`agentshim.transport.leftovers`).
    """

    process: Process
    marker: str


class WarmProcesses:
    """Started processes waiting for a conversation that starts exactly like them; thread-safe.

    ``close_grace`` is how long each step of ending a process is given.
    """

    def __init__(self, close_grace: float = 5.0) -> None:
        self._close_grace = close_grace
        self._lock = threading.Lock()
        self._waiting: dict[_Key, list[WarmProcess]] = {}
        self._due: dict[int, float] = {}
        self._idle: WarmIdle | None = None

    def start(
        self,
        context: InstalledCli,
        launch: tuple[Sequence[str], Mapping[str, str]],
        cwd: str | None,
        hello: Callable[[Channel], None],
        idle: WarmIdle | None = None,
    ) -> None:
        """Start a process with ``launch`` (argv, env) in ``cwd``, greet it, and keep it.

        ``hello`` returns once the process is ready (or raises: it is killed then). The
        process's environment also carries a leftovers marker of its own, which a
        conversation that takes it takes with it. With ``idle``, it is ended once it has
        waited ``idle.after`` seconds untaken.

        Raises:
            What spawning or ``hello`` raises.
        """
        argv, env = launch
        marker = new_run_id()
        process = context.spawn(argv, {**env, TURN_PROCESS_MARKER: marker}, cwd)
        try:
            hello(Channel(process, argv, monotonic=context.monotonic))
        except BaseException:
            process.kill()
            process.wait(self._close_grace)
            raise
        warm = WarmProcess(process, marker)
        with self._lock:
            self._waiting.setdefault(_key(argv, cwd, env), []).append(warm)
            if idle is None:
                return
            self._idle = idle
            self._due[id(warm)] = idle.due()
            first = min(self._due.values())
        idle.schedule.schedule(self, first)

    def release_if_idle(self) -> bool:
        """End the processes that waited their idle time; look again when the next is due."""
        idle = self._idle
        if idle is None:
            return False
        now, ended = idle.monotonic(), list[WarmProcess]()
        with self._lock:
            for waiting in self._waiting.values():
                for warm in list(waiting):
                    if self._due.get(id(warm), now + 1) <= now:
                        waiting.remove(warm)
                        del self._due[id(warm)]
                        ended.append(warm)
            following = min(self._due.values(), default=None)
        if following is not None:
            idle.schedule.schedule(self, following)
        for warm in ended:
            end_process(warm.process, self._close_grace)
        return bool(ended)

    def take(
        self, argv: Sequence[str], cwd: str | None, env: Mapping[str, str]
    ) -> WarmProcess | None:
        """A running process started with this argv, cwd and env, no longer kept; or None."""
        dead: list[WarmProcess] = []
        found: WarmProcess | None = None
        with self._lock:
            waiting = self._waiting.get(_key(argv, cwd, env), [])
            while waiting and found is None:
                warm = waiting.pop(0)
                self._due.pop(id(warm), None)
                if warm.process.wait(0) is None:
                    found = warm
                else:
                    dead.append(warm)
        for warm in dead:
            end_process(warm.process, self._close_grace)
        return found

    def count(self) -> int:
        """How many processes are kept now."""
        with self._lock:
            return sum(len(waiting) for waiting in self._waiting.values())

    def release(self) -> None:
        """End every process still kept."""
        with self._lock:
            kept = [warm for waiting in self._waiting.values() for warm in waiting]
            self._waiting.clear()
            self._due.clear()
            idle, self._idle = self._idle, None
        if idle is not None:
            idle.schedule.forget(self)
        for warm in kept:
            end_process(warm.process, self._close_grace)


HELLO_TIMEOUT = 60.0
"""How long a warm process may take to answer its greeting."""


def greet(
    channel: Channel,
    frame: Mapping[str, Any],
    answers: Callable[[Mapping[str, Any]], bool],
    monotonic: Monotonic,
    *,
    cli: str,
) -> None:
    """Send ``frame`` to a new process and read until a frame ``answers`` it: then it is ready.

    ``cli`` is how messages name the CLI (its command, as typed to check it starts).

    Raises:
        CliExitError: it ended first (the kind its stderr reads as).
        CliTimeoutError: it did not answer within ``HELLO_TIMEOUT``.
    """
    channel.send(frame)
    deadline = monotonic() + HELLO_TIMEOUT
    stderr: list[str] = []
    while True:
        output = channel.read_until(deadline)
        if output is None:
            raise CliTimeoutError(
                channel.argv,
                HELLO_TIMEOUT,
                message=f"{cli} did not answer within {HELLO_TIMEOUT:g} s of starting a warm "
                f"process; check that it starts: {cli} --version",
            )
        if isinstance(output, ProcessExited):
            said = "".join(stderr)
            raise CliExitError(
                channel.argv,
                output.returncode,
                stderr=said,
                kind=kind_from_text(said) or FailureKind.OTHER,
                detail=f"{cli} exited before it answered, while starting a warm process",
            )
        if isinstance(output, StderrLine):
            stderr.append(output.text)
            continue
        said = parse_json_object(output.text)
        if said is not None and answers(said):
            return
