"""The agent CLIs agentshim is checked against: their pinned versions, an install cache, npm.

A consumer's test suite can run the real CLIs offline (with :mod:`agentshim.doctor.offline`
and the bundled model server) without reading a version file by hand::

    from agentshim.doctor.clis import find_cli, install_cli

    binary = find_cli("codex") or install_cli("codex")   # the pinned version, cached

Each CLI is installed with ``npm install --prefix <cache>/<package>@<version>``; the cache is
``$AGENTSHIM_CLI_DIR`` or ``~/.cache/agentshim/clis``, and an install is reused once it has
finished. ``cli_versions.json`` (shipped in this package) holds, per provider, the npm package,
the binary, the pinned version and the range of versions the conformance suite was run on, and
``moved``: the packages a CLI moved to and from which version (Pi moved from
``@mariozechner/pi-coding-agent`` to ``@earendil-works/pi-coding-agent`` at 0.74.0), so each
version is installed from the package that published it.

A CLI that declares a newer Node.js (``engines.node``) than the machine's ``node`` gets npm's
``node@<major>`` package installed beside it and a launcher that runs it on that Node
(:mod:`agentshim.doctor.node_runtime`); :func:`find_cli` returns the launcher then.
"""

from __future__ import annotations

import enum
import json
import os
import re
import shutil
import subprocess
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from types import MappingProxyType
from typing import Any

from agentshim.core._checks import matching
from agentshim.core.errors import CliInstallError, InvalidRequestError

from .node_runtime import (
    format_version,
    launcher_path,
    node_requirement,
    node_version,
    write_launcher,
)

__all__ = [
    "CACHE_ENV",
    "CliInstallError",
    "PackageMove",
    "PinnedCli",
    "VersionStatus",
    "cache_root",
    "find_cli",
    "install_cli",
    "install_dir",
    "latest_version",
    "pinned_cli",
    "pinned_clis",
    "version_key",
    "version_status",
]

#: The environment variable naming the install cache.
CACHE_ENV = "AGENTSHIM_CLI_DIR"

#: Written into an install directory once npm finished; an install without it is redone.
_DONE_MARKER = ".agentshim-installed"

# An npm version: digits and dots with an optional pre-release or build suffix. Anything else
# (a dist-tag such as "latest", a path, a URL) would name a moving or foreign target.
_VERSION = re.compile(r"^[0-9]+(\.[0-9]+)*([-+][0-9A-Za-z.-]+)?$")


@dataclass(frozen=True, slots=True)
class PackageMove:
    """A CLI published under another npm package from version ``since`` on."""

    package: str
    since: str


@dataclass(frozen=True, slots=True)
class PinnedCli:
    """One provider's CLI as agentshim checks it: npm package, binary, pinned version, range.

    ``oldest_checked`` and ``newest_checked`` bound the versions the conformance suite passed
    on; the pinned version lies between them. ``package`` is where the CLI was first
    published; ``moved`` lists, oldest first, the packages it moved to and from which
    version, so :meth:`package_for` names the package that has a given version.
    """

    provider: str
    package: str
    binary: str
    pinned: str
    oldest_checked: str
    newest_checked: str
    moved: tuple[PackageMove, ...] = ()

    @property
    def packages(self) -> tuple[str, ...]:
        """Every npm package the CLI was published under, oldest first."""
        return (self.package, *(move.package for move in self.moved))

    def package_for(self, version: str | None = None) -> str:
        """The npm package that publishes ``version`` (the pinned one when None)."""
        key = version_key(version or self.pinned)
        found = self.package
        for move in self.moved:
            since = version_key(move.since)
            if key is not None and since is not None and key >= since:
                found = move.package
        return found

    def spec(self, version: str | None = None) -> str:
        """The npm spec ``package@version`` (the pinned version when ``version`` is None)."""
        chosen = version or self.pinned
        return f"{self.package_for(chosen)}@{chosen}"


