"""Confinement: bounding the processes agentshim starts from outside the agent.

A :class:`Confinement` turns a command into the host command that runs it somewhere else (a
container, a VM, an OS sandbox), maps host paths to the paths the agent sees there, supplies
the environment a confined process starts from, and can reap what was left behind.
:func:`confine` applies one to any executor.
"""

from __future__ import annotations

import os
import posixpath
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

from agentshim.core.errors import InvalidRequestError

from .executor import CommandExecutor, CommandRequest
from .transform import TransformingExecutor

__all__ = ["Confinement", "PathMap", "confine", "mapped_agent_path"]


class Confinement(Protocol):
    """Somewhere outside the host's own process space where the agent's processes run."""

    @property
    def env(self) -> Mapping[str, str]:
        """The environment a confined process starts from (an agent uses it as its env)."""
        ...

    def wrap(
        self, argv: Sequence[str], cwd: str | None, env_names: Collection[str] = ()
    ) -> list[str]:
        """Return the host argv that runs ``argv`` inside, in ``cwd`` (a path as seen inside).

        ``env_names`` are variables the confined process must receive; their values travel
        in the host process's environment, never in the returned argv.
        """
        ...

    def agent_path(self, host_path: str) -> str:
        """Return the path under which the agent sees ``host_path``.

        Raises:
            ValueError: ``host_path`` is relative, or not visible inside (agentshim's own
                confinements raise InvalidRequestError, which is one).
        """
        ...

    def reap(self) -> None:
        """Kill every confined process agentshim left behind, also from earlier host processes."""
        ...


def confine(
    executor: CommandExecutor,
    confinement: Confinement,
    *,
    host_env: Mapping[str, str] | None = None,
) -> TransformingExecutor:
    """Return ``executor`` with every run, spawn and health check going through ``confinement``.

    Each request's argv is wrapped, its variables are passed by name, and the host process
    gets ``host_env`` (default: this process's environment when ``confine`` is called)
    overlaid with the request's env, so secret values never appear in a process table. The
    host process runs in no particular directory: the working directory is the wrap's job.
    ``find_binary`` returns the bare name, because the binary lives inside the confinement.
    """
    base = dict(os.environ if host_env is None else host_env)

    def transform(request: CommandRequest) -> CommandRequest:
        argv = confinement.wrap(request.argv, request.cwd, tuple(request.env))
        return CommandRequest(
            argv,
            stdin=request.stdin,
            cwd=None,
            env={**base, **request.env},
            timeout=request.timeout,
        )

    def trust_name(name: str, env: Mapping[str, str]) -> str:
        del env
        return name

    return TransformingExecutor(executor, transform, find_binary=trust_name)


@dataclass(frozen=True, slots=True)
class PathMap:
    """Pairs of (host prefix, agent prefix) translating absolute paths both ways.

    Prefixes match whole path components (``/work`` covers ``/work/a``, not ``/workshop``),
    and the longest matching prefix wins, so a mount inside another mount maps correctly.
    Paths are POSIX paths on both sides.
    """

    mounts: tuple[tuple[str, str], ...]

    def __init__(self, mounts: Mapping[str, str] | Sequence[tuple[str, str]]) -> None:
        """Build a map from ``{host: agent}`` or ``[(host, agent), ...]``.

        Raises:
            InvalidRequestError: ``mounts`` is not such pairs, or a prefix is relative.
        """
        if isinstance(mounts, Mapping):
            pairs: list[object] = list(mounts.items())
        elif isinstance(mounts, str) or not isinstance(mounts, Iterable):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise InvalidRequestError(
                "PathMap.mounts",
                "not a mapping or a sequence of pairs",
                f"PathMap.mounts must be a mapping {{host: agent}} or a sequence of "
                f"(host, agent) pairs, not {mounts!r}",
            )
        else:
            pairs = list(mounts)
        normalized: list[tuple[str, str]] = []
        for pair in pairs:
            if isinstance(pair, str) or not isinstance(pair, Sequence) or len(pair) != 2:  # pyright: ignore[reportUnknownArgumentType]
                raise InvalidRequestError(
                    "PathMap.mounts",
                    f"{pair!r} is not a (host, agent) pair",
                    f"PathMap.mounts entry {pair!r} is not a (host, agent) pair of paths",
                )
            host, agent = cast("Sequence[object]", pair)
            normalized.append(
                (
                    _absolute(host, "host prefix", "PathMap.mounts"),
                    _absolute(agent, "agent prefix", "PathMap.mounts"),
                )
            )
        object.__setattr__(self, "mounts", tuple(normalized))

    def to_agent(self, host_path: str) -> str:
        """Return the agent's path for ``host_path``.

        Raises:
            InvalidRequestError: ``host_path`` is relative or under no host prefix.
        """
        return _translate(host_path, [(h, a) for h, a in self.mounts], "host")

    def to_host(self, agent_path: str) -> str:
        """Return the host path for ``agent_path``.

        Raises:
            InvalidRequestError: ``agent_path`` is relative or under no agent prefix.
        """
        return _translate(agent_path, [(a, h) for h, a in self.mounts], "agent")


def mapped_agent_path(paths: PathMap | None, host_path: str) -> str:
    """Where the agent sees ``host_path``: mapped through ``paths``, or unchanged without them.

    For a :class:`Confinement`'s ``agent_path``, with or without a path map.

    Raises:
        InvalidRequestError: ``host_path`` is relative, or ``paths`` maps no prefix of it.
    """
    if paths is not None:
        return paths.to_agent(host_path)
    if not host_path.startswith("/"):
        raise InvalidRequestError(
            "host_path",
            f"{host_path!r} is relative",
            f"host_path {host_path!r} is relative; pass an absolute path",
        )
    return host_path


def _absolute(path: object, what: str, field: str) -> str:
    if not isinstance(path, str) or "\0" in path:
        raise InvalidRequestError(
            field,
            f"{what} {path!r} is not a path",
            f"{field}: {what} {path!r} must be an absolute POSIX path string",
        )
    if not path.startswith("/"):
        raise InvalidRequestError(
            field,
            f"{what} {path!r} is relative",
            f"{field}: {what} {path!r} is relative; PathMap needs absolute paths",
        )
    return posixpath.normpath(path).replace("//", "/", 1)


def _translate(path: str, pairs: list[tuple[str, str]], side: str) -> str:
    field = f"{side}_path"
    clean = _absolute(path, f"{side} path", field)
    best: tuple[str, str] | None = None
    for source, target in pairs:
        if _within(clean, source) and (best is None or len(source) > len(best[0])):
            best = (source, target)
    if best is None:
        prefixes = ", ".join(source for source, _ in pairs) or "none"
        raise InvalidRequestError(
            field,
            "under no mapped prefix",
            f"{field}: {side} path {path!r} is under no mapped prefix ({prefixes}); "
            "add a mount for it or use a path inside one",
        )
    source, target = best
    rest = clean[len(source) :].lstrip("/")
    return posixpath.join(target, rest) if rest else target


def _within(path: str, prefix: str) -> bool:
    return prefix == "/" or path == prefix or path.startswith(prefix + "/")
