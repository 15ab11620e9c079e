"""Finding the installed CLI binaries for the live tests.

The binary is looked up in this order: ``$AGENTSHIM_CLI_DIR`` (a directory holding the binary, or an install cache laid out as
``<package>@<version>/node_modules/.bin/``), the default install cache
(``~/.cache/agentshim/clis``, filled by ``scripts/install_clis.py``), then ``PATH``.
"""

from __future__ import annotations

import importlib.util
import os
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

import pytest

REPO = Path(__file__).resolve().parents[2]
CLI_DIR_ENV = "AGENTSHIM_CLI_DIR"


def _install_module() -> ModuleType:
    path = REPO / "scripts" / "install_clis.py"
    spec = importlib.util.spec_from_file_location("agentshim_install_clis", path)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


INSTALL = _install_module()


@dataclass(frozen=True)
class LiveBinary:
    """Where a provider's binary was found, and how."""

    provider: str
    path: Path
    source: str
    version: str | None


def find_binary(provider: str) -> LiveBinary | None:
    """The installed binary for ``provider`` (pinned version first), or None."""
    pin = INSTALL.pinned_clis()[provider]
    configured = os.environ.get(CLI_DIR_ENV)
    if configured:
        flat = Path(configured).expanduser() / pin.binary
        if flat.exists():
            return LiveBinary(provider, flat, f"${CLI_DIR_ENV}", None)
        cached = INSTALL.installed_bin(pin, Path(configured).expanduser())
        if cached is not None:
            return LiveBinary(provider, Path(cached), f"${CLI_DIR_ENV} cache", pin.version)
    cached = INSTALL.installed_bin(pin, Path.home() / ".cache" / "agentshim" / "clis")
    if cached is not None:
        return LiveBinary(provider, Path(cached), "install cache", pin.version)
    on_path = shutil.which(pin.binary)
    if on_path is not None:
        return LiveBinary(provider, Path(on_path), "PATH", None)
    return None


def require_binary(provider: str) -> LiveBinary:
    """The binary, or skip the test saying how to install it."""
    found = find_binary(provider)
    if found is None:
        pin = INSTALL.pinned_clis()[provider]
        pytest.skip(
            f"{pin.binary} is not installed: run `python scripts/install_clis.py {provider}` "
            f"(installs {pin.package}@{pin.version}) or set {CLI_DIR_ENV}"
        )
    return found
