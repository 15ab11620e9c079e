"""Caller-supplied Claude Code hooks (``ClaudeHook``) and the one ``--settings`` object.

``build_settings`` merges the sandbox block, agentshim's own read-confinement hook and the
caller's hooks into a single settings object, agentshim's hook first on each event, and
returns an empty dict when there is nothing to say (then no ``--settings`` flag is passed).
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from agentshim.core._checks import matching, seconds
from agentshim.core.errors import InvalidRequestError

from .sandbox import SandboxConfig, confine_reads_hook

__all__ = ["ClaudeHook", "build_settings"]

_EVENT_NAME = re.compile(r"[A-Z][A-Za-z]*")


@dataclass(frozen=True, slots=True)
class ClaudeHook:
    """One command hook: run ``command`` (an argv tuple) on ``event`` for tools ``matcher``.

    ``event`` is a Claude Code hook event name in PascalCase (``PreToolUse``, ``Stop``, ...);
    ``matcher`` is Claude Code's tool-name pattern (None matches every tool or has no
    meaning for the event); ``timeout`` is a positive number of seconds or None for the
    CLI's default. Invalid values raise InvalidRequestError (a ValueError) when the hook is
    built.
    """

    event: str
    command: Sequence[str]
    matcher: str | None = None
    timeout: float | None = None

    def __post_init__(self) -> None:
        hint = (
            f"ClaudeHook event {self.event!r} must be a PascalCase hook event name "
            "such as 'PreToolUse' or 'Stop'"
        )
        matching("ClaudeHook", "event", self.event, _EVENT_NAME, "a hook event name", hint)
        if isinstance(self.command, str) or not isinstance(self.command, Iterable):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "ClaudeHook.command",
                "not an argv sequence",
                f"ClaudeHook command must be an argv sequence such as ('/usr/bin/check', "
                f"'--strict'), not {self.command!r}",
            )
        command = tuple(self.command)
        if not command:
            raise InvalidRequestError(
                "ClaudeHook.command",
                "empty",
                "ClaudeHook command must name a program; pass at least the program to run",
            )
        for arg in command:
            _check_arg(arg)
        if self.matcher is not None and (not isinstance(self.matcher, str) or "\0" in self.matcher):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "ClaudeHook.matcher",
                f"{self.matcher!r} is not a valid string",
                f"ClaudeHook matcher {self.matcher!r} must be a tool-name pattern string "
                "without NUL characters, or None to match every tool",
            )
        if self.timeout is not None:
            seconds("ClaudeHook", "timeout", self.timeout, positive=True)
        object.__setattr__(self, "command", command)

    def entry(self) -> dict[str, Any]:
        """Return the hook as Claude Code's settings list it under its event."""
        hook: dict[str, Any] = {"type": "command", "command": shlex.join(self.command)}
        if self.timeout is not None:
            hook["timeout"] = self.timeout
        entry: dict[str, Any] = {"hooks": [hook]}
        if self.matcher is not None:
            entry = {"matcher": self.matcher, **entry}
        return entry


def _check_arg(arg: object) -> None:
    if not isinstance(arg, str):
        raise InvalidRequestError(
            "ClaudeHook.command",
            f"argument {arg!r} is not a string",
            f"ClaudeHook command arguments must be strings, not {arg!r}",
        )
    if "\0" in arg:
        raise InvalidRequestError(
            "ClaudeHook.command",
            f"argument {arg!r} contains a NUL character",
            f"ClaudeHook command argument {arg!r} contains a NUL character, which no program "
            "can receive; remove it",
        )
    try:
        arg.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequestError(
            "ClaudeHook.command",
            f"argument {arg!r} is not valid UTF-8",
            f"ClaudeHook command argument {arg!r} is not valid UTF-8 (a lone surrogate); "
            "pass real text",
        ) from None


def build_settings(
    sandbox: SandboxConfig | None = None,
    hooks: Sequence[ClaudeHook] = (),
    *,
    python: str | None = None,
) -> dict[str, Any]:
    """Return the one ``--settings`` object for ``sandbox`` and ``hooks`` (``{}`` for neither).

    On each hook event agentshim's read-confinement hook (when the sandbox asks for it) comes
    first, then the caller's hooks in the order given.
    """
    settings: dict[str, Any] = {}
    events: dict[str, list[dict[str, Any]]] = {}
    if sandbox is not None:
        settings.update(sandbox.settings())
        if sandbox.confine_native_reads_to:
            events["PreToolUse"] = [
                confine_reads_hook(sandbox.confine_native_reads_to, python=python)
            ]
    for hook in hooks:
        events.setdefault(hook.event, []).append(hook.entry())
    if events:
        settings["hooks"] = events
    return settings