class VersionStatus(enum.Enum):
    """How an installed CLI version relates to what agentshim was checked against."""

    PINNED = "pinned"
    """The pinned version: the one the unit fixtures and the conformance suite use."""
    CHECKED = "checked"
    """Inside the checked range, not the pinned version."""
    UNTESTED = "untested"
    """Outside the checked range (newer or older): not known to be broken, just not checked."""
    UNKNOWN = "unknown"
    """The version could not be read or is not a dotted number."""


def pinned_clis() -> Mapping[str, PinnedCli]:
    """Every provider's pinned CLI, by provider name, from the shipped ``cli_versions.json``."""
    text = resources.files("agentshim.doctor").joinpath("cli_versions.json").read_text("utf-8")
    raw: dict[str, Any] = json.loads(text)
    pins: dict[str, PinnedCli] = {}
    for name, entry in raw.items():
        checked: dict[str, str] = entry["checked"]
        moves: list[dict[str, str]] = entry.get("moved", [])
        pins[name] = PinnedCli(
            provider=name,
            package=entry["package"],
            binary=entry["binary"],
            pinned=entry["pinned"],
            oldest_checked=checked["oldest"],
            newest_checked=checked["newest"],
            moved=tuple(PackageMove(move["package"], move["from"]) for move in moves),
        )
    return MappingProxyType(pins)


def pinned_cli(provider: str) -> PinnedCli:
    """The pinned CLI of ``provider``.

    Raises:
        InvalidRequestError: agentshim pins no CLI for ``provider``.
    """
    pins = pinned_clis()
    found = pins.get(provider)
    if found is None:
        raise InvalidRequestError(
            "provider",
            f"no pinned CLI for {provider!r}",
            f"agentshim pins no CLI for provider {provider!r}; use one of {', '.join(pins)}",
        )
    return found


def version_key(version: str) -> tuple[int, ...] | None:
    """The numeric release part of ``version`` (``"2.1.332"`` -> ``(2, 1, 332)``), or None.

    A pre-release suffix is ignored; None means the text holds no dotted number at all.
    """
    match = re.search(r"[0-9]+(\.[0-9]+)+", version)
    if match is None:
        return None
    return tuple(int(part) for part in match.group(0).split("."))


def version_status(cli: PinnedCli, version: str | None) -> VersionStatus:
    """Whether ``version`` (as ``--version`` printed it, or None) is pinned, checked or untested."""
    key = version_key(version) if version else None
    if key is None:
        return VersionStatus.UNKNOWN
    if key == version_key(cli.pinned):
        return VersionStatus.PINNED
    oldest = version_key(cli.oldest_checked)
    newest = version_key(cli.newest_checked)
    if oldest is not None and newest is not None and oldest <= key <= newest:
        return VersionStatus.CHECKED
    return VersionStatus.UNTESTED


def cache_root(env: Mapping[str, str] | None = None) -> Path:
    """Where installs live: ``$AGENTSHIM_CLI_DIR`` or ``~/.cache/agentshim/clis``."""
    variables = os.environ if env is None else env
    configured = variables.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "agentshim" / "clis"


def _checked_version(version: str | None, cli: PinnedCli) -> str:
    if version is None:
        return cli.pinned
    return matching(
        "",
        "version",
        version,
        _VERSION,
        "a version number",
        f"version {version!r} of {cli.package} is not a version number such as "
        f"{cli.pinned!r}; for the newest one call latest_version({cli.provider!r}) first",
    )


def install_dir(provider: str, version: str | None = None, *, cache: Path | None = None) -> Path:
    """The directory ``provider``'s CLI at ``version`` (default: pinned) installs into."""
    cli = pinned_cli(provider)
    return (cache or cache_root()) / cli.spec(_checked_version(version, cli))


def _bin_path(cli: PinnedCli, directory: Path) -> Path:
    return directory / "node_modules" / ".bin" / cli.binary


