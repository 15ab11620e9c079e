"""Codex's own sandbox as a provider option: the config, its argv rendering, and the inverse.

Without a :class:`CodexSandboxConfig` a turn passes ``--dangerously-bypass-approvals-and-sandbox``
(safe only inside an outside confinement). With one it passes ``--config`` overrides instead,
because ``codex exec resume`` has no ``--sandbox`` flag: ``sandbox_mode``, ``approval_policy``
and, for workspace-write, all four ``sandbox_workspace_write.*`` keys. A sandboxed turn also
passes ``--ignore-rules``, since an exec-policy allow rule runs its command outside the
sandbox; ``excluded_commands`` is the one case that needs rules to load (see ``rules.py``).
"""

from __future__ import annotations

import enum
import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentshim.core.jsonvalues import list_or_empty
from agentshim.core.permissions import NativeMode, NativePermissions

from ._config_flags import config_flag, read_config_flags

__all__ = [
    "APPROVAL_POLICIES",
    "BYPASS_FLAG",
    "IGNORE_RULES_FLAG",
    "CodexSandboxConfig",
    "CodexSandboxMode",
    "parse_sandbox",
    "render_sandbox",
    "writable_dirs",
]

#: The flag that turns Codex's sandbox and approvals off.
BYPASS_FLAG = "--dangerously-bypass-approvals-and-sandbox"
#: The flag that stops Codex loading exec-policy ``.rules`` files.
IGNORE_RULES_FLAG = "--ignore-rules"
#: The ``approval_policy`` values Codex accepts.
APPROVAL_POLICIES = frozenset({"never", "on-request", "on-failure", "untrusted"})

_WORKSPACE_TABLE = "sandbox_workspace_write"


class CodexSandboxMode(enum.Enum):
    """Codex's ``sandbox_mode`` values."""

    READ_ONLY = "read-only"
    WORKSPACE_WRITE = "workspace-write"
    DANGER_FULL_ACCESS = "danger-full-access"


@dataclass(frozen=True, slots=True)
class CodexSandboxConfig:
    """How Codex's own sandbox confines the commands a turn runs.

    ``writable_roots`` (absolute), ``network_access``, ``exclude_slash_tmp`` and
    ``exclude_tmpdir_env_var`` apply to workspace-write only. ``excluded_commands`` are
    command prefixes (``("git", "push")``) Codex may run outside the sandbox; they need a
    caller-dedicated ``CODEX_HOME`` (see ``rules.py``) and a sandbox to be excluded from.

    Raises:
        ValueError: an option that does not fit the mode, a relative root, an empty
            command prefix, or an approval policy Codex does not know.
    """

    mode: CodexSandboxMode = CodexSandboxMode.WORKSPACE_WRITE
    approval_policy: str = "never"
    writable_roots: tuple[str, ...] = ()
    network_access: bool = False
    exclude_slash_tmp: bool = False
    exclude_tmpdir_env_var: bool = False
    excluded_commands: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        object.__setattr__(self, "writable_roots", tuple(self.writable_roots))
        object.__setattr__(
            self, "excluded_commands", tuple(tuple(c) for c in self.excluded_commands)
        )
        if self.approval_policy not in APPROVAL_POLICIES:
            raise ValueError(
                f"approval_policy {self.approval_policy!r} is not one of "
                f"{', '.join(sorted(APPROVAL_POLICIES))}"
            )
        workspace_only = (
            self.writable_roots
            or self.network_access
            or self.exclude_slash_tmp
            or self.exclude_tmpdir_env_var
        )
        if workspace_only and self.mode is not CodexSandboxMode.WORKSPACE_WRITE:
            raise ValueError(
                "writable_roots, network_access and the tmp exclusions only apply to "
                f"workspace-write, not {self.mode.value}"
            )
        for root in self.writable_roots:
            if not os.path.isabs(root):
                raise ValueError(f"writable root {root!r} must be an absolute path")
        if self.excluded_commands and self.mode is CodexSandboxMode.DANGER_FULL_ACCESS:
            raise ValueError("excluded_commands need a sandbox to be excluded from")
        for command in self.excluded_commands:
            if not command or not all(word for word in command):
                raise ValueError(
                    f"excluded command {command!r} must be a non-empty prefix of non-empty words"
                )

    @classmethod
    def from_permissions(
        cls,
        permissions: NativePermissions,
        *,
        excluded_commands: Iterable[Sequence[str]] = (),
    ) -> CodexSandboxConfig | None:
        """Return the config for a portable permission setting; None for BYPASS (no sandbox)."""
        commands = tuple(tuple(c) for c in excluded_commands)
        if permissions.mode is NativeMode.BYPASS:
            if commands:
                raise ValueError("excluded_commands need a sandbox to be excluded from")
            return None
        if permissions.mode is NativeMode.READ_ONLY:
            return cls(CodexSandboxMode.READ_ONLY, excluded_commands=commands)
        return cls(
            CodexSandboxMode.WORKSPACE_WRITE,
            writable_roots=permissions.writable_roots,
            network_access=permissions.network,
            excluded_commands=commands,
        )


