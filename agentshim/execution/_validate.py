"""Checks that turn a request no process could be started with into InvalidRequestError.

Private to the execution package. The request dataclasses check their own fields when they
are built; :func:`check_start` checks what only matters when a real process is started (a
NUL byte cannot cross ``execve``), so a double or a container runner may still see such a
request and decide for itself.
"""

from __future__ import annotations

import sys
from collections.abc import Mapping, Sequence

from agentshim.core._checks import is_positive_seconds
from agentshim.core.errors import InvalidRequestError

__all__ = ["check_start", "checked_argv", "checked_timeout", "empty_env"]

# Windows keeps per-drive directories in variables named like "=C:", so there a name may
# start with "=" (CPython refuses "=" anywhere else); POSIX names may not contain it at all.
_NAME_MAY_START_WITH_EQUALS = 1 if sys.platform == "win32" else 0


def empty_env() -> Mapping[str, str]:
    """The environment of a request that names none: empty (a request's env is the whole one)."""
    return {}


def checked_argv(argv: Sequence[str], owner: str) -> tuple[str, ...]:
    """Return ``argv`` as a tuple, refusing a bare string and an empty sequence.

    Raises:
        InvalidRequestError: ``argv`` is a string or names no program.
    """
    value: object = argv
    if isinstance(value, (str, bytes)):
        # tuple("claude") would quietly become ("c", "l", "a", ...).
        raise InvalidRequestError(
            "argv",
            "a single string instead of a sequence of arguments",
            f"{owner}.argv is the string {argv!r}; pass a sequence such as [{argv!r}] "
            "(program first, then one item per argument)",
        )
    items = tuple(argv)
    if not items:
        raise InvalidRequestError(
            "argv",
            "empty",
            f"{owner}.argv must name a program; pass at least the program to run",
        )
    return items


def checked_timeout(timeout: float | None, owner: str, field: str = "timeout") -> None:
    """Accept ``None`` or a finite number of seconds above zero (``field`` names it).

    Raises:
        InvalidRequestError: ``timeout`` is a bool, not a number, NaN, infinite, or <= 0.
    """
    if timeout is None:
        return
    if not is_positive_seconds(timeout):
        raise InvalidRequestError(
            field,
            f"{timeout!r} is not a finite number of seconds above zero",
            f"{owner}.{field} must be a finite number of seconds above zero, got "
            f"{timeout!r}; pass None for no limit",
        )


def check_start(argv: Sequence[str], cwd: str | None, env: Mapping[str, str]) -> None:
    """Refuse what the operating system cannot pass to a new process.

    Values of variables are never quoted in messages: they are often secrets.

    Raises:
        InvalidRequestError: A NUL byte in an argument, a variable's name or value, or the
            working directory; or a ``=`` in a variable's name.
    """
    program = argv[0] if argv else ""
    for index, arg in enumerate(argv):
        if _has_nul(arg):
            raise InvalidRequestError(
                "argv",
                f"argument {index} contains a NUL byte",
                f"cannot run {program!r}: argument {index} contains a NUL byte, which no "
                "program can receive; remove it (send binary data through stdin or a file)",
            )
    for name, text in env.items():
        if _has_nul(name) or _has_equals(name):
            bad = "a NUL byte" if _has_nul(name) else "'='"
            raise InvalidRequestError(
                "env",
                f"variable name {name!r} contains {bad}",
                f"cannot run {program!r}: the environment variable name {name!r} contains "
                f"{bad}, which no environment can hold; rename or drop the variable",
            )
        if _has_nul(text):
            raise InvalidRequestError(
                "env",
                f"the value of {name!r} contains a NUL byte",
                f"cannot run {program!r}: the value of the environment variable {name!r} "
                "contains a NUL byte, which no environment can hold; remove it or pass the "
                "data another way (a file, stdin)",
            )
    if _has_nul(cwd):
        raise InvalidRequestError(
            "cwd",
            "contains a NUL byte",
            f"cannot run {program!r}: the working directory {cwd!r} contains a NUL byte, "
            "so it cannot be a path; pass the directory's real path",
        )


# Typed as str, but callers may pass bytes (or a path), which Popen accepts as they are.
def _has_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\0" in value
    return isinstance(value, bytes) and b"\0" in value


def _has_equals(name: object) -> bool:
    if isinstance(name, str):
        return "=" in name[_NAME_MAY_START_WITH_EQUALS:]
    return isinstance(name, bytes) and b"=" in name[_NAME_MAY_START_WITH_EQUALS:]
