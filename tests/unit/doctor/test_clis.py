from __future__ import annotations

import os
import re
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from agentshim.core.errors import CliInstallError, InvalidRequestError
from agentshim.doctor.clis import (
    CACHE_ENV,
    PinnedCli,
    VersionStatus,
    cache_root,
    find_cli,
    install_cli,
    latest_version,
    pinned_cli,
    pinned_clis,
    version_key,
    version_status,
)
from agentshim.providers import provider_names

ROOT = Path(__file__).resolve().parents[3]

# A stand-in for npm: "install --prefix DIR SPEC" creates DIR/node_modules/.bin/<binary> and
# logs the call; "view PKG version" prints $FAKE_NPM_LATEST; $FAKE_NPM_FAIL makes it exit 1.
FAKE_NPM = """#!/bin/sh
echo "$@" >> "$FAKE_NPM_LOG"
if [ -n "$FAKE_NPM_WAIT" ]; then read go < "$FAKE_NPM_WAIT"; fi
if [ -n "$FAKE_NPM_FAIL" ]; then echo "npm ERR! 404 no such package" >&2; exit 1; fi
if [ "$1" = view ]; then echo "$FAKE_NPM_LATEST"; exit 0; fi
while [ "$1" != --prefix ]; do shift; done
mkdir -p "$2/node_modules/.bin"
printf '#!/bin/sh\\necho fake\\n' > "$2/node_modules/.bin/$FAKE_NPM_BINARY"
chmod +x "$2/node_modules/.bin/$FAKE_NPM_BINARY"
"""


@pytest.fixture
def npm(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    script = bin_dir / "npm"
    script.write_text(FAKE_NPM)
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    log = tmp_path / "npm.log"
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}/usr/bin{os.pathsep}/bin")
    monkeypatch.setenv("FAKE_NPM_LOG", str(log))
    monkeypatch.setenv("FAKE_NPM_BINARY", "codex")
    monkeypatch.setenv("FAKE_NPM_LATEST", "0.999.1")
    monkeypatch.delenv("FAKE_NPM_FAIL", raising=False)
    monkeypatch.delenv("FAKE_NPM_WAIT", raising=False)
    return log


def calls(log: Path) -> list[str]:
    return log.read_text().splitlines() if log.exists() else []


class TestPins:
    def test_every_builtin_provider_has_a_pin_inside_its_checked_range(self) -> None:
        pins = pinned_clis()
        assert list(pins) == list(provider_names())
        for pin in pins.values():
            assert version_status(pin, pin.pinned) is VersionStatus.PINNED
            assert version_status(pin, pin.oldest_checked) in (
                VersionStatus.PINNED,
                VersionStatus.CHECKED,
            )
            assert version_key(pin.oldest_checked) <= version_key(pin.newest_checked)  # type: ignore[operator]

    def test_unknown_provider_is_refused_naming_the_known_ones(self) -> None:
        with pytest.raises(InvalidRequestError, match="claude"):
            pinned_cli("nosuch")


# What a CLI's printed version is against TestVersionStatus.pin (1.5.0, checked 1.2.0 to 1.9.3).
STATUS_BY_PRINTED_VERSION = {
    "1.5.0": VersionStatus.PINNED,
    "x-cli 1.5.0 (build abc)": VersionStatus.PINNED,
    "1.2.0": VersionStatus.CHECKED,
    "1.9.3": VersionStatus.CHECKED,
    "1.10.0": VersionStatus.UNTESTED,
    "2.0.0": VersionStatus.UNTESTED,
    "1.1.9": VersionStatus.UNTESTED,
    "no digits here": VersionStatus.UNKNOWN,
    None: VersionStatus.UNKNOWN,
}


class TestVersionStatus:
    pin = PinnedCli("x", "pkg", "x", pinned="1.5.0", oldest_checked="1.2.0", newest_checked="1.9.3")

    @pytest.mark.parametrize(("printed", "status"), STATUS_BY_PRINTED_VERSION.items())
    def test_status(self, printed: str | None, status: VersionStatus) -> None:
        assert version_status(self.pin, printed) is status


