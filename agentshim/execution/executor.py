"""The command-execution seam: one request in, one result out, every line streamed to a sink.

Everything above this module (providers, sessions) talks to a :class:`CommandExecutor` and
never to :mod:`subprocess`, so a caller can swap the host for a container, a sandbox or a
test double without touching anything else.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Protocol

from ._validate import checked_argv, checked_timeout, empty_env

if TYPE_CHECKING:
    from .process import Process, SpawnRequest

__all__ = [
    "CallbackSink",
    "CommandExecutor",
    "CommandHandle",
    "CommandRequest",
    "CommandResult",
    "CommandStreamSink",
    "NullSink",
    "SideChannel",
]


@dataclass(frozen=True, slots=True)
class CommandRequest:
    """One command to run to completion.

    Raises :class:`~agentshim.core.errors.InvalidRequestError` when built with an empty argv,
    a bare string as argv, or a timeout that is not ``None`` or a finite number of seconds
    above zero (NaN, infinity and booleans are refused).

    Attributes:
        argv: The program and its arguments; never empty. The program is looked up on
            ``env``'s PATH when it has no directory part.
        stdin: Text written to the process's stdin (UTF-8), which is then closed. ``None``
            closes stdin at once; stdin is a pipe either way, never a terminal.
        cwd: Working directory of the process; ``None`` keeps the caller's.
        env: The complete environment of the process (not an overlay); a host run adds
            only its run marker, ``AGENTSHIM_RUN_ID``, which finds what the run left behind.
        timeout: Seconds the whole run may take; ``None`` waits as long as it takes.
        idle_timeout: Seconds the process may print nothing (on either stream) before its
            process group is killed and the run raises TurnStalledError; ``None``: no limit.
    """

    argv: Sequence[str]
    stdin: str | None = None
    cwd: str | None = None
    env: Mapping[str, str] = field(default_factory=empty_env)
    timeout: float | None = None
    idle_timeout: float | None = None

    def __post_init__(self) -> None:
        argv = checked_argv(self.argv, "CommandRequest")
        checked_timeout(self.timeout, "CommandRequest")
        checked_timeout(self.idle_timeout, "CommandRequest", "idle_timeout")
        object.__setattr__(self, "argv", argv)


@dataclass(frozen=True, slots=True)
class CommandResult:
    """How a finished command ended.

    Attributes:
        returncode: Exit status; a process killed by signal N reports ``-N``. Always an int:
            the executor always waits for the process.
        stdout: The last part of what the process printed on stdout (executors keep a
            bounded tail; every line was delivered to the sink in full).
        stderr: The same for stderr.
    """

    returncode: int
    stdout: str = ""
    stderr: str = ""


class CommandHandle(Protocol):
    """Stops a running command; safe to call from any thread, at any time, any number of times."""

    def terminate(self) -> None:
        """Ask the command's process group to stop (SIGTERM), killing it after a grace period."""
        ...

    def kill(self) -> None:
        """Kill the command's process group now (SIGKILL)."""
        ...


class SideChannel(Protocol):
    """Something else a run serves while it waits on the command (a turn's tools, say).

    A sink that has a ``side_channel`` attribute holding one gets it served on the thread
    that called ``run``: the run waits on ``fileno()`` next to the command's pipes and calls
    ``ready()`` when it is readable (an executor that cannot wait on it calls ``ready()``
    every few tens of milliseconds instead).
    """

    def fileno(self) -> int:
        """A descriptor that is readable while something waits to be served."""
        ...

    def ready(self) -> bool:
        """Serve what waits, without blocking on it; whether anything was served."""
        ...


class CommandStreamSink(Protocol):
    """Receives a running command's handle and output, on the thread that called ``run``.

    Lines keep their trailing newline; a final line the process did not terminate arrives
    without one. A sink that raises stops the command: the process group is killed and the
    exception propagates out of ``run``. A sink may also carry a ``side_channel``
    (:class:`SideChannel`) the run serves on the same thread.
    """

    def started(self, handle: CommandHandle) -> None:
        """Called once, after the process started and before any of its output."""
        ...

    # Positional-only, so a plain callable stored as the attribute satisfies the protocol.
    def stdout(self, line: str, /) -> None:
        """Called with each stdout line, in order."""
        ...

    def stderr(self, line: str, /) -> None:
        """Called with each stderr line, in order."""
        ...


def _ignore_line(line: str) -> None:
    del line


def _ignore_handle(handle: CommandHandle) -> None:
    del handle


class CallbackSink:
    """A sink built from plain callables; any of them may be omitted."""

    __slots__ = ("_on_started", "stderr", "stdout")

    def __init__(
        self,
        on_stdout: Callable[[str], None] | None = None,
        on_stderr: Callable[[str], None] | None = None,
        on_started: Callable[[CommandHandle], None] | None = None,
    ) -> None:
        # The line callbacks are stored as the sink's own methods so the executor's hot loop
        # calls the user's function directly, with no forwarding frame per line.
        self.stdout = on_stdout or _ignore_line
        self.stderr = on_stderr or _ignore_line
        self._on_started: Callable[[CommandHandle], None] = on_started or _ignore_handle

    def started(self, handle: CommandHandle) -> None:
        """Forward the handle to ``on_started``."""
        self._on_started(handle)


class NullSink:
    """A sink that discards everything."""

    __slots__ = ()

    def started(self, handle: CommandHandle) -> None:
        """Ignore the handle."""

    def stdout(self, line: str) -> None:
        """Discard the line."""

    def stderr(self, line: str) -> None:
        """Discard the line."""


class CommandExecutor(Protocol):
    """Runs commands somewhere: on the host, in a container, or in a test double."""

    def find_binary(self, name: str, env: Mapping[str, str]) -> str:
        """Return the path of ``name`` on ``env``'s PATH.

        Raises:
            CliNotFoundError: Nothing executable by that name is on the PATH.
        """
        ...

    def check_binary(self, path: str, env: Mapping[str, str], *, timeout: float) -> None:
        """Run ``path --version`` (through :meth:`run`) and fail unless it exits 0.

        Raises:
            CliCheckError: The probe failed, timed out, or could not start.
        """
        ...

    def run(self, request: CommandRequest, sink: CommandStreamSink) -> CommandResult:
        """Run ``request`` to completion, streaming its output to ``sink``.

        Raises:
            CliTimeoutError: The run overran ``request.timeout``; its process group was killed.
            CliNotFoundError: The program does not exist or is not executable.
        """
        ...

    def spawn(self, request: SpawnRequest) -> Process:
        """Start a long-lived process the caller writes to and reads from."""
        ...
