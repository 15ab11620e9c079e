"""Running this package's own ``agentshim`` command in a child Python, as a user's shell does."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

COMMAND = (sys.executable, "-m", "agentshim")
"""The command line that runs ``agentshim`` from this checkout's interpreter."""


def agentshim(
    cwd: Path, *args: str, env: Mapping[str, str], stdin: str = ""
) -> subprocess.CompletedProcess[str]:
    """Run ``agentshim ARGS`` in ``cwd`` with exactly ``env``; what it printed and its exit."""
    return subprocess.run(
        [*COMMAND, *args],
        cwd=cwd,
        env=dict(env),
        input=stdin,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
