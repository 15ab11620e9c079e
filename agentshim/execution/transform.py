"""TransformingExecutor: rewrite every command before another executor runs it.

This is how a caller runs a CLI inside an OS sandbox, prefixes it with ``docker exec``, or
points it at a stand-in binary, without the layers above noticing.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from .executor import CommandExecutor, CommandRequest, CommandResult, CommandStreamSink
from .process import Process, SpawnRequest
from .readiness import check_version

__all__ = ["TransformingExecutor"]


class TransformingExecutor:
    """Applies ``transform`` to every request (runs, spawns and the health check) on ``inner``.

    Args:
        inner: The executor that runs the transformed requests.
        transform: Returns the request to run instead of the one given.
        find_binary: Replaces ``inner.find_binary`` (for example to trust a bare name that
            only exists inside a container); ``None`` asks ``inner``.
    """

    __slots__ = ("_find", "_inner", "_transform")

    def __init__(
        self,
        inner: CommandExecutor,
        transform: Callable[[CommandRequest], CommandRequest],
        find_binary: Callable[[str, Mapping[str, str]], str] | None = None,
    ) -> None:
        self._inner = inner
        self._transform = transform
        self._find = find_binary

    def find_binary(self, name: str, env: Mapping[str, str]) -> str:
        """Look ``name`` up with the ``find_binary`` given, or on ``inner``."""
        if self._find is not None:
            return self._find(name, env)
        return self._inner.find_binary(name, env)

    def check_binary(self, path: str, env: Mapping[str, str], *, timeout: float) -> None:
        """Run ``path --version`` through :meth:`run`, so the transform applies to it too.

        Raises:
            CliCheckError: It could not start, timed out, or exited nonzero.
        """
        check_version(self, path, env, timeout=timeout)

    def run(self, request: CommandRequest, sink: CommandStreamSink) -> CommandResult:
        """Run the transformed request on ``inner``."""
        return self._inner.run(self._transform(request), sink)

    def spawn(self, request: SpawnRequest) -> Process:
        """Spawn on ``inner`` after the same transform a run gets."""
        as_command = CommandRequest(request.argv, cwd=request.cwd, env=request.env)
        changed = self._transform(as_command)
        return self._inner.spawn(SpawnRequest(changed.argv, cwd=changed.cwd, env=changed.env))
