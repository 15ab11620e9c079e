"""A CLI that moved to another npm package, and one that needs a newer Node than the machine's."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agentshim.core.errors import CliInstallError
from agentshim.doctor.clis import (
    PackageMove,
    PinnedCli,
    find_cli,
    install_cli,
    latest_version,
    pinned_cli,
)
from agentshim.doctor.node_runtime import minimum_node, node_requirement

# A stand-in for npm, in Python: "view PKG version" prints $FAKE_NPM_VERSIONS[PKG];
# "install --prefix DIR node@N" installs a node printing $FAKE_NODE_PROVIDED; any other spec
# installs the package with $FAKE_ENGINES as its engines.node and a bin that needs node.
FAKE_NPM = """#!{python}
import json, os, sys
from pathlib import Path
args = sys.argv[1:]
with open(os.environ["FAKE_NPM_LOG"], "a") as log:
    log.write(" ".join(args) + "\\n")
if args[0] == "view":
    versions = json.loads(os.environ["FAKE_NPM_VERSIONS"])
    if args[1] not in versions:
        sys.stderr.write("npm ERR! 404\\n")
        sys.exit(1)
    print(versions[args[1]])
    sys.exit(0)
prefix = Path(args[args.index("--prefix") + 1])
spec = args[-1]
package, _, version = spec.rpartition("@")
bin_dir = prefix / "node_modules" / ".bin"
bin_dir.mkdir(parents=True, exist_ok=True)
if package == "node":
    node = prefix / "node_modules" / "node" / "bin" / "node"
    node.parent.mkdir(parents=True)
    node.write_text(
        "#!/bin/sh\\n"
        'if [ "$1" = --version ]; then echo "$FAKE_NODE_PROVIDED"; exit 0; fi\\n'
        'echo "provided node ran: $*"\\n'
    )
    node.chmod(0o755)
    (bin_dir / "node").symlink_to("../node/bin/node")
    sys.exit(0)
