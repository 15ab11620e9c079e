"""Ending what an interrupted or failed turn left running beside its long-lived CLI.

A one-shot turn ends its CLI, and everything the CLI started goes with it (the host
executor's run marker finds even what left the process group). A long-lived CLI stays: an
interrupted turn's tool (a ``sleep`` exec'd by ``bash -lc``, a command put in the background,
one that called ``setsid`` or ``nohup``, a grandchild of a subshell) would outlive the turn.
So every process the CLI starts inherits ``AGENTSHIM_CONVERSATION_RUN=<id>``, the
conversation's own value (an identifier, not a secret), and when a turn ends interrupted or
failed while the CLI lives on, every process of this user carrying it that started after the
turn was sent is ended (SIGTERM, a grace, SIGKILL), except the MCP servers the CLI keeps for
the conversation (and what they started), which a CLI may start during a turn.

Where processes cannot be found by their environment (no ``/proc``, no pidfds), nothing is
scanned and the CLI's own interrupt is all there is.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Sequence

from agentshim.core.mcp import McpServer, StdioMcpServer
from agentshim.execution.reaping import (
    boot_ticks,
    can_scan,
    command_line,
    new_run_id,
    parent_and_start,
    reap_marked,
)

__all__ = ["TURN_PROCESS_MARKER", "TurnLeftovers"]

TURN_PROCESS_MARKER = "AGENTSHIM_CONVERSATION_RUN"
"""The variable every process a long-lived CLI starts inherits, naming its conversation."""

# How far up a process's parents are followed to see whether an MCP server started it.
_MAX_DEPTH = 32


class TurnLeftovers:
    """Finds and ends what a conversation's turn started, by a marker in the environment.

    ``grace`` is how long a leftover has between SIGTERM and SIGKILL. Call :meth:`mark` on
    the environment of each process the conversation starts, :meth:`turn_sent` when a turn
    goes out, and :meth:`end` when it ended interrupted or failed (:meth:`turn_begins` first,
    so a turn that fails before it is sent ends nothing of the turn before it).
    """

    __slots__ = ("_cli", "_grace", "_kept", "_since", "value")

    def __init__(self, *, grace: float = 1.0) -> None:
        self.value = new_run_id()
        self._grace = grace
        self._since: int | None = None
        self._kept: tuple[tuple[str, tuple[str, ...]], ...] = ()
        self._cli: int | None = None

    def mark(self, env: dict[str, str], servers: Iterable[McpServer] = ()) -> None:
        """Mark ``env`` (a new process's) and remember the MCP servers that process keeps."""
        env[TURN_PROCESS_MARKER] = self.value
        self._cli = None
        self._kept = tuple(
            (os.path.basename(server.command), tuple(server.args))
            for server in servers
            if isinstance(server, StdioMcpServer)
        )

    def adopt(self, value: str, pid: int | None) -> None:
        """The conversation's process is ``pid``, started ahead with the marker ``value``."""
        self.value = value
        self._kept = ()
        self._cli = pid

    def started(self, pid: int | None) -> None:
        """The CLI the marked environment went to is ``pid`` (never the turn's, however new)."""
        self._cli = pid

    def turn_begins(self) -> None:
        """A turn begins: nothing is the turn's until it is sent."""
        self._since = None

    def turn_sent(self) -> None:
        """A turn is going out now: what starts from here on is the turn's."""
        # From the next tick on: what started in this one (the CLI, spawned for this very
        # turn a moment ago) cannot be the turn's, which the model has not even seen yet.
        self._since = boot_ticks() + 1 if can_scan() else None

    def end(self) -> int:
        """End what the turn sent last started and left running; how many processes ended."""
        since, self._since = self._since, None
        if since is None:
            return 0
        ended, _ = reap_marked(
            self.value,
            self._grace,
            name=TURN_PROCESS_MARKER,
            keep=lambda pid: self._keeps(pid, since),
        )
        return ended

    def _keeps(self, pid: int, since: int) -> bool:
        """Whether ``pid`` is not the turn's: it started before the turn, or serves MCP."""
        if pid == self._cli:
            return True
        found = parent_and_start(pid)
        if found is None:
            return True  # gone already
        if found[1] < since:
            return True
        for _ in range(_MAX_DEPTH):
            if _is_server(command_line(pid), self._kept):
                return True
            parent = parent_and_start(pid)
            if parent is None or parent[0] <= 1:
                return False
            pid = parent[0]
        return False


def _is_server(argv: Sequence[str], kept: Sequence[tuple[str, tuple[str, ...]]]) -> bool:
    """Whether ``argv`` runs one of the ``kept`` servers (its command, then its args in order)."""
    names = [os.path.basename(part) for part in argv]
    for command, args in kept:
        if command not in names:
            continue
        rest = list(argv[names.index(command) + 1 :])
        if not args or any(
            tuple(rest[i : i + len(args)]) == args for i in range(len(rest) - len(args) + 1)
        ):
            return True
    return False
