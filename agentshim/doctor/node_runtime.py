"""The Node.js a CLI needs: its declared minimum, the version a ``node`` binary is, a launcher.

An npm-installed CLI says which Node it needs in its ``package.json`` (``engines.node``, such
as ``">=22.19.0"``); started under an older Node it may crash at start-up. When the machine's
``node`` is too old, :func:`agentshim.doctor.clis.install_cli` installs npm's ``node@<major>``
package (which ships a Node binary) into the install cache and writes a launcher with
:func:`write_launcher`: a small shell script that runs the CLI's entry point on that Node, so
the CLI works without touching the machine's own Node or ``PATH``.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

from agentshim.core.jsonvalues import as_mapping, as_str

__all__ = [
    "LAUNCHER_DIR",
    "Version",
    "format_version",
    "launcher_path",
    "minimum_node",
    "node_requirement",
    "node_version",
    "write_launcher",
]

Version = tuple[int, ...]
"""A dotted release number as integers: ``"22.19.0"`` is ``(22, 19, 0)``."""

LAUNCHER_DIR = "agentshim-bin"
"""The directory, inside a CLI's install directory, that holds its launcher."""

# The lower bound of an engines range: ">=22.19.0", "^22.19.0", "~22.19", "22.19.0" or "22".
# An upper bound or an alternative ("<24", "|| 20") is ignored: only the minimum matters here.
_MINIMUM = re.compile(r"^\s*(?:>=|\^|~|=)?\s*v?([0-9]+(?:\.[0-9]+)*)")
_PRINTED = re.compile(r"v?([0-9]+(?:\.[0-9]+)+)")


def format_version(version: Version) -> str:
    """``(22, 19, 0)`` as ``"22.19.0"``."""
    return ".".join(str(part) for part in version)


def minimum_node(declared: str) -> Version | None:
    """The lowest Node version an ``engines.node`` range allows, or None when it names none.

    ``">=22.19.0"`` gives ``(22, 19, 0)``; a range with no lower bound (``"*"``, ``"<24"``)
    gives None.
    """
    match = _MINIMUM.match(declared)
    if match is None:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def node_requirement(install: Path, package: str) -> Version | None:
    """The minimum Node ``package``, npm-installed under ``install``, declares (None: none).

    Reads ``<install>/node_modules/<package>/package.json``; a missing or unreadable file, or
    an ``engines.node`` without a lower bound, is no requirement.
    """
    manifest = install / "node_modules" / package / "package.json"
    try:
        data: Any = json.loads(manifest.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    engines = (as_mapping(data) or {}).get("engines")
    declared = as_str((as_mapping(engines) or {}).get("node"))
    return minimum_node(declared) if declared is not None else None


def node_version(node: str | Path, *, timeout: float = 30.0) -> Version | None:
    """The version ``node --version`` prints (``v20.20.2`` gives ``(20, 20, 2)``), or None.

    None when the binary does not run, times out, or prints no version.
    """
    try:
        done = subprocess.run(
            [str(node), "--version"], capture_output=True, text=True, timeout=timeout, check=False
        )
    except (OSError, subprocess.SubprocessError):
        return None
    match = _PRINTED.search(done.stdout)
    if done.returncode != 0 or match is None:
        return None
    return tuple(int(part) for part in match.group(1).split("."))


def launcher_path(install: Path, binary: str) -> Path:
    """Where the launcher of ``binary`` installed under ``install`` lives."""
    return install / LAUNCHER_DIR / binary


def write_launcher(install: Path, binary: str, node: Path, entry: Path, why: str) -> Path:
    """Write (atomically) the launcher that runs ``entry`` on ``node``; return its path.

    The launcher ``exec``s Node, so the CLI's process is the launched one (its pid, its
    signals). ``why`` becomes a comment in it, for whoever finds the script.
    """
    path = launcher_path(install, binary)
    path.parent.mkdir(parents=True, exist_ok=True)
    comment = " ".join(why.split())
    script = (
        f'#!/bin/sh\n# {comment}\nexec {shlex.quote(str(node))} {shlex.quote(str(entry))} "$@"\n'
    )
    partial = path.with_name(path.name + ".partial")
    partial.write_text(script, encoding="utf-8")
    partial.chmod(0o755)
    partial.replace(path)
    return path
