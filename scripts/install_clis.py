#!/usr/bin/env python3
"""Install the pinned agent CLIs with npm into a per-version cache directory.

Usage: install_clis.py [PROVIDER ...] [--cli-version V] [--cache DIR]

Each CLI goes to ``<cache>/<package>@<version>`` (default cache ``~/.cache/agentshim/clis``,
or ``$AGENTSHIM_CLI_DIR``) with ``npm install --prefix``; an existing install is reused. The
pinned versions live in ``scripts/cli_versions.json``. Prints ``provider version bin-path``
per CLI.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

VERSIONS_FILE = Path(__file__).with_name("cli_versions.json")
CACHE_ENV = "AGENTSHIM_CLI_DIR"
_DONE_MARKER = ".agentshim-installed"


@dataclass(frozen=True)
class PinnedCli:
    provider: str
    package: str
    version: str
    binary: str

    @property
    def spec(self) -> str:
        return f"{self.package}@{self.version}"


def pinned_clis(path: Path = VERSIONS_FILE) -> dict[str, PinnedCli]:
    """The pinned CLI of every provider, by provider name."""
    raw = json.loads(path.read_text(encoding="utf-8"))
    return {
        name: PinnedCli(name, entry["package"], entry["version"], entry["binary"])
        for name, entry in raw.items()
    }


def cache_root() -> Path:
    """Where installs live: ``$AGENTSHIM_CLI_DIR`` or ``~/.cache/agentshim/clis``."""
    configured = os.environ.get(CACHE_ENV)
    if configured:
        return Path(configured).expanduser()
    return Path.home() / ".cache" / "agentshim" / "clis"


def install_dir(cli: PinnedCli, root: Path | None = None) -> Path:
    return (root or cache_root()) / cli.spec


def bin_path(cli: PinnedCli, root: Path | None = None) -> Path:
    return install_dir(cli, root) / "node_modules" / ".bin" / cli.binary


def installed_bin(cli: PinnedCli, root: Path | None = None) -> Path | None:
    """The cached binary, or None when this version was never installed completely."""
    directory = install_dir(cli, root)
    binary = bin_path(cli, root)
    if (directory / _DONE_MARKER).is_file() and binary.exists():
        return binary
    return None


def install_cli(
    cli: PinnedCli, root: Path | None = None, *, log: bool = True, timeout: float = 600.0
) -> Path:
    """Install ``cli`` unless it is cached; return the path of its binary.

    Raises:
        RuntimeError: npm failed or the package has no such binary.
    """
    cached = installed_bin(cli, root)
    if cached is not None:
        return cached
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError("npm is not on PATH; install Node.js (>= 20) and npm first")
    directory = install_dir(cli, root)
    directory.mkdir(parents=True, exist_ok=True)
    started = time.monotonic()
    if log:
        print(f"installing {cli.spec} into {directory} ...", file=sys.stderr, flush=True)
    done = subprocess.run(
        [npm, "install", "--no-audit", "--no-fund", "--prefix", str(directory), cli.spec],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    binary = bin_path(cli, root)
    if done.returncode != 0 or not binary.exists():
        raise RuntimeError(
            f"npm install {cli.spec} failed (exit {done.returncode}):\n"
            f"{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
        )
    (directory / _DONE_MARKER).write_text(cli.spec + "\n", encoding="utf-8")
    if log:
        print(
            f"installed {cli.spec} in {time.monotonic() - started:.0f}s",
            file=sys.stderr,
            flush=True,
        )
    return binary


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("providers", nargs="*", help="providers to install (default: all)")
    parser.add_argument("--cli-version", help="install this version instead of the pinned one")
    parser.add_argument("--cache", type=Path, help="cache directory (default: %(default)s)")
    args = parser.parse_args(argv)
    pins = pinned_clis()
    names = args.providers or list(pins)
    unknown = [name for name in names if name not in pins]
    if unknown:
        parser.error(f"unknown provider(s) {', '.join(unknown)}; known: {', '.join(pins)}")
    if args.cli_version and len(names) != 1:
        parser.error("--cli-version needs exactly one provider")
    failed = 0
    for name in names:
        cli = pins[name]
        if args.cli_version:
            cli = PinnedCli(cli.provider, cli.package, args.cli_version, cli.binary)
        try:
            path = install_cli(cli, args.cache)
        except (RuntimeError, subprocess.TimeoutExpired) as error:
            print(f"{name}: {error}", file=sys.stderr)
            failed += 1
            continue
        print(f"{name} {cli.version} {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
