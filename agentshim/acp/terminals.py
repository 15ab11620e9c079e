"""The ``terminal/*`` client methods: commands an agent runs through the library's executor.

A terminal is a process spawned by the conversation's executor (so a Confinement, the
executor's reaping and its environment apply), in the workspace or a directory inside it.
Its output (stdout and stderr, in order) is kept up to a byte limit, cut from the start.
Every terminal still running when the turn ends is killed and reaped; an interrupt kills
them too, so a ``terminal/wait_for_exit`` the agent is blocked in returns.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from agentshim.core.jsonvalues import as_count, as_mapping, as_str, list_or_empty
from agentshim.execution.executor import CommandExecutor
from agentshim.execution.process import Process, ProcessExited, SpawnRequest

from .clientside import FileRefused, confined_path

__all__ = ["Terminals"]


@dataclass
class _Terminal:
    process: Process
    limit: int
    output: str = ""
    truncated: bool = False
    exit: int | None = None
    done: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)

    def take(self, text: str) -> None:
        output = self.output + text
        data = output.encode("utf-8")
        if len(data) > self.limit:
            self.truncated = True
            output = data[len(data) - self.limit :].decode("utf-8", errors="ignore")
        self.output = output

    def drain(self, timeout: float | None) -> None:
        """Read what the process printed; with ``timeout`` None, until it exits."""
        while not self.done:
            got = self.process.next_output(timeout)
            if got is None:
                return
            if isinstance(got, ProcessExited):
                self.done, self.exit = True, got.returncode
                return
            self.take(got.text)

    def status(self) -> dict[str, Any]:
        if self.exit is None:
            return {}
        if self.exit < 0:
            name = signal.Signals(-self.exit).name if -self.exit in signal.valid_signals() else ""
            return {"exitCode": None, "signal": name or str(-self.exit)}
        return {"exitCode": self.exit, "signal": None}


class Terminals:
    """The terminals one conversation's agent made, by id."""

    def __init__(
        self, executor: CommandExecutor, env: Mapping[str, str], workspace: str, limit: int
    ) -> None:
        self._executor = executor
        self._env = dict(env)
        self._workspace = workspace
        self._limit = limit
        self._lock = threading.Lock()
        self._terminals: dict[str, _Terminal] = {}
        self._count = 0

    def handle(self, method: str, params: Mapping[str, Any]) -> dict[str, Any]:
        """The result of ``terminal/<...>`` ``method``.

        Raises:
            FileRefused: a cwd outside the workspace, an unknown terminal, or no command.
        """
        if method == "terminal/create":
            return self._create(params)
        terminal = self._get(params)
        with terminal.lock:
            if method == "terminal/output":
                terminal.drain(0)
                result: dict[str, Any] = {
                    "output": terminal.output,
                    "truncated": terminal.truncated,
                }
                if terminal.done:
                    result["exitStatus"] = terminal.status()
                return result
            if method == "terminal/wait_for_exit":
                terminal.drain(None)
                return terminal.status()
            if method == "terminal/kill":
                terminal.process.kill()
                return {}
        if method == "terminal/release":
            self._release(as_str(params.get("terminalId")) or "")
            return {}
        raise FileRefused(f"no such terminal method {method}")

    def _create(self, params: Mapping[str, Any]) -> dict[str, Any]:
        command = as_str(params.get("command"))
        if not command:
            raise FileRefused("terminal/create names no command")
        args = [arg for arg in list_or_empty(params.get("args")) if isinstance(arg, str)]
        cwd = params.get("cwd")
        where = self._workspace if cwd is None else confined_path(self._workspace, cwd)
        env = dict(self._env)
        for entry in list_or_empty(params.get("env")):
            pair = as_mapping(entry) or {}
            name, value = as_str(pair.get("name")), as_str(pair.get("value"))
            if name and value is not None:
                env[name] = value
        asked = params.get("outputByteLimit")
        limit = min(as_count(asked), self._limit) if asked is not None else self._limit
        process = self._executor.spawn(SpawnRequest([command, *args], cwd=where, env=env))
        process.close_stdin()
        with self._lock:
            self._count += 1
            terminal_id = f"term_{self._count}"
            self._terminals[terminal_id] = _Terminal(process, limit)
        return {"terminalId": terminal_id}

    def _get(self, params: Mapping[str, Any]) -> _Terminal:
        with self._lock:
            terminal = self._terminals.get(as_str(params.get("terminalId")) or "")
        if terminal is None:
            raise FileRefused(f"no terminal {params.get('terminalId')!r:.80}")
        return terminal

    def _release(self, terminal_id: str) -> None:
        with self._lock:
            terminal = self._terminals.pop(terminal_id, None)
        if terminal is not None:
            terminal.process.kill()
            terminal.process.wait(None)

    def kill_all(self) -> None:
        """Kill every running terminal (any thread): a wait on one returns."""
        with self._lock:
            running = list(self._terminals.values())
        for terminal in running:
            terminal.process.kill()
            terminal.process.wake()

    def release_all(self) -> None:
        """Kill and reap every terminal; nothing of theirs outlives the turn."""
        with self._lock:
            ids = list(self._terminals)
        for terminal_id in ids:
            self._release(terminal_id)
