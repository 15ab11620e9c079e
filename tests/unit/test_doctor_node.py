"""``agentshim doctor`` on a machine whose Node is older than the CLI's package declares."""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

from tests.unit.agentshim_command import agentshim

ROOT = Path(__file__).resolve().parents[2]

# A node that is 20.20.2, and runs a script by printing what the script's first line says.
FAKE_NODE = """#!/bin/sh
if [ "$1" = --version ]; then echo "$FAKE_NODE_VERSION"; exit 0; fi
echo "1.6.0"
"""


def _executable(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


def _installed_pi(tmp_path: Path, engines: str) -> Path:
    """A ``pi`` on PATH as npm installs it: a link to the package's ``#!/usr/bin/env node`` entry."""
    package = tmp_path / "lib" / "node_modules" / "@earendil-works" / "pi-coding-agent"
    manifest = {
        "name": "@earendil-works/pi-coding-agent",
        "version": "1.6.0",
        "engines": {"node": engines},
    }
    _executable(package / "package.json", json.dumps(manifest))
    _executable(package / "dist" / "cli.js", "#!/usr/bin/env node\n")
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "pi").symlink_to(package / "dist" / "cli.js")
    _executable(bin_dir / "node", FAKE_NODE)
    return bin_dir


def doctor(tmp_path: Path, bin_dir: Path, node: str) -> dict[str, object]:
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env = {
        "HOME": str(home),
        "PATH": os.pathsep.join([str(bin_dir), "/usr/local/bin", "/usr/bin", "/bin"]),
        "PYTHONPATH": str(ROOT),
        "LANG": "C.UTF-8",
        "FAKE_NODE_VERSION": node,
        "AGENTSHIM_CLI_DIR": str(tmp_path / "empty-cache"),
    }
    done = agentshim(tmp_path, "doctor", "pi", "--json", env=env)
    (report,) = json.loads(done.stdout)
    return report


def test_node_20_under_pi_1_6_names_the_node_it_needs(tmp_path: Path) -> None:
    bin_dir = _installed_pi(tmp_path, ">=22.19.0")
    report = doctor(tmp_path, bin_dir, "v20.20.2")
    assert report["ready"] is False
    assert report["node"] == "v20.20.2"
    assert report["node_required"] == ">=22.19.0"
    problems = report["problems"]
    assert isinstance(problems, list)
    [problem] = [p for p in problems if "Node" in str(p)]
    assert "22.19.0 or newer" in str(problem)
    assert "v20.20.2" in str(problem)


def test_a_node_of_the_right_major_but_too_old_a_minor_is_still_too_old(tmp_path: Path) -> None:
    bin_dir = _installed_pi(tmp_path, ">=22.19.0")
    report = doctor(tmp_path, bin_dir, "v22.3.0")
    assert any("22.19.0 or newer" in str(p) for p in report["problems"])  # type: ignore[union-attr]


def test_a_new_enough_node_is_no_problem(tmp_path: Path) -> None:
    bin_dir = _installed_pi(tmp_path, ">=22.19.0")
    report = doctor(tmp_path, bin_dir, "v22.19.0")
    assert report["node"] == "v22.19.0"
    assert not any("Node" in str(p) for p in report["problems"])  # type: ignore[union-attr]
