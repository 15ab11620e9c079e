"""The environment a user's interactive shell would have, for launching CLIs like a terminal does.

Coding-agent CLIs are often installed through version managers (nvm, asdf, pyenv) that only
put themselves on PATH from ``~/.bashrc``. A service started by systemd or cron does not
read that file, so it cannot find the CLI. :func:`interactive_env` asks ``bash -i`` what its
environment is after reading the rc files.

Reading the rc files runs the user's shell code, which can be slow or print things, so the
answer is cached for the life of the process and anything that goes wrong falls back to the
current process's environment. The shell runs through the command-execution seam
(:class:`~agentshim.execution.executor.CommandExecutor`, the host's by default), so a test
double can answer in its place and nothing the rc files start outlives the probe.
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping

from agentshim.core.errors import AgentShimError

from .executor import CallbackSink, CommandExecutor, CommandRequest
from .host import HostCommandExecutor

__all__ = [
    "DEFAULT_ENV_TIMEOUT_S",
    "clear_interactive_env_cache",
    "interactive_env",
    "read_interactive_env",
]

#: How long ``bash -i`` may take to read its rc files before the process environment is used.
DEFAULT_ENV_TIMEOUT_S = 5.0

# Printed before `env -0` so text the rc files print on stdout is not taken for variables.
_MARKER = "__agentshim_env_begins__"
_SCRIPT = f"printf '\\0%s\\0' {_MARKER}; exec env -0"
# Variables that describe the probe shell itself rather than the user's environment.
_PROBE_ONLY = frozenset({"_", "SHLVL", "OLDPWD"})


def read_interactive_env(
    timeout: float = DEFAULT_ENV_TIMEOUT_S,
    *,
    bash: str = "bash",
    base_env: Mapping[str, str] | None = None,
    executor: CommandExecutor | None = None,
) -> dict[str, str] | None:
    """Run ``bash -i -c 'env -0'`` and return the environment it prints; None on any failure.

    Uncached. The shell runs through ``executor`` (default: a ``HostCommandExecutor``, which
    starts it in its own session, so it cannot take over a terminal, with stdin closed), with
    ``base_env`` (default: this process's environment) as its whole environment. It is killed
    with everything it started if it takes longer than ``timeout`` seconds, and a host run
    also ends what the rc files left running in the background once the shell has answered.
    Text the rc files print is ignored; bytes that are not UTF-8 arrive as U+FFFD. None means
    bash is missing, failed, timed out, or printed nothing usable.
    """
    if executor is None:
        executor = HostCommandExecutor()
    printed: list[str] = []
    request = CommandRequest(
        [bash, "-i", "-c", _SCRIPT],
        env=dict(os.environ if base_env is None else base_env),
        timeout=timeout,
    )
    try:
        result = executor.run(request, CallbackSink(on_stdout=printed.append))
    except (AgentShimError, OSError):
        return None
    if result.returncode != 0:
        return None
    return _parse("".join(printed))


def _parse(output: str) -> dict[str, str] | None:
    start = output.find(f"\0{_MARKER}\0")
    if start < 0:
        return None
    records = output[start + len(_MARKER) + 2 :].split("\0")
    # The last record is whatever followed the final NUL: empty, or text an exit trap printed.
    env: dict[str, str] = {}
    for record in records[:-1]:
        name, sep, value = record.partition("=")
        if sep and name and name not in _PROBE_ONLY:
            env[name] = value
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
