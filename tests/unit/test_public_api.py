from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import agentshim

PACKAGE = Path(agentshim.__file__).parent


class TestExports:
    def test_all_names_are_importable(self) -> None:
        for name in agentshim.__all__:
            assert getattr(agentshim, name) is not None, name

    def test_nothing_private_is_exported(self) -> None:
        assert all(not n.startswith("_") or n == "__version__" for n in agentshim.__all__)

    def test_all_has_no_duplicates(self) -> None:
        assert len(set(agentshim.__all__)) == len(agentshim.__all__)

    def test_dir_lists_exactly_the_public_names(self) -> None:
        assert sorted(dir(agentshim)) == sorted(agentshim.__all__)

    def test_unknown_names_raise_attribute_error(self) -> None:
        with pytest.raises(AttributeError, match="NoSuchThing"):
            agentshim.NoSuchThing  # type: ignore[attr-defined]  # noqa: B018

    def test_version_is_the_distribution_version(self) -> None:
        from importlib.metadata import version

        assert agentshim.__version__ == version("agentshim")

    def test_importing_the_package_imports_no_provider(self) -> None:
        code = (
            "import sys, agentshim; "
            "print(sorted(m for m in sys.modules if m.startswith('agentshim.providers.')))"
        )
        out = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        ).stdout
        assert out.strip() == "[]"


def _imported_modules(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append(node.module)
    return found


class TestLayering:
    def test_core_and_execution_never_import_upper_layers(self) -> None:
        forbidden = (
            "agentshim.providers",
            "agentshim.cli_agent",
            "agentshim.testing",
            "agentshim.session",
            "agentshim.agent",
            "agentshim.oneshot",
        )
        offenders: list[str] = []
        for layer in ("core", "execution"):
            for path in (PACKAGE / layer).rglob("*.py"):
                for module in _imported_modules(path):
                    if module.startswith(forbidden):
                        offenders.append(f"{path.relative_to(PACKAGE)} imports {module}")
        assert offenders == []

    def test_core_never_imports_execution(self) -> None:
        offenders = [
            str(path)
            for path in (PACKAGE / "core").rglob("*.py")
            for module in _imported_modules(path)
            if module.startswith("agentshim.execution")
        ]
        assert offenders == []

    def test_every_module_uses_postponed_annotations(self) -> None:
        missing = [
            str(path.relative_to(PACKAGE))
            for path in PACKAGE.rglob("*.py")
            if "from __future__ import annotations" not in path.read_text(encoding="utf-8")
        ]
        assert missing == []