def find_cli(
    provider: str, version: str | None = None, *, cache: Path | None = None
) -> Path | None:
    """The cached binary of ``provider`` at ``version`` (default: pinned), or None.

    An install that never finished (npm was interrupted) does not count. Where the install
    has a launcher (the CLI needs a newer Node than the machine's), that is the binary.
    """
    cli = pinned_cli(provider)
    directory = install_dir(provider, version, cache=cache)
    if not (directory / _DONE_MARKER).is_file():
        return None
    launcher = launcher_path(directory, cli.binary)
    if launcher.is_file():
        return launcher
    binary = _bin_path(cli, directory)
    return binary if binary.exists() else None


def _ignore(_: str) -> None:
    """Drop a progress line."""


def _npm(spec: str) -> str:
    npm = shutil.which("npm")
    if npm is None:
        raise CliInstallError(
            spec, f"cannot install {spec}: npm is not on PATH; install Node.js and npm first"
        )
    return npm


def _npm_install(directory: Path, spec: str, timeout: float) -> None:
    """``npm install --prefix directory spec``.

    Raises:
        CliInstallError: npm is missing, failed or timed out.
    """
    npm = _npm(spec)
    directory.mkdir(parents=True, exist_ok=True)
    argv = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(directory), spec]
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise CliInstallError(
            spec, f"npm install {spec} took longer than {timeout:g} s; try again or raise timeout"
        ) from None
    if done.returncode != 0:
        raise CliInstallError(
            spec,
            f"npm install {spec} failed (exit {done.returncode}); its output ends:\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}",
        )


def _provision_node(
    needed: tuple[int, ...], cache: Path, timeout: float, say: Callable[[str], None]
) -> Path:
    """A Node binary of at least ``needed``: npm's ``node@<major>`` package, cached.

    Raises:
        CliInstallError: npm failed, or the package's Node is still older than ``needed``.
    """
    spec = f"node@{needed[0]}"
    directory = cache / spec
    node = directory / "node_modules" / ".bin" / "node"
    if not (directory / _DONE_MARKER).is_file() or not node.exists():
        say(f"installing {spec} (Node >= {format_version(needed)}) into {directory} ...")
        _npm_install(directory, spec, timeout)
    found = node_version(node)
    if found is None or found < needed:
        shown = format_version(found) if found is not None else "no version"
        raise CliInstallError(
            spec,
            f"npm's {spec} gave {node} ({shown}), not Node >= {format_version(needed)}; "
            f"install Node {format_version(needed)} or newer and put it first on PATH",
        )
    (directory / _DONE_MARKER).write_text(spec + "\n", encoding="utf-8")
    return node


def _ensure_node(
    cli: PinnedCli,
    version: str,
    directory: Path,
    cache: Path,
    timeout: float,
    say: Callable[[str], None],
) -> None:
    """Give the install a launcher on a newer Node when the machine's is older than declared."""
    package = cli.package_for(version)
    needed = node_requirement(directory, package)
    if needed is None:
        return
    system = shutil.which("node")
    found = node_version(system) if system is not None else None
    if found is not None and found >= needed:
        return
    node = _provision_node(needed, cache, timeout, say)
    entry = _bin_path(cli, directory).resolve()
    shown = format_version(found) if found is not None else "none on PATH"
    write_launcher(
        directory,
        cli.binary,
        node,
        entry,
        f"{package}@{version} needs Node >= {format_version(needed)} (this machine's node: "
        f"{shown}); agentshim's installer runs it on npm's node@{needed[0]}.",
    )
    say(f"{package}@{version} runs on {node} (Node >= {format_version(needed)})")


