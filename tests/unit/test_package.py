"""The package as a user gets it: a wheel installed in a fresh venv, with nothing else.

The wheel is built from a copy of the sources (so the checkout stays clean) and installed
with ``pip install --no-index --no-deps``: it must need nothing from an index. The build
itself needs setuptools >= 77 from whatever index pip is configured with; without one the
build test is skipped and says so.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import venv
import zipfile
from pathlib import Path

import pytest

from agentshim import __version__

ROOT = Path(__file__).resolve().parents[2]
README = (ROOT / "README.md").read_text(encoding="utf-8")
GUARD = 300.0  # only a hang guard


def first_python_example() -> str:
    found = re.search(r"```python\n(.*?)```", README, re.DOTALL)
    assert found is not None, "the README has no Python example"
    return found.group(1)


def run(argv: list[str], cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=GUARD, check=False
    )


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> Path:
    source = tmp_path_factory.mktemp("source")
    for name in ("pyproject.toml", "README.md", "LICENSE", "MANIFEST.in", "CHANGELOG.md"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "agentshim", source / "agentshim", ignore=shutil.ignore_patterns("__pycache__")
    )
    out = tmp_path_factory.mktemp("dist")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    done = run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-q", "-w", str(out), str(source)],
        source,
        env,
    )
    if done.returncode != 0 and "setuptools" in done.stderr and "No matching" in done.stderr:
        pytest.skip(f"no index to get setuptools>=77 from: {done.stderr[-300:]}")
    assert done.returncode == 0, done.stderr
    (built,) = out.glob("agentshim-*.whl")
    return built


@pytest.mark.package
def test_the_wheel_carries_the_license_the_types_and_the_version_data(wheel: Path) -> None:
    assert wheel.name == f"agentshim-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(f"agentshim-{__version__}.dist-info/METADATA").decode()
    assert any(name.endswith("licenses/LICENSE") for name in names)
    assert "agentshim/py.typed" in names
    assert "agentshim/doctor/cli_versions.json" in names
    assert "License-Expression: MIT" in metadata
    assert "Classifier: Typing :: Typed" in metadata
    assert "Requires-Python: >=3.10" in metadata
    headers = metadata.split("\n\n", 1)[0].splitlines()
    required = [line for line in headers if line.startswith("Requires-Dist:")]
    assert required, "the dev extra is listed"
    assert all("extra ==" in line for line in required), required  # no runtime dependency


@pytest.mark.package
def test_the_wheel_in_a_fresh_venv_runs_the_command_and_the_readme(
    wheel: Path, tmp_path: Path
) -> None:
    home = tmp_path / "venv"
    venv.EnvBuilder(with_pip=True).create(home)
    python = home / "bin" / "python"
    env = {
        "PATH": f"{home / 'bin'}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "LANG": "C.UTF-8",
    }
    installed = run(
        [str(python), "-m", "pip", "install", "-q", "--no-index", "--no-deps", str(wheel)],
        tmp_path,
        env,
    )
    assert installed.returncode == 0, installed.stderr
    command = str(home / "bin" / "agentshim")
    version = run([command, "--version"], tmp_path, env)
    assert version.stdout == f"agentshim {__version__}\n", version.stderr
    turn = run([command, "run", "--stand-in", "hi"], tmp_path, env)
    assert turn.returncode == 0, turn.stderr
    assert "stand-in CLI" in turn.stdout
    assert re.search(r"^session \S+ \| tokens", turn.stdout, re.MULTILINE)
    example = run([str(python), "-c", first_python_example()], tmp_path, env)
    assert example.returncode == 0, example.stderr
    located = run([str(python), "-c", "import agentshim; print(agentshim.__file__)"], tmp_path, env)
    assert located.stdout.startswith(str(home)), "the example did not use the installed wheel"


def test_the_long_description_has_no_link_that_breaks_on_an_index_page() -> None:
    assert "<host>" not in README
    assert "<owner>" not in README
    relative_links = re.findall(r"\]\((?!https?://|#)([^)]+)\)", README)
    assert relative_links == []
    tomllib = pytest.importorskip("tomllib")
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["readme"] == "README.md"
    for url in project.get("urls", {}).values():
        assert url.startswith("https://"), url