home = prefix / "node_modules" / package
(home / "dist").mkdir(parents=True)
(home / "package.json").write_text(
    json.dumps({{"name": package, "version": version, "engines": {{"node": os.environ["FAKE_ENGINES"]}}}})
)
entry = home / "dist" / "cli.js"
entry.write_text("#!/usr/bin/env node\\n")
entry.chmod(0o755)
(bin_dir / "pi").symlink_to(os.path.relpath(entry, bin_dir))
"""

SYSTEM_NODE = """#!/bin/sh
if [ "$1" = --version ]; then echo "$FAKE_SYSTEM_NODE"; exit 0; fi
echo "system node ran: $*"
"""

OLD = "@mariozechner/pi-coding-agent"
NEW = "@earendil-works/pi-coding-agent"


def _executable(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IEXEC)


@pytest.fixture
def npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    _executable(bin_dir / "npm", FAKE_NPM.format(python=sys.executable))
    _executable(bin_dir / "node", SYSTEM_NODE)
    log = tmp_path / "npm.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setenv("FAKE_NPM_LOG", str(log))
    monkeypatch.setenv("FAKE_NPM_VERSIONS", json.dumps({OLD: "0.73.1", NEW: "1.6.0"}))
    monkeypatch.setenv("FAKE_ENGINES", ">=22.19.0")
    monkeypatch.setenv("FAKE_SYSTEM_NODE", "v20.20.2")
    monkeypatch.setenv("FAKE_NODE_PROVIDED", "v22.23.3")
    return log


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


class TestPackageMoves:
    cli = PinnedCli(
        "x",
        "old-pkg",
        "x",
        pinned="1.0.0",
        oldest_checked="1.0.0",
        newest_checked="3.0.0",
        moved=(PackageMove("mid-pkg", "2.0.0"), PackageMove("new-pkg", "3.0.0")),
    )

    @pytest.mark.parametrize(
        ("version", "package"),
        [
            ("1.0.0", "old-pkg"),
            ("1.99.9", "old-pkg"),
            ("2.0.0", "mid-pkg"),
            ("2.5.0-beta.1", "mid-pkg"),
            ("3.0.0", "new-pkg"),
            ("10.0.0", "new-pkg"),
        ],
    )
    def test_each_version_comes_from_the_package_that_published_it(
        self, version: str, package: str
    ) -> None:
        assert self.cli.package_for(version) == package
        assert self.cli.spec(version) == f"{package}@{version}"

    def test_pi_moved_to_its_new_package_after_0_73(self) -> None:
        pi = pinned_cli("pi")
        assert pi.packages == (OLD, NEW)
        assert pi.spec("0.73.1") == f"{OLD}@0.73.1"
        assert pi.spec("1.6.0") == f"{NEW}@1.6.0"


class TestLatest:
    def test_every_package_is_asked_and_the_newest_version_wins(self, npm: Path) -> None:
        assert latest_version("pi") == "1.6.0"
        asked = calls(npm)
        assert f"view {OLD} version" in asked
        assert f"view {NEW} version" in asked

    def test_a_package_the_registry_does_not_know_is_a_typed_error(
        self, npm: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("FAKE_NPM_VERSIONS", json.dumps({OLD: "0.73.1"}))
        with pytest.raises(CliInstallError, match=NEW):
            latest_version("pi")


class TestNodeProvisioning:
    def test_a_cli_needing_newer_node_runs_on_the_node_installed_beside_it(
        self, npm: Path, tmp_path: Path
    ) -> None:
        cache = tmp_path / "cache"
        lines: list[str] = []
        binary = install_cli("pi", "1.6.0", cache=cache, log=lines.append)
        installs = [line for line in calls(npm) if line.startswith("install")]
        assert installs[0].endswith(f"{NEW}@1.6.0")
        assert installs[1].endswith("node@22")
        ran = subprocess.run([str(binary), "--version"], capture_output=True, text=True)
        entry = cache / f"{NEW}@1.6.0" / "node_modules" / NEW / "dist" / "cli.js"
        assert ran.stdout == f"provided node ran: {entry} --version\n"
        assert any("Node >= 22.19.0" in line for line in lines)
        assert find_cli("pi", "1.6.0", cache=cache) == binary
        # A second install is the cached one; a second CLI reuses the installed Node.
        assert install_cli("pi", "1.6.0", cache=cache) == binary
        install_cli("pi", "1.5.0", cache=cache)
        assert [line for line in calls(npm) if line.endswith("node@22")] == [installs[1]]

    def test_the_old_package_on_a_node_it_accepts_needs_no_launcher(
        self, npm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("FAKE_ENGINES", ">=20.6.0")
        binary = install_cli("pi", "0.73.1", cache=tmp_path / "cache")
        assert binary == tmp_path / "cache" / f"{OLD}@0.73.1" / "node_modules" / ".bin" / "pi"
        assert not any("node@" in line for line in calls(npm))

    def test_a_new_enough_machine_node_is_used_as_it_is(
        self, npm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("FAKE_SYSTEM_NODE", "v22.19.0")
        binary = install_cli("pi", "1.6.0", cache=tmp_path / "cache")
        assert binary.name == "pi"
        assert binary.parent.name == ".bin"
        assert not any("node@" in line for line in calls(npm))

    def test_a_provided_node_still_too_old_is_a_typed_error_naming_the_minimum(
        self, npm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("FAKE_NODE_PROVIDED", "v22.3.0")
        with pytest.raises(CliInstallError, match=r"Node >= 22\.19\.0"):
            install_cli("pi", "1.6.0", cache=tmp_path / "cache")
        assert find_cli("pi", "1.6.0", cache=tmp_path / "cache") is None


class TestRequirement:
    @pytest.mark.parametrize(
        ("declared", "minimum"),
        [
            (">=22.19.0", (22, 19, 0)),
            ("^20.6", (20, 6)),
            (">= 18", (18,)),
            ("22.19.0", (22, 19, 0)),
            ("*", None),
            ("<24", None),
        ],
    )
    def test_the_lower_bound_of_an_engines_range(
        self, declared: str, minimum: tuple[int, ...] | None
    ) -> None:
        assert minimum_node(declared) == minimum

    def test_a_package_without_a_readable_manifest_declares_nothing(self, tmp_path: Path) -> None:
        assert node_requirement(tmp_path, "nothing-here") is None
        manifest = tmp_path / "node_modules" / "broken" / "package.json"
        manifest.parent.mkdir(parents=True)
        manifest.write_text("{not json")
        assert node_requirement(tmp_path, "broken") is None
