"""Claude Code PreToolUse hook: deny native file tools outside the directories given in argv.

Usage (as Claude Code runs it): ``python confine_reads.py ROOT [ROOT ...]`` with the hook's
JSON input on stdin. A call whose paths all resolve (symlinks followed) inside a root is let
through silently; anything else is denied.

It fails closed: no roots, input that is not a JSON object, a tool input without the path it
needs, or any error of its own all deny the call. A denial prints Claude Code's PreToolUse
``deny`` decision on stdout, the reason on stderr, and exits 2 (Claude Code's "blocking
error"), so the call is blocked whichever of the two the CLI honours.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Sequence
from typing import Any, TextIO

__all__ = ["DENY_EXIT_CODE", "main"]

DENY_EXIT_CODE = 2
"""Claude Code treats a hook exit code of 2 as a blocking error: the tool call does not run."""

_FILE_KEYS = ("file_path", "notebook_path", "path")
_PATH_TOOLS = {
    "Read": "file_path",
    "Edit": "file_path",
    "MultiEdit": "file_path",
    "Write": "file_path",
    "NotebookEdit": "notebook_path",
}
_SEARCH_TOOLS = ("Glob", "Grep")
_GLOB_CHARS = "*?[{"


class _Refused(Exception):
    """The hook cannot tell which paths the call touches; the message says why."""


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and value and "\0" not in value else None


def _absolute(path: str, cwd: str | None) -> str:
    if os.path.isabs(path):
        return path
    if cwd is None:
        raise _Refused(f"the relative path {path!r} cannot be resolved without the session cwd")
    return os.path.join(cwd, path)


def _static_prefix(pattern: str) -> str:
    """The directory part of a glob pattern before its first wildcard (``""`` for none)."""
    cut = min((i for i, char in enumerate(pattern) if char in _GLOB_CHARS), default=len(pattern))
    head = pattern[:cut]
    return head if head.endswith("/") or cut == len(pattern) else os.path.dirname(head)


def _paths_to_check(tool: object, tool_input: object, cwd: object) -> list[str]:
    """Return the absolute paths a tool call would touch; raise _Refused when unknowable."""
    if not isinstance(tool_input, dict):
        raise _Refused("the tool input is not an object")
    fields: dict[str, Any] = tool_input  # pyright: ignore[reportUnknownVariableType]
    base_dir = _text(cwd)
    if tool in _PATH_TOOLS:
        key = _PATH_TOOLS[str(tool)]
        path = _text(fields.get(key))
        if path is None:
            raise _Refused(f"{tool} input has no {key}")
        return [_absolute(path, base_dir)]
    if tool in _SEARCH_TOOLS:
        given = _text(fields.get("path"))
        if given is None and base_dir is None:
            raise _Refused(f"{tool} has neither a path nor a session cwd to search")
        base = _absolute(given, base_dir) if given is not None else str(base_dir)
        paths = [base]
        pattern = _text(fields.get("pattern")) if tool == "Glob" else None
        if pattern is not None:
            prefix = _static_prefix(pattern)
            if prefix:
                paths.append(os.path.join(base, prefix))
        return paths
    found = [_text(fields.get(key)) for key in _FILE_KEYS]
    paths = [_absolute(path, base_dir) for path in found if path is not None]
    if not paths:
        raise _Refused(f"cannot tell which paths {tool!r} would touch")
    return paths


def _inside(path: str, roots: Sequence[str]) -> bool:
    resolved = os.path.realpath(path)
    for root in roots:
        if resolved == root or resolved.startswith(root.rstrip(os.sep) + os.sep):
            return True
    return False


def _deny(reason: str, stdout: TextIO, stderr: TextIO) -> int:
    decision = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "deny",
            "permissionDecisionReason": reason,
        }
    }
    stdout.write(json.dumps(decision) + "\n")
    stderr.write(reason + "\n")
    return DENY_EXIT_CODE


def _decide(argv: Sequence[str], stdin: TextIO, stdout: TextIO, stderr: TextIO) -> int:
    roots = [os.path.realpath(root) for root in argv if root]
    if not roots:
        return _deny(
            "agentshim read confinement: no allowed directories were given", stdout, stderr
        )
    try:
        payload: object = json.loads(stdin.read())
    except (ValueError, RecursionError):
        return _deny("agentshim read confinement: the hook input is not JSON", stdout, stderr)
    if not isinstance(payload, dict):
        return _deny("agentshim read confinement: the hook input is not an object", stdout, stderr)
    event: dict[str, Any] = payload  # pyright: ignore[reportUnknownVariableType]
    tool = event.get("tool_name")
    try:
        paths = _paths_to_check(tool, event.get("tool_input"), event.get("cwd"))
    except _Refused as exc:
        return _deny(f"agentshim read confinement: {exc}", stdout, stderr)
    for path in paths:
        if not _inside(path, roots):
            allowed = ", ".join(roots)
            return _deny(
                f"agentshim read confinement: {tool} may not access {path}; "
                f"only paths under {allowed} are allowed",
                stdout,
                stderr,
            )
    return 0


def main(
    argv: Sequence[str] | None = None,
    stdin: TextIO | None = None,
    stdout: TextIO | None = None,
    stderr: TextIO | None = None,
) -> int:
    """Decide one tool call; return 0 to let it through, DENY_EXIT_CODE to block it."""
    out = stdout if stdout is not None else sys.stdout
    err = stderr if stderr is not None else sys.stderr
    try:
        return _decide(
            list(sys.argv[1:] if argv is None else argv),
            stdin if stdin is not None else sys.stdin,
            out,
            err,
        )
    except BaseException as exc:  # any failure of the hook itself must block, not allow
        return _deny(f"agentshim read confinement failed ({exc!r}); denying", out, err)


if __name__ == "__main__":
    sys.exit(main())
