"""``excluded_commands`` as a Codex exec-policy rules file in a caller-dedicated CODEX_HOME.

Codex reads exec-policy rules only from ``.rules`` files (``$CODEX_HOME/rules/`` and trusted
projects), never from ``--config``, and an ``allow`` rule runs its command outside the sandbox.
So a sandboxed turn normally passes ``--ignore-rules``; a turn with ``excluded_commands`` omits
it and relies on exactly one rules file, written here. That is only safe when no command the
sandbox lets run can add a rule of its own: ``CODEX_HOME`` must be absolute and lie outside
every directory the sandbox lets commands write (the turn's cwd, the writable roots, ``/tmp``
and ``$TMPDIR`` unless excluded), and its ``rules/`` directory must hold no other rules file.
:func:`check_codex_home` and :func:`install_rules` refuse the turn otherwise.
"""

from __future__ import annotations

import contextlib
import os
import secrets
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from agentshim.core.errors import InvalidRequestError, ProviderCapabilityError

from .sandbox import CodexSandboxConfig, writable_dirs

__all__ = [
    "CODEX_HOME_ENV",
    "RULES_FILE_NAME",
    "check_codex_home",
    "install_rules",
    "read_rules",
    "render_rules",
    "rules_path",
]

#: The variable that relocates Codex's state directory.
CODEX_HOME_ENV = "CODEX_HOME"
#: The one rules file agentshim writes under ``$CODEX_HOME/rules/``.
RULES_FILE_NAME = "agentshim.rules"
_RULES_DIR = "rules"
_HEADER = "# excluded_commands of a sandboxed codex turn; rewritten by agentshim on every turn.\n"
_RULE_START = "prefix_rule(pattern=["
_RULE_END = '], decision="allow")'
_SHORT_ESCAPES = {"\\": "\\\\", '"': '\\"', "\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _starlark_string(text: str) -> str:
    out: list[str] = []
    for char in text:
        escaped = _SHORT_ESCAPES.get(char)
        if escaped is not None:
            out.append(escaped)
        elif ord(char) < 0x20 or ord(char) == 0x7F:
            out.append(f"\\x{ord(char):02x}")
        else:
            out.append(char)
    return '"' + "".join(out) + '"'


def render_rules(excluded_commands: Iterable[Sequence[str]]) -> str:
    """Return the rules file text: one ``prefix_rule(..., decision="allow")`` per command."""
    lines = [_HEADER]
    for command in excluded_commands:
        words = ", ".join(_starlark_string(word) for word in command)
        lines.append(f"{_RULE_START}{words}{_RULE_END}\n")
    return "".join(lines)


def _read_string(text: str, pos: int) -> tuple[str, int]:
    if text[pos] != '"':
        raise ValueError(f"expected a string at offset {pos}")
    pos += 1
    out: list[str] = []
    reverse = {v[1]: k for k, v in _SHORT_ESCAPES.items()}
    while text[pos] != '"':
        if text[pos] == "\\":
            code = text[pos + 1]
            if code == "x":
                out.append(chr(int(text[pos + 2 : pos + 4], 16)))
                pos += 4
                continue
            out.append(reverse[code])
            pos += 2
            continue
        out.append(text[pos])
        pos += 1
    return "".join(out), pos + 1


def read_rules(text: str) -> tuple[tuple[str, ...], ...]:
    """Invert :func:`render_rules`: the command prefixes a rules file it wrote allows.

    Raises:
        InvalidRequestError: a rule line is not in the form ``render_rules`` writes.
    """
    commands: list[tuple[str, ...]] = []
    # Only "\n" ends a Starlark line; str.splitlines would also split inside a word.
    for line in text.split("\n"):
        if not line.startswith(_RULE_START):
            continue
        pos = len(_RULE_START)
        words: list[str] = []
        try:
            while not line.startswith(_RULE_END, pos):
                if words:
                    if not line.startswith(", ", pos):
                        raise ValueError(f"expected ', ' at offset {pos}")
                    pos += 2
                word, pos = _read_string(line, pos)
                words.append(word)
        except (IndexError, KeyError, ValueError) as error:
            # The reader's own ValueErrors (and int()'s, for a bad \x escape) end up here.
            raise InvalidRequestError(
                "text",
                f"malformed rule line {line!r}",
                f"read_rules text has a malformed rule line {line!r} ({error}); pass a rules "
                "file that render_rules wrote",
            ) from error
        commands.append(tuple(words))
    return tuple(commands)


def rules_path(codex_home: str | Path) -> Path:
    """Return where agentshim's rules file lives under ``codex_home``."""
    return Path(codex_home) / _RULES_DIR / RULES_FILE_NAME


def _variants(path: str) -> set[str]:
    # Both the spelled and the resolved path: a symlink must not hide an overlap.
    return {os.path.normpath(path), os.path.realpath(path)}


def _overlaps(a: str, b: str) -> bool:
    for left in _variants(a):
        for right in _variants(b):
            if left == right:
                return True
            if left.startswith(right.rstrip(os.sep) + os.sep):
                return True
            if right.startswith(left.rstrip(os.sep) + os.sep):
                return True
    return False


def check_codex_home(config: CodexSandboxConfig, *, cwd: str | None, env: Mapping[str, str]) -> str:
    """Return the turn's CODEX_HOME when rules may safely be loaded from it.

    Raises:
        ProviderCapabilityError: CODEX_HOME is unset or relative, the turn's cwd is unknown
            under workspace-write, or CODEX_HOME overlaps a directory the sandbox lets
            commands write.
    """
    home = env.get(CODEX_HOME_ENV, "")
    if not home or not os.path.isabs(home):
        raise ProviderCapabilityError(
            "excluded_commands need a caller-dedicated, absolute CODEX_HOME in the turn's env "
            f"(got {home!r}); set CODEX_HOME to a directory only this caller uses"
        )
    writable = writable_dirs(config, cwd=cwd, env=env)
    if writable is None:
        raise ProviderCapabilityError(
            "excluded_commands under workspace-write need the turn's cwd to prove CODEX_HOME "
            "lies outside it; pass cwd to the session or the request"
        )
    for directory in writable:
        if _overlaps(home, directory):
            raise ProviderCapabilityError(
                f"CODEX_HOME {home!r} overlaps {directory!r}, which the sandbox lets commands "
                "write, so a command could add a rule exempting itself; move CODEX_HOME "
                "outside every writable directory (or exclude the tmp dirs)"
            )
    return home


def install_rules(codex_home: str | Path, excluded_commands: Iterable[Sequence[str]]) -> Path:
    """Write agentshim's rules file under ``codex_home`` (atomically) and return its path.

    Raises:
        ProviderCapabilityError: ``codex_home/rules`` holds another ``.rules`` file (which
            Codex would load too), or the file cannot be written.
    """
    target = rules_path(codex_home)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        others = sorted(p.name for p in target.parent.glob("*.rules") if p.name != RULES_FILE_NAME)
    except OSError as error:
        raise ProviderCapabilityError(
            f"cannot prepare {target.parent} for excluded_commands: {error}; "
            "make CODEX_HOME a writable directory"
        ) from error
    if others:
        raise ProviderCapabilityError(
            f"{target.parent} already holds other rules files ({', '.join(others)}), which "
            "Codex would load alongside excluded_commands; use a CODEX_HOME dedicated to "
            "this caller"
        )
    try:
        _atomic_write(target, render_rules(excluded_commands))
    except OSError as error:
        raise ProviderCapabilityError(
            f"cannot write {target}: {error}; make CODEX_HOME a writable directory"
        ) from error
    return target


def _atomic_write(target: Path, text: str) -> None:
    temp = target.with_name(f".{target.name}.{secrets.token_hex(6)}.tmp")
    try:
        temp.write_text(text, encoding="utf-8")
        os.replace(temp, target)
    except BaseException:
        with contextlib.suppress(OSError):
            temp.unlink()
        raise
