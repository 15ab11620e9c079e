"""The agent CLIs agentshim is checked against: their pinned versions, an install cache, npm.

A consumer's test suite can run the real CLIs offline (with :mod:`agentshim.testing.offline`
and the bundled model server) without reading a version file by hand::

    from agentshim.testing.clis import find_cli, install_cli

    binary = find_cli("codex") or install_cli("codex")   # the pinned version, cached

Each CLI is installed with ``npm install --prefix <cache>/<package>@<version>``; the cache is
``$AGENTSHIM_CLI_DIR`` or ``~/.cache/agentshim/clis``, and an install is reused once it has
finished. ``cli_versions.json`` (shipped in this package) holds, per provider, the npm package,
the binary, the pinned version and the range of versions the conformance suite was run on.
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

from agentshim.core.errors import CliInstallError, InvalidRequestError

__all__ = [
    "CACHE_ENV",
    "CliInstallError",
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
class PinnedCli:
    """One provider's CLI as agentshim checks it: npm package, binary, pinned version, range.

    ``oldest_checked`` and ``newest_checked`` bound the versions the conformance suite passed
    on; the pinned version lies between them.
    """

    provider: str
    package: str
    binary: str
    pinned: str
    oldest_checked: str
    newest_checked: str

    def spec(self, version: str | None = None) -> str:
        """The npm spec ``package@version`` (the pinned version when ``version`` is None)."""
        return f"{self.package}@{version or self.pinned}"


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
    text = resources.files("agentshim.testing").joinpath("cli_versions.json").read_text("utf-8")
    raw: dict[str, Any] = json.loads(text)
    pins: dict[str, PinnedCli] = {}
    for name, entry in raw.items():
        checked: dict[str, str] = entry["checked"]
        pins[name] = PinnedCli(
            provider=name,
            package=entry["package"],
            binary=entry["binary"],
            pinned=entry["pinned"],
            oldest_checked=checked["oldest"],
            newest_checked=checked["newest"],
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
    if not isinstance(version, str) or not _VERSION.match(version):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise InvalidRequestError(
            "version",
            f"{version!r} is not a version number",
            f"version {version!r} of {cli.package} is not a version number such as "
            f"{cli.pinned!r}; for the newest one call latest_version({cli.provider!r}) first",
        )
    return version


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

    An install that never finished (npm was interrupted) does not count.
    """
    cli = pinned_cli(provider)
    directory = install_dir(provider, version, cache=cache)
    binary = _bin_path(cli, directory)
    if (directory / _DONE_MARKER).is_file() and binary.exists():
        return binary
    return None


def _ignore(_: str) -> None:
    """Drop a progress line."""


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

    ``log`` receives a line when an install starts and when it ends (nothing for a cached one),
    and a progress line every ``progress_every`` seconds while npm works (downloads can take
    minutes), so a caller showing ``log`` never looks hung.

    Raises:
        InvalidRequestError: no pinned CLI for ``provider``, or ``version`` is not a version.
        CliInstallError: npm is not on PATH, failed, timed out, or left no such binary.
    """
    say = log or _ignore
    cli = pinned_cli(provider)
    spec = cli.spec(_checked_version(version, cli))
    cached = find_cli(provider, version, cache=cache)
    if cached is not None:
        return cached
    npm = shutil.which("npm")
    if npm is None:
        raise CliInstallError(
            spec, f"cannot install {spec}: npm is not on PATH; install Node.js and npm first"
        )
    directory = install_dir(provider, version, cache=cache)
    directory.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    say(f"installing {spec} into {directory} ...")
    argv = [npm, "install", "--no-audit", "--no-fund", "--prefix", str(directory), spec]
    ticking = _progress(say, spec, started, progress_every) if log is not None else None
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        raise CliInstallError(
            spec, f"npm install {spec} took longer than {timeout:g} s; try again or raise timeout"
        ) from None
    finally:
        if ticking is not None:
            ticking()
    binary = _bin_path(cli, directory)
    if done.returncode != 0 or not binary.exists():
        raise CliInstallError(
            spec,
            f"npm install {spec} failed (exit {done.returncode}); its output ends:\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}",
        )
    (directory / _DONE_MARKER).write_text(spec + "\n", encoding="utf-8")
    say(f"installed {spec} in {time.monotonic() - started:.0f}s")
    return binary


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
    try:
        done = subprocess.run(
            [npm, "view", cli.package, "version"],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise CliInstallError(
            cli.package, f"npm view {cli.package} version took longer than {timeout:g} s"
        ) from None
    version = done.stdout.strip().splitlines()[-1].strip() if done.stdout.strip() else ""
    if done.returncode != 0 or not _VERSION.match(version):
        raise CliInstallError(
            cli.package,
            f"npm view {cli.package} version gave no version (exit {done.returncode}): "
            f"{(done.stderr or done.stdout)[-500:]}",
        )
    return version