def render_sandbox(config: CodexSandboxConfig | None) -> list[str]:
    """Return the argv that sets up ``config`` (the bypass flag when it is None)."""
    if config is None:
        return [BYPASS_FLAG]
    argv = [
        *config_flag(("sandbox_mode",), config.mode.value),
        *config_flag(("approval_policy",), config.approval_policy),
    ]
    if config.mode is CodexSandboxMode.WORKSPACE_WRITE:
        argv += config_flag((_WORKSPACE_TABLE, "writable_roots"), list(config.writable_roots))
        argv += config_flag((_WORKSPACE_TABLE, "network_access"), config.network_access)
        argv += config_flag((_WORKSPACE_TABLE, "exclude_slash_tmp"), config.exclude_slash_tmp)
        argv += config_flag(
            (_WORKSPACE_TABLE, "exclude_tmpdir_env_var"), config.exclude_tmpdir_env_var
        )
    if not config.excluded_commands:
        argv.append(IGNORE_RULES_FLAG)
    return argv


def parse_sandbox(
    argv: Sequence[str], *, excluded_commands: Iterable[Sequence[str]] = ()
) -> CodexSandboxConfig | None:
    """Invert :func:`render_sandbox`: the config ``argv`` sets up, or None for the bypass flag.

    ``excluded_commands`` live in a rules file, not in argv; pass them (``rules.read_rules``)
    to rebuild a config that has them.

    Raises:
        ValueError: ``argv`` carries neither the bypass flag nor a ``sandbox_mode`` override,
            or the overrides do not make a valid config.
    """
    if BYPASS_FLAG in argv:
        return None
    settings: dict[str, Any] = {}
    workspace: dict[str, Any] = {}
    for key, value in read_config_flags(argv):
        if len(key) == 1 and key[0] in ("sandbox_mode", "approval_policy"):
            settings[key[0]] = value
        elif len(key) == 2 and key[0] == _WORKSPACE_TABLE:
            workspace[key[1]] = value
    if "sandbox_mode" not in settings:
        raise ValueError("argv sets up no Codex sandbox (no bypass flag, no sandbox_mode)")
    return CodexSandboxConfig(
        mode=CodexSandboxMode(settings["sandbox_mode"]),
        approval_policy=str(settings.get("approval_policy", "never")),
        writable_roots=tuple(str(r) for r in list_or_empty(workspace.get("writable_roots"))),
        network_access=workspace.get("network_access") is True,
        exclude_slash_tmp=workspace.get("exclude_slash_tmp") is True,
        exclude_tmpdir_env_var=workspace.get("exclude_tmpdir_env_var") is True,
        excluded_commands=tuple(tuple(c) for c in excluded_commands),
    )


def writable_dirs(
    config: CodexSandboxConfig, *, cwd: str | None, env: Mapping[str, str]
) -> tuple[str, ...] | None:
    """Return the directories commands may write under ``config``; None if cwd is unknown.

    Workspace-write lets commands write the turn's cwd, the writable roots, ``/tmp`` unless
    excluded, and ``$TMPDIR`` unless excluded; read-only lets them write nothing.
    """
    if config.mode is CodexSandboxMode.READ_ONLY:
        return ()
    if config.mode is CodexSandboxMode.DANGER_FULL_ACCESS:
        return ("/",)
    if cwd is None:
        return None
    dirs = [cwd, *config.writable_roots]
    if not config.exclude_slash_tmp:
        dirs.append("/tmp")
    tmpdir = env.get("TMPDIR")
    if tmpdir and not config.exclude_tmpdir_env_var:
        dirs.append(tmpdir)
    return tuple(dirs)
