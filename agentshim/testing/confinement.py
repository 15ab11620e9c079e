"""FakeConfinement: a Confinement that records what it was asked and confines nothing."""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from agentshim.execution.confinement import PathMap, mapped_agent_path

__all__ = ["FakeConfinement", "WrapCall"]


@dataclass(frozen=True, slots=True)
class WrapCall:
    """One recorded :meth:`FakeConfinement.wrap` call."""

    argv: tuple[str, ...]
    cwd: str | None
    env_names: tuple[str, ...]


class FakeConfinement:
    """Wraps argv as ``[*prefix, *argv]``, maps paths through ``paths``, records everything.

    Args:
        prefix: What the wrapped argv starts with (``("fake-confine",)`` by default, which
            is not a real program: use it with FakeExecutor).
        env: The environment a confined process starts from.
        paths: How host paths appear inside; ``None`` keeps them unchanged.

    Attributes:
        wraps: Every :meth:`wrap` call, in order.
        reaps: How many times :meth:`reap` was called.
    """

    def __init__(
        self,
        *,
        prefix: Sequence[str] = ("fake-confine",),
        env: Mapping[str, str] | None = None,
        paths: PathMap | None = None,
    ) -> None:
        self._prefix = tuple(prefix)
        self._env = dict(env or {})
        self._paths = paths
        self.wraps: list[WrapCall] = []
        self.reaps = 0

    @property
    def env(self) -> Mapping[str, str]:
        """The environment a confined process starts from."""
        return dict(self._env)

    def wrap(
        self, argv: Sequence[str], cwd: str | None, env_names: Collection[str] = ()
    ) -> list[str]:
        """Record the call and return ``[*prefix, *argv]``."""
        self.wraps.append(WrapCall(tuple(argv), cwd, tuple(env_names)))
        return [*self._prefix, *argv]

    def agent_path(self, host_path: str) -> str:
        """Map ``host_path`` through ``paths`` (unchanged without them), as a real one does.

        Raises:
            InvalidRequestError: ``host_path`` is relative or not mapped.
        """
        return mapped_agent_path(self._paths, host_path)

    def reap(self) -> None:
        """Count the call."""
        self.reaps += 1
