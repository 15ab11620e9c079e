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

from agentshim.core._checks import instance, sequence
from agentshim.core.errors import InvalidRequestError
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
_NO_SANDBOX_TO_EXCLUDE_FROM = (
    "excluded_commands need a sandbox to be excluded from; pick a sandbox mode other than "
    "bypass or danger-full-access, or drop excluded_commands"
)


class CodexSandboxMode(enum.Enum):
    """Codex's ``sandbox_mode`` values."""

    READ_ONLY = "read-only"
    WORKSPACE_WRITE = "workspace-write"
    DANGER_FULL_ACCESS = "danger-full-access"


def _word(label: str, word: object, *, path: bool) -> str:
    # Roots reach a TOML override and words a rules file: both need text UTF-8 can carry.
    # A path cannot hold NUL; a word may (the rules file escapes it), it just never matches.
    if not isinstance(word, str) or not word or (path and "\0" in word):
        what = "a non-empty path without NUL characters" if path else "a non-empty string"
        raise InvalidRequestError(
            label, f"{word!r} is not {what}", f"{label} entry {word!r} must be {what}"
        )
    try:
        word.encode("utf-8")
    except UnicodeEncodeError:
        raise InvalidRequestError(
            label,
            f"{word!r} is not valid UTF-8",
            f"{label} entry {word!r} is not valid UTF-8 (a lone surrogate); pass real text",
        ) from None
    return word


def _strings(label: str, values: object) -> tuple[str, ...]:
    field = f"CodexSandboxConfig.{label}"
    return tuple(
        _word(field, v, path=True)
        for v in sequence("", field, values, "paths such as ('/abs/dir',)")
    )


def _commands(
    values: object, label: str = "CodexSandboxConfig.excluded_commands"
) -> tuple[tuple[str, ...], ...]:
    commands: list[tuple[str, ...]] = []
    for command in sequence("", label, values, "commands such as [('git', 'push')]"):
        words = sequence("", label, command, "words such as ('git', 'push')")
        if not words:
            raise InvalidRequestError(
                label,
                "an empty command prefix",
                f"{label} holds an empty command prefix, which would exclude every command; "
                "name at least the program, such as ('git', 'push')",
            )
        commands.append(tuple(_word(label, w, path=False) for w in words))
    return tuple(commands)


@dataclass(frozen=True, slots=True)
class CodexSandboxConfig:
    """How Codex's own sandbox confines the commands a turn runs.

    ``writable_roots`` (absolute), ``network_access``, ``exclude_slash_tmp`` and
    ``exclude_tmpdir_env_var`` apply to workspace-write only. ``excluded_commands`` are
    command prefixes (``("git", "push")``) Codex may run outside the sandbox; they need a
    caller-dedicated ``CODEX_HOME`` (see ``rules.py``) and a sandbox to be excluded from.

    Raises:
        InvalidRequestError: an option that does not fit the mode, a relative root, an empty
            command prefix, a command given as one string, or an approval policy Codex does
            not know.
    """

    mode: CodexSandboxMode = CodexSandboxMode.WORKSPACE_WRITE
    approval_policy: str = "never"
    writable_roots: tuple[str, ...] = ()
    network_access: bool = False
    exclude_slash_tmp: bool = False
    exclude_tmpdir_env_var: bool = False
    excluded_commands: tuple[tuple[str, ...], ...] = ()

    def __post_init__(self) -> None:
        hint = "a CodexSandboxMode (such as CodexSandboxMode.WORKSPACE_WRITE)"
        instance("CodexSandboxConfig", "mode", self.mode, CodexSandboxMode, hint)
        roots = _strings("writable_roots", self.writable_roots)
        commands = _commands(self.excluded_commands)
        object.__setattr__(self, "writable_roots", roots)
        object.__setattr__(self, "excluded_commands", commands)
        if not isinstance(self.approval_policy, str) or (  # pyright: ignore[reportUnnecessaryIsInstance]
            self.approval_policy not in APPROVAL_POLICIES
        ):
            raise InvalidRequestError(
                "CodexSandboxConfig.approval_policy",
                "not a policy Codex knows",
                f"CodexSandboxConfig.approval_policy {self.approval_policy!r} is not one Codex "
                f"knows; pass one of {', '.join(sorted(APPROVAL_POLICIES))}",
            )
        workspace_only = [
            name
            for name in (
                "writable_roots",
                "network_access",
                "exclude_slash_tmp",
                "exclude_tmpdir_env_var",
            )
            if getattr(self, name)
        ]
        if workspace_only and self.mode is not CodexSandboxMode.WORKSPACE_WRITE:
            raise InvalidRequestError(
                f"CodexSandboxConfig.{workspace_only[0]}",
                f"only applies to workspace-write, not {self.mode.value}",
                f"CodexSandboxConfig.{', '.join(workspace_only)} only apply to workspace-write, "
                f"not {self.mode.value}; use CodexSandboxMode.WORKSPACE_WRITE or leave them unset",
            )
        for root in roots:
            if not os.path.isabs(root):
                raise InvalidRequestError(
                    "CodexSandboxConfig.writable_roots",
                    f"{root!r} is relative",
                    f"CodexSandboxConfig.writable_roots entry {root!r} is relative; pass an "
                    "absolute path",
                )
        if commands and self.mode is CodexSandboxMode.DANGER_FULL_ACCESS:
            raise InvalidRequestError(
                "CodexSandboxConfig.excluded_commands",
                "set without a sandbox",
                _NO_SANDBOX_TO_EXCLUDE_FROM,
            )

    @classmethod
    def from_permissions(
        cls,
        permissions: NativePermissions,
        *,
        excluded_commands: Iterable[Sequence[str]] = (),
    ) -> CodexSandboxConfig | None:
        """Return the config for a portable permission setting; None for BYPASS (no sandbox).

        Raises:
            InvalidRequestError: ``excluded_commands`` with BYPASS, or a malformed command.
        """
        commands = _commands(excluded_commands, "excluded_commands")
        if permissions.mode is NativeMode.BYPASS:
            if commands:
                raise InvalidRequestError(
                    "excluded_commands", "set without a sandbox", _NO_SANDBOX_TO_EXCLUDE_FROM
                )
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
        InvalidRequestError: ``argv`` carries neither the bypass flag nor a known
            ``sandbox_mode`` override, or the overrides do not make a valid config.
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
        raise InvalidRequestError(
            "argv",
            "sets up no Codex sandbox",
            "argv sets up no Codex sandbox (no bypass flag, no sandbox_mode); pass an argv "
            "that render_sandbox produced",
        )
    try:
        mode = CodexSandboxMode(settings["sandbox_mode"])
    except ValueError:
        raise InvalidRequestError(
            "argv",
            f"unknown sandbox_mode {settings['sandbox_mode']!r}",
            f"argv sets sandbox_mode to {settings['sandbox_mode']!r}, which is not one of "
            f"{', '.join(m.value for m in CodexSandboxMode)}",
        ) from None
    return CodexSandboxConfig(
        mode=mode,
        approval_policy=str(settings.get("approval_policy", "never")),
        writable_roots=tuple(str(r) for r in list_or_empty(workspace.get("writable_roots"))),
        network_access=workspace.get("network_access") is True,
        exclude_slash_tmp=workspace.get("exclude_slash_tmp") is True,
        exclude_tmpdir_env_var=workspace.get("exclude_tmpdir_env_var") is True,
        excluded_commands=_commands(excluded_commands, "excluded_commands"),
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
