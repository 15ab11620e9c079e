"""Long-lived processes: the caller writes to stdin and pulls output lines when it wants them.

Output is pulled, never pushed: :meth:`Process.next_output` returns the next
:class:`StdoutLine` or :class:`StderrLine`, then :class:`ProcessExited` once everything the
process printed has been returned, and :class:`ProcessExited` again on every later call.
Because the caller decides when output is consumed, no callback ever runs on a foreign thread
and a simulation controls the interleaving exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from ._validate import checked_argv, empty_env

__all__ = [
    "Process",
    "ProcessExited",
    "ProcessOutput",
    "SpawnRequest",
    "StderrLine",
    "StdoutLine",
    "end_process",
]


@dataclass(frozen=True, slots=True)
class SpawnRequest:
    """A long-lived process to start; stdin, stdout and stderr are pipes.

    Raises :class:`~agentshim.core.errors.InvalidRequestError` when built with an empty argv
    or a bare string as argv.

    Attributes:
        argv: The program and its arguments; never empty.
        cwd: Working directory; ``None`` keeps the caller's.
        env: The complete environment of the process (not an overlay).
    """

    argv: Sequence[str]
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=empty_env)

    def __post_init__(self) -> None:
        object.__setattr__(self, "argv", checked_argv(self.argv, "SpawnRequest"))


@dataclass(frozen=True, slots=True)
class StdoutLine:
    """One line the process printed on stdout, with its trailing newline if it had one."""

    text: str


@dataclass(frozen=True, slots=True)
class StderrLine:
    """One line the process printed on stderr, with its trailing newline if it had one."""

    text: str


@dataclass(frozen=True, slots=True)
class ProcessExited:
    """The process exited and all of its output has been returned; always the last output."""

    returncode: int


ProcessOutput = StdoutLine | StderrLine | ProcessExited
"""What :meth:`Process.next_output` returns."""


class Process(Protocol):
    """A running process the caller talks to; every method is safe from any thread."""

    def write(self, data: str) -> None:
        """Write ``data`` (UTF-8) to stdin; one call's bytes are never interleaved with another's.

        Raises:
            ProcessClosedError: stdin was closed or the process is gone.
        """
        ...

    def close_stdin(self) -> None:
        """Close stdin so the process reads end-of-file; idempotent."""
        ...

    def next_output(self, timeout: float | None) -> ProcessOutput | None:
        """Return the next output, or ``None`` when ``timeout`` seconds pass with nothing.

        An implementation may raise an AgentShimError in place of output it cannot deliver
        (:class:`~agentshim.execution.HostProcess` raises LineTooLongError for a line over
        its limit), once, and go on with the next output on the following call.
        """
        ...

    def wake(self) -> None:
        """Make a :meth:`next_output` blocked on another thread return now; thread-safe.

        The woken call returns what it has, or ``None`` as if its timeout had passed; a wake
        with no call blocked makes the next call return at once. This is how a long-lived
        transport reading on one thread notices an interrupt sent from another.
        """
        ...

    def terminate(self) -> None:
        """Ask the process group to stop (SIGTERM), killing it after a grace; idempotent."""
        ...

    def kill(self) -> None:
        """Kill the process group now (SIGKILL); idempotent."""
        ...

    def wait(self, timeout: float | None) -> int | None:
        """Wait for the process to end; return its exit status, or ``None`` on timeout.

        ``wait(0)`` never blocks and still looks: it says whether the process has ended by
        now (a process killed while nobody read it included), keeping its output queued.
        """
        ...


def end_process(process: Process, grace: float) -> int | None:
    """End ``process`` politely: stdin EOF, then SIGTERM, then SIGKILL, ``grace`` seconds apart.

    Returns its exit status (None if even SIGKILL could not be confirmed within the grace).
    """
    process.close_stdin()
    code = process.wait(grace)
    if code is None:
        process.terminate()
        code = process.wait(grace)
    if code is None:
        process.kill()
        code = process.wait(grace)
    return code
