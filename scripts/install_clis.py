#!/usr/bin/env python3
"""Install agent CLIs with npm into the per-version cache (``agentshim.doctor.clis``).

Usage: install_clis.py [PROVIDER ...] [--cli-version V | --latest | --oldest] [--cache DIR]

Default: every provider at its pinned version. ``--latest`` installs the newest version the
registry serves, ``--oldest`` the oldest checked one. Prints ``provider version bin-path`` per
CLI; exits 1 if any install failed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from agentshim.core.errors import AgentShimError
from agentshim.doctor.clis import install_cli, latest_version, pinned_clis


def _log(line: str) -> None:
    print(line, file=sys.stderr, flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("providers", nargs="*", help="providers to install (default: all)")
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--cli-version", help="install this version instead of the pinned one")
    which.add_argument("--latest", action="store_true", help="the newest registry version")
    which.add_argument("--oldest", action="store_true", help="the oldest checked version")
    parser.add_argument("--cache", type=Path, help="cache directory")
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
        try:
            if args.latest:
                version = latest_version(name)
            elif args.oldest:
                version = pins[name].oldest_checked
            else:
                version = args.cli_version or pins[name].pinned
            path = install_cli(name, version, cache=args.cache, log=_log)
        except AgentShimError as error:
            print(f"{name}: {error}", file=sys.stderr)
            failed += 1
            continue
        print(f"{name} {version} {path}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