def install_cli(
    provider: str,
    version: str | None = None,
    *,
    cache: Path | None = None,
    timeout: float = 600.0,
    log: Callable[[str], None] | None = None,
    progress_every: float = 15.0,
) -> Path:
    """Install ``provider``'s CLI at ``version`` (default: pinned) unless cached; return its binary.

    The package is the one that publishes that version (:meth:`PinnedCli.package_for`). When
    the CLI declares a newer Node (``engines.node``) than the ``node`` on PATH, npm's
    ``node@<major>`` is installed into the cache too, and the binary returned is a launcher
    that runs the CLI on it. ``log`` receives a line when an install starts and when it ends
    (nothing for a cached one), and a progress line every ``progress_every`` seconds while npm
    works (downloads can take minutes), so a caller showing ``log`` never looks hung.

    Raises:
        InvalidRequestError: no pinned CLI for ``provider``, or ``version`` is not a version.
        CliInstallError: npm is not on PATH, failed, timed out, or left no such binary.
    """
    say = log or _ignore
    cli = pinned_cli(provider)
    chosen = _checked_version(version, cli)
    spec = cli.spec(chosen)
    root = cache or cache_root()
    cached = find_cli(provider, chosen, cache=root)
    if cached is not None:
        return cached
    directory = install_dir(provider, chosen, cache=root)
    started = time.monotonic()
    say(f"installing {spec} into {directory} ...")
    ticking = _progress(say, spec, started, progress_every) if log is not None else None
    try:
        _npm_install(directory, spec, timeout)
    finally:
        if ticking is not None:
            ticking()
    binary = _bin_path(cli, directory)
    if not binary.exists():
        raise CliInstallError(
            spec, f"npm install {spec} left no {cli.binary} in {binary.parent}; is it the CLI?"
        )
    _ensure_node(cli, chosen, directory, root, timeout, say)
    (directory / _DONE_MARKER).write_text(spec + "\n", encoding="utf-8")
    say(f"installed {spec} in {time.monotonic() - started:.0f}s")
    found = find_cli(provider, chosen, cache=root)
    assert found is not None  # just installed and marked done
    return found


def _registry_version(npm: str, package: str, timeout: float) -> str:
    try:
        done = subprocess.run(
            [npm, "view", package, "version"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CliInstallError(
            package, f"npm view {package} version took longer than {timeout:g} s"
        ) from None
    version = done.stdout.strip().splitlines()[-1].strip() if done.stdout.strip() else ""
    if done.returncode != 0 or not _VERSION.match(version):
        raise CliInstallError(
            package,
            f"npm view {package} version gave no version (exit {done.returncode}): "
            f"{(done.stderr or done.stdout)[-500:]}",
        )
    return version


def _progress(
    say: Callable[[str], None], spec: str, started: float, every: float
) -> Callable[[], None]:
    """Say how long the install has taken every ``every`` seconds; returns the stop."""
    stop = threading.Event()

    def tick() -> None:
        while not stop.wait(every):
            say(f"still installing {spec}: {time.monotonic() - started:.0f}s so far (npm works)")

    thread = threading.Thread(target=tick, name="agentshim-install-progress", daemon=True)
    thread.start()

    def end() -> None:
        stop.set()
        thread.join()

    return end


def latest_version(provider: str, *, timeout: float = 60.0) -> str:
    """The newest version of ``provider``'s CLI the npm registry serves (``npm view``).

    Every package the CLI was published under is asked (:attr:`PinnedCli.packages`), so a
    CLI that moved to a new package reports the new package's version.

    Raises:
        InvalidRequestError: no pinned CLI for ``provider``.
        CliInstallError: npm is not on PATH or the registry did not answer with a version.
    """
    cli = pinned_cli(provider)
    npm = shutil.which("npm")
    if npm is None:
        raise CliInstallError(
            cli.package, "cannot ask the registry: npm is not on PATH; install Node.js and npm"
        )
    newest: str | None = None
    for package in cli.packages:
        version = _registry_version(npm, package, timeout)
        if newest is None or (version_key(version) or ()) > (version_key(newest) or ()):
            newest = version
    assert newest is not None  # every CLI has at least one package
    return newest
