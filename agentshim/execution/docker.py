"""DockerExecConfinement: run the agent's processes inside a running container.

Every command becomes ``docker exec -i ... <container> argv``. Variables are passed by name
only (``-e KEY``): their values travel in the docker client's own environment, which
:func:`~agentshim.execution.confinement.confine` fills, so no secret ever appears in the host's
process table. Every confined process carries ``AGENTSHIM_CONFINED=1``, which is how
:meth:`DockerExecConfinement.reap` finds exactly the processes agentshim started, and leaves
anything else running in the container (a nested daemon, the container's own init) alone.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Collection, Mapping, Sequence

from agentshim.core._checks import seconds
from agentshim.core.errors import AgentShimError, InvalidRequestError

from .confinement import PathMap, mapped_agent_path
from .executor import CommandExecutor, CommandRequest, NullSink
from .host import HostCommandExecutor

__all__ = ["CONFINED_MARKER", "REAP_SCRIPT", "DockerExecConfinement"]

CONFINED_MARKER = "AGENTSHIM_CONFINED"
"""The variable (set to ``1``) that marks every process started through the confinement."""

REAP_SCRIPT = f"""\
self=$$
total=0
for pass in 1 2 3; do
  found=0
  for dir in /proc/[0-9]*; do
    pid=${{dir#/proc/}}
    [ "$pid" = "$self" ] && continue
    [ "$pid" = 1 ] && continue
    if tr '\\0' '\\n' < "$dir/environ" 2>/dev/null | grep -qx '{CONFINED_MARKER}=1'; then
      kill -9 "$pid" 2>/dev/null && found=$((found + 1))
    fi
  done
  total=$((total + found))
  [ "$found" = 0 ] && break
done
echo "reaped $total"
"""
"""The POSIX sh script :meth:`DockerExecConfinement.reap` runs inside the container.

It kills every process whose environment holds exactly ``AGENTSHIM_CONFINED=1`` (never
itself or PID 1), repeating while it finds some so that children forked meanwhile go too.
"""

_MISSING = ("no such container", "is not running")


class DockerExecConfinement:
    """Confines processes to a running container through ``docker exec``.

    Args:
        container: The container id or name, or a callable returning it; it is read on
            every call, so a recreated container is picked up.
        env: The environment a confined process starts from (``HOME``, ``PATH``, keys).
        paths: How host paths appear inside; ``None`` means mounted at the same paths.
        user: Run as this user inside (``docker exec -u``); ``None`` uses the image default.
        docker: The docker client binary; a bare name is looked up on ``host_env``'s PATH.
        runner: Executor that runs ``docker`` for :meth:`reap`; defaults to the host.
        host_env: Environment of the docker client when reaping (default: this process's).
        reap_timeout: Seconds a reap may take.
    """

    def __init__(
        self,
        container: str | Callable[[], str],
        *,
        env: Mapping[str, str] | None = None,
        paths: PathMap | None = None,
        user: str | None = None,
        docker: str = "docker",
        runner: CommandExecutor | None = None,
        host_env: Mapping[str, str] | None = None,
        reap_timeout: float = 30.0,
    ) -> None:
        self._container = container
        self._env = dict(env or {})
        self._paths = paths
        self._user = user
        self._host_env = dict(os.environ if host_env is None else host_env)
        self._docker = shutil.which(docker, path=self._host_env.get("PATH", os.defpath)) or docker
        self._runner: CommandExecutor = runner if runner is not None else HostCommandExecutor()
        self._reap_timeout = seconds(
            "DockerExecConfinement", "reap_timeout", reap_timeout, positive=True
        )

    @property
    def env(self) -> Mapping[str, str]:
        """The environment a confined process starts from."""
        return dict(self._env)

    def container_id(self) -> str:
        """Return the container to use now.

        Raises:
            AgentShimError: The id is empty or looks like an option.
        """
        cid = self._container() if callable(self._container) else self._container
        cid = cid.strip()
        if not cid or cid.startswith("-"):
            raise AgentShimError(
                f"no usable container id ({cid!r}); start the container or fix its id"
            )
        return cid

    def wrap(
        self, argv: Sequence[str], cwd: str | None, env_names: Collection[str] = ()
    ) -> list[str]:
        """Return ``docker exec -i [-u user] [-w cwd] -e NAME... <container> argv``.

        Raises:
            InvalidRequestError: A variable name is empty or contains ``=`` (its value would
                leak into argv).
        """
        command = [self._docker, "exec", "-i"]
        if self._user is not None:
            command += ["-u", self._user]
        if cwd is not None:
            command += ["-w", cwd]
        for name in dict.fromkeys(env_names):
            if not name or "=" in name:
                raise InvalidRequestError(
                    "env_names",
                    f"variable name {name!r} cannot be passed by name",
                    f"env_names: environment variable name {name!r} cannot be passed by name "
                    "(it is empty or holds '=', so its value would leak into argv); rename the "
                    "variable",
                )
            if name != CONFINED_MARKER:
                command += ["-e", name]
        command += ["-e", f"{CONFINED_MARKER}=1", self.container_id(), *argv]
        return command

    def agent_path(self, host_path: str) -> str:
        """Map ``host_path`` through the path map (identity without one).

        Raises:
            InvalidRequestError: ``host_path`` is relative or not mounted.
        """
        return mapped_agent_path(self._paths, host_path)

    def reap(self) -> None:
        """Kill every marked process in the container; a missing container has none.

        Raises:
            AgentShimError: docker failed for another reason (daemon unreachable, ...).
        """
        cid = self.container_id()
        request = CommandRequest(
            (self._docker, "exec", cid, "sh", "-c", REAP_SCRIPT),
            env=self._host_env,
            timeout=self._reap_timeout,
        )
        result = self._runner.run(request, NullSink())
        if result.returncode == 0:
            return
        said = result.stderr.strip()
        if any(marker in said.lower() for marker in _MISSING):
            return
        raise AgentShimError(
            f"could not reap confined processes in container {cid!r} "
            f"(docker exited {result.returncode}: {said[-500:] or 'no error text'}); "
            "check that the docker daemon is reachable"
        )
