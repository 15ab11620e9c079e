"""Claude Code's own sandbox, as a ``--settings`` block, and the read-confinement hook entry.

The sandbox confines the commands Claude Code's Bash tool runs; its native file tools (Read,
Edit, ...) are not sandboxed processes, so ``confine_native_reads_to`` adds a PreToolUse hook
that denies them outside the given directories. The CLI also needs
``CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR=1`` in its environment (``SANDBOX_ENV``), which the
caller merges into ``CliAgent(env=...)``.
"""

from __future__ import annotations

import json
import os
import shlex
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any

from agentshim.core._checks import sequence
from agentshim.core.errors import InvalidRequestError

from .hooks import CONFINE_READS_SCRIPT, CONFINED_TOOLS_MATCHER

__all__ = ["SANDBOX_ENV", "SandboxConfig", "confine_reads_hook"]

SANDBOX_ENV: Mapping[str, str] = MappingProxyType({"CLAUDE_BASH_MAINTAIN_PROJECT_WORKING_DIR": "1"})
"""Environment the CLI needs for its sandbox: keep Bash in the project's working directory."""


def _strings(label: str, values: Sequence[str]) -> tuple[str, ...]:
    field = f"SandboxConfig.{label}"
    result: list[str] = []
    for value in sequence("SandboxConfig", label, values, "strings"):
        if not isinstance(value, str) or not value or "\0" in value:
            raise InvalidRequestError(
                field,
                f"invalid entry {value!r}",
                f"{field} has an invalid entry {value!r}; each entry must be a non-empty "
                "string without NUL characters",
            )
        result.append(value)
    return tuple(result)


def _json_extra(extra: Mapping[str, Any]) -> Mapping[str, Any]:
    # ``extra`` ends up in the --settings JSON; a value JSON cannot hold would otherwise
    # fail later, as a bare TypeError from json.dumps, when the provider is built.
    if not isinstance(extra, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InvalidRequestError(
            "SandboxConfig.extra",
            "not a mapping",
            f"SandboxConfig.extra must be a mapping of settings keys to JSON values, not {extra!r}",
        )
    copied = dict(extra)
    for key in copied:
        if not isinstance(key, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "SandboxConfig.extra",
                f"key {key!r} is not a string",
                f"SandboxConfig.extra key {key!r} must be a string (a settings key)",
            )
    try:
        json.dumps(copied, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise InvalidRequestError(
            "SandboxConfig.extra",
            f"not JSON ({error})",
            f"SandboxConfig.extra cannot be written as JSON settings ({error}); use string "
            "keys and JSON values (str, int, float, bool, None, lists, dicts)",
        ) from None
    return MappingProxyType(copied)


def _empty_extra() -> Mapping[str, Any]:
    return MappingProxyType({})


@dataclass(frozen=True, slots=True)
class SandboxConfig:
    """Claude Code's sandbox for its Bash tool, rendered into the ``--settings`` object.

    The defaults are the safe ones: fail when the sandbox cannot start rather than run
    unsandboxed, never let a command opt out of it, and allow no network domain. Paths are
    given as Claude Code reads them (absolute paths, or its own ``//``/``~`` prefixes).
    ``confine_native_reads_to`` (absolute directories) adds the read-confinement hook for the
    native file tools; ``extra`` keys (JSON values) are merged into the ``sandbox`` block last.

    Raises:
        InvalidRequestError: a list given as one string or holding an empty or non-string
            entry, a relative ``confine_native_reads_to`` entry, or ``extra`` that is not JSON.
    """

    fail_if_unavailable: bool = True
    auto_allow_bash_if_sandboxed: bool = True
    allow_unsandboxed_commands: bool = False
    excluded_commands: Sequence[str] = ()
    allow_write: Sequence[str] = ()
    deny_write: Sequence[str] = ()
    allow_read: Sequence[str] = ()
    deny_read: Sequence[str] = ()
    allowed_domains: Sequence[str] = ()
    confine_native_reads_to: Sequence[str] = ()
    extra: Mapping[str, Any] = field(default_factory=_empty_extra)

    def __post_init__(self) -> None:
        for label in (
            "excluded_commands",
            "allow_write",
            "deny_write",
            "allow_read",
            "deny_read",
            "allowed_domains",
            "confine_native_reads_to",
        ):
            object.__setattr__(self, label, _strings(label, getattr(self, label)))
        for root in self.confine_native_reads_to:
            if not os.path.isabs(root):
                raise InvalidRequestError(
                    "SandboxConfig.confine_native_reads_to",
                    f"{root!r} is relative",
                    f"SandboxConfig.confine_native_reads_to entry {root!r} is relative; pass "
                    "an absolute directory",
                )
        object.__setattr__(self, "extra", _json_extra(self.extra))

    def settings(self) -> dict[str, Any]:
        """Return the ``{"sandbox": {...}}`` settings block."""
        block: dict[str, Any] = {
            "enabled": True,
            "failIfUnavailable": self.fail_if_unavailable,
            "autoAllowBashIfSandboxed": self.auto_allow_bash_if_sandboxed,
            "allowUnsandboxedCommands": self.allow_unsandboxed_commands,
        }
        if self.excluded_commands:
            block["excludedCommands"] = list(self.excluded_commands)
        filesystem = {
            key: list(values)
            for key, values in (
                ("allowWrite", self.allow_write),
                ("denyWrite", self.deny_write),
                ("allowRead", self.allow_read),
                ("denyRead", self.deny_read),
            )
            if values
        }
        if filesystem:
            block["filesystem"] = filesystem
        block["network"] = {"allowedDomains": list(self.allowed_domains)}
        block.update(self.extra)
        return {"sandbox": block}


def confine_reads_hook(roots: Sequence[str], *, python: str | None = None) -> dict[str, Any]:
    """Return the PreToolUse hook entry denying native file tools outside ``roots``.

    The hook runs the bundled script with ``python`` (default ``sys.executable``) and the
    roots resolved with symlinks followed, as the script compares resolved paths.
    """
    if isinstance(roots, str) or not roots:
        raise InvalidRequestError(
            "roots",
            "not a non-empty sequence of directories",
            f"confine_reads_hook roots must name at least one allowed directory, not "
            f"{roots!r}; pass a sequence of absolute directories",
        )
    argv = [python or sys.executable, str(CONFINE_READS_SCRIPT)]
    argv.extend(os.path.realpath(root) for root in roots)
    return {
        "matcher": CONFINED_TOOLS_MATCHER,
        "hooks": [{"type": "command", "command": shlex.join(argv)}],
    }