class TestInstall:
    def test_installs_once_then_reuses_the_cache(self, npm: Path, tmp_path: Path) -> None:
        cache = tmp_path / "cache"
        assert find_cli("codex", cache=cache) is None
        lines: list[str] = []
        binary = install_cli("codex", cache=cache, log=lines.append)
        pin = pinned_cli("codex")
        assert binary == cache / pin.spec() / "node_modules" / ".bin" / "codex"
        assert subprocess.run([str(binary)], capture_output=True, text=True).stdout == "fake\n"
        assert find_cli("codex", cache=cache) == binary
        assert install_cli("codex", cache=cache) == binary
        assert len(calls(npm)) == 1
        assert pin.spec() in calls(npm)[0]
        assert len(lines) == 2

    def test_a_long_install_says_it_is_still_working(
        self, npm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        # npm waits on a FIFO that only the first progress line opens: it cannot finish
        # before one was said, however fast or slow the machine.
        gate = tmp_path / "gate"
        os.mkfifo(gate)
        monkeypatch.setenv("FAKE_NPM_WAIT", str(gate))
        said: list[str] = []

        def log(line: str) -> None:
            said.append(line)
            if (
                line.startswith("still installing")
                and sum(x.startswith("still") for x in said) == 1
            ):
                gate.write_text("go\n")

        install_cli("codex", cache=tmp_path / "cache", log=log, progress_every=0.01)
        assert said[0].startswith("installing ")
        assert any(re.match(r"still installing @openai/codex@\S+: \d+s so far", x) for x in said)
        assert said[-1].startswith("installed ")

    def test_a_given_version_goes_to_its_own_directory(self, npm: Path, tmp_path: Path) -> None:
        cache = tmp_path / "cache"
        binary = install_cli("codex", "0.200.0", cache=cache)
        assert "@openai/codex@0.200.0" in str(binary)
        assert find_cli("codex", cache=cache) is None
        assert find_cli("codex", "0.200.0", cache=cache) == binary

    def test_an_unfinished_install_is_done_again(self, npm: Path, tmp_path: Path) -> None:
        cache = tmp_path / "cache"
        binary = install_cli("codex", cache=cache)
        (binary.parents[2] / ".agentshim-installed").unlink()
        assert find_cli("codex", cache=cache) is None
        install_cli("codex", cache=cache)
        assert len(calls(npm)) == 2

    def test_cache_comes_from_the_environment(
        self, npm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv(CACHE_ENV, str(tmp_path / "env-cache"))
        assert cache_root() == tmp_path / "env-cache"
        assert install_cli("codex").is_relative_to(tmp_path / "env-cache")

    def test_npm_failure_is_a_typed_error_with_npm_output(
        self, npm: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("FAKE_NPM_FAIL", "1")
        with pytest.raises(CliInstallError, match="404 no such package") as caught:
            install_cli("codex", cache=tmp_path / "cache")
        assert caught.value.spec == pinned_cli("codex").spec()
        assert find_cli("codex", cache=tmp_path / "cache") is None

    def test_no_npm_says_to_install_node(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("PATH", str(tmp_path))
        with pytest.raises(CliInstallError, match="npm is not on PATH"):
            install_cli("codex", cache=tmp_path / "cache")

    @pytest.mark.parametrize("version", ["latest", "1.0.0 && rm -rf /", "../x", ""])
    def test_a_version_that_is_not_a_number_is_refused(self, version: str, tmp_path: Path) -> None:
        with pytest.raises(InvalidRequestError, match="version"):
            install_cli("codex", version, cache=tmp_path)

    def test_latest_version_asks_the_registry(self, npm: Path) -> None:
        assert latest_version("codex") == "0.999.1"
        assert calls(npm) == ["view @openai/codex version"]

    def test_latest_version_failure_is_typed(
        self, npm: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setenv("FAKE_NPM_LATEST", "not a version")
        with pytest.raises(CliInstallError, match="gave no version"):
            latest_version("codex")


def test_install_script_is_a_wrapper_printing_provider_version_path(
    npm: Path, tmp_path: Path
) -> None:
    cache = tmp_path / "cache"
    script = ROOT / "scripts" / "install_clis.py"
    done = subprocess.run(
        [sys.executable, str(script), "codex", "--latest", "--cache", str(cache)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    provider, version, path = done.stdout.split()
    assert (provider, version) == ("codex", "0.999.1")
    assert Path(path) == find_cli("codex", "0.999.1", cache=cache)
