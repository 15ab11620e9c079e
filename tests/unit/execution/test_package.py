"""The execution package's public names, and what importing it costs."""

from __future__ import annotations

import pytest

import agentshim.execution as execution
from tests.unit.execution.child_python import modules_loaded_by


@pytest.mark.parametrize("name", execution.__all__)
def test_every_exported_name_resolves(name: str) -> None:
    assert getattr(execution, name) is not None


def test_dir_lists_the_exported_names() -> None:
    assert dir(execution) == sorted(execution.__all__)


def test_an_unknown_name_is_an_attribute_error() -> None:
    with pytest.raises(AttributeError, match="no_such_name"):
        execution.no_such_name  # noqa: B018


def test_running_a_command_does_not_import_the_container_support() -> None:
    loaded = modules_loaded_by("from agentshim.cli_agent import CliAgent", "agentshim.execution.")
    assert "agentshim.execution.host" in loaded
    # readiness is not on the list: it holds the health check every agent runs once.
    for heavy in ("docker", "confinement"):
        assert f"agentshim.execution.{heavy}" not in loaded
