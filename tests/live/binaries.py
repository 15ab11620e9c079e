"""Finding the installed CLI binaries for the live tests.

The version is the pinned one, or ``$AGENTSHIM_LIVE_VERSION_<PROVIDER>`` (``scripts/conformance.sh
--latest`` and ``--oldest`` set it). The binary is looked up in this order: ``$AGENTSHIM_CLI_DIR``
(a directory holding the binary, or an install cache laid out as
``<package>@<version>/node_modules/.bin/``), the default install cache
(``~/.cache/agentshim/clis``, filled by ``agentshim.doctor.clis.install_cli`` or
``scripts/install_clis.py``), then ``PATH``.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import pytest

from agentshim.doctor.clis import CACHE_ENV, find_cli, pinned_cli

CLI_DIR_ENV = CACHE_ENV


@dataclass(frozen=True)
class LiveBinary:
    """Where a provider's binary was found, and how."""

    provider: str
    path: Path
    source: str
    version: str | None


def wanted_version(provider: str) -> str:
    """The version the live tests run: the pinned one unless the environment names another."""
    return (
        os.environ.get(f"AGENTSHIM_LIVE_VERSION_{provider.upper()}") or pinned_cli(provider).pinned
    )


def find_binary(provider: str) -> LiveBinary | None:
    """The installed binary for ``provider`` (the wanted version first), or None."""
    pin = pinned_cli(provider)
    version = wanted_version(provider)
    configured = os.environ.get(CLI_DIR_ENV)
    if configured:
        flat = Path(configured).expanduser() / pin.binary
        if flat.exists():
            return LiveBinary(provider, flat, f"${CLI_DIR_ENV}", None)
        cached = find_cli(provider, version, cache=Path(configured).expanduser())
        if cached is not None:
            return LiveBinary(provider, cached, f"${CLI_DIR_ENV} cache", version)
    cached = find_cli(provider, version, cache=Path.home() / ".cache" / "agentshim" / "clis")
    if cached is not None:
        return LiveBinary(provider, cached, "install cache", version)
    on_path = shutil.which(pin.binary)
    if on_path is not None:
        return LiveBinary(provider, Path(on_path), "PATH", None)
    return None


def require_binary(provider: str) -> LiveBinary:
    """The binary, or skip the test saying how to install it."""
    found = find_binary(provider)
    if found is None:
        pin = pinned_cli(provider)
        version = wanted_version(provider)
        pytest.skip(
            f"{pin.binary} is not installed: run `python scripts/install_clis.py {provider} "
            f"--cli-version {version}` (installs {pin.spec(version)}) or set {CLI_DIR_ENV}"
        )
    return found
