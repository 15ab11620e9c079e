from __future__ import annotations

import ast
from pathlib import Path

import agentshim
from agentshim.providers import provider_names

PACKAGE = Path(agentshim.__file__).parent
# doctor/ holds what `agentshim doctor` runs against each provider's pinned CLI (moved out of
# testing/, where it was allowed for the same reason).
ALLOWED = ("providers", "testing", "doctor")


def test_no_provider_name_literal_outside_providers_testing_and_doctor() -> None:
    names = set(provider_names())
    offenders: list[str] = []
    for path in PACKAGE.rglob("*.py"):
        relative = path.relative_to(PACKAGE)
        if relative.parts[0] in ALLOWED:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Constant)
                and isinstance(node.value, str)
                and node.value in names
            ):
                offenders.append(f"{relative}:{node.lineno} {node.value!r}")
    assert offenders == []
