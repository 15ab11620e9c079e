"""The binary health check shared by every executor: ``<path> --version`` through ``run``.

Private to the execution package. Going through ``run`` means the probe gets a pipe for
stdin (it can never inherit a terminal and stop, deadlocking the caller) and that a wrapping
executor's transform applies to it like to any other command.
"""

from __future__ import annotations

from collections.abc import Mapping

from agentshim.core._text import last_line as _last_line
from agentshim.core.errors import AgentShimError, CliCheckError, CliTimeoutError

from .executor import CommandExecutor, CommandRequest, NullSink

__all__ = ["check_version"]


def check_version(
    executor: CommandExecutor, path: str, env: Mapping[str, str], timeout: float
) -> None:
    """Run ``path --version`` on ``executor`` and require exit status 0.

    Raises:
        CliCheckError: It could not start, timed out, or exited nonzero.
    """
    request = CommandRequest((path, "--version"), env=env, timeout=timeout)
    try:
        result = executor.run(request, NullSink())
    except CliTimeoutError as exc:
        raise CliCheckError(path, f"'--version' did not finish within {timeout} s") from exc
    except AgentShimError as exc:
        raise CliCheckError(path, exc.message) from exc
    if result.returncode != 0:
        said = _last_line(result.stderr) or _last_line(result.stdout) or "no output"
        raise CliCheckError(path, f"'--version' exited {result.returncode}: {said}")
