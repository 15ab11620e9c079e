"""The environment a user's interactive shell would have, for launching CLIs like a terminal does.

Coding-agent CLIs are often installed through version managers (nvm, asdf, pyenv) that only
put themselves on PATH from ``~/.bashrc``. A service started by systemd or cron does not
read that file, so it cannot find the CLI. :func:`interactive_env` asks ``bash -i`` what its
environment is after reading the rc files.

Reading the rc files runs the user's shell code, which can be slow or print things, so the
answer is cached for the life of the process and anything that goes wrong falls back to the
current process's environment.
"""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import subprocess
import tempfile
from collections.abc import Mapping
from typing import IO

__all__ = [
    "DEFAULT_ENV_TIMEOUT_S",
    "clear_interactive_env_cache",
    "interactive_env",
    "read_interactive_env",
]

#: How long ``bash -i`` may take to read its rc files before the process environment is used.
DEFAULT_ENV_TIMEOUT_S = 5.0

# Printed before `env -0` so text the rc files print on stdout is not taken for variables.
_MARKER = b"__agentshim_env_begins__"
_SCRIPT = f"printf '\\0%s\\0' {_MARKER.decode()}; exec env -0"
# Variables that describe the probe shell itself rather than the user's environment.
_PROBE_ONLY = frozenset({"_", "SHLVL", "OLDPWD"})


def read_interactive_env(
    timeout: float = DEFAULT_ENV_TIMEOUT_S,
    *,
    bash: str = "bash",
    base_env: Mapping[str, str] | None = None,
) -> dict[str, str] | None:
    """Run ``bash -i -c 'env -0'`` and return the environment it prints; None on any failure.

    Uncached. The shell runs with stdin from /dev/null, in its own session (so it cannot
    take over a terminal), with ``base_env`` (default: this process's environment). It is
    killed with its whole process group if it takes longer than ``timeout`` seconds. Text
    the rc files print is ignored. None means bash is missing, failed, timed out, or
    printed nothing usable.
    """
    # Output goes to a file, not a pipe: a daemon an rc file starts in the background may keep
    # a pipe open long after bash has answered, and waiting for EOF would mean a timeout.
    try:
        with tempfile.TemporaryFile() as output:
            return _probe(output, timeout, bash, base_env)
    except OSError:
        return None


def _probe(
    output: IO[bytes], timeout: float, bash: str, base_env: Mapping[str, str] | None
) -> dict[str, str] | None:
    try:
        process = subprocess.Popen(
            [bash, "-i", "-c", _SCRIPT],
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.DEVNULL,
            env=dict(os.environ if base_env is None else base_env),
            start_new_session=True,
        )
    except (OSError, ValueError):
        return None
    try:
        returncode = process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        _kill_group(process)
        return None
    except BaseException:
        _kill_group(process)
        raise
    if returncode != 0:
        return None
    output.seek(0)
    return _parse(output.read())


def _kill_group(process: subprocess.Popen[bytes]) -> None:
    """Kill the probe shell and everything its rc files started, then reap it."""
    with contextlib.suppress(OSError):
        os.killpg(process.pid, signal.SIGKILL)
    with contextlib.suppress(OSError):
        process.kill()
    with contextlib.suppress(subprocess.TimeoutExpired, OSError):
        process.wait(timeout=1.0)


def _parse(output: bytes) -> dict[str, str] | None:
    start = output.find(b"\0" + _MARKER + b"\0")
    if start < 0:
        return None
    records = output[start + len(_MARKER) + 2 :].split(b"\0")
    # The last record is whatever followed the final NUL: empty, or text an exit trap printed.
    env: dict[str, str] = {}
    for record in records[:-1]:
        name, sep, value = record.partition(b"=")
        if not sep or not name:
            continue
        key = os.fsdecode(name)
        if key not in _PROBE_ONLY:
            env[key] = os.fsdecode(value)
    return env or None


@functools.lru_cache(maxsize=4)
def _cached(timeout: float) -> tuple[tuple[str, str], ...] | None:
    env = read_interactive_env(timeout)
    return None if env is None else tuple(env.items())


def interactive_env(timeout: float = DEFAULT_ENV_TIMEOUT_S) -> dict[str, str]:
    """The environment of the user's interactive bash, or of this process if that fails.

    The shell is asked once per process (per ``timeout`` value) and the answer is cached;
    each call returns a fresh dict the caller may change. When the shell cannot answer
    (no bash, an error, ``timeout`` seconds passed) the result is a copy of ``os.environ``
    as it is at the time of the call, and the shell is not asked again.
    """
    cached = _cached(timeout)
    if cached is None:
        return dict(os.environ)
    return dict(cached)


def clear_interactive_env_cache() -> None:
    """Forget the cached answer, so the next :func:`interactive_env` asks the shell again."""
    _cached.cache_clear()
