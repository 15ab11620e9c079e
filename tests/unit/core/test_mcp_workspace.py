from __future__ import annotations

import json
from pathlib import Path

import pytest

from agentshim.core.errors import McpConfigError
from agentshim.core.mcp_workspace import configured_servers, workspace_config_file


class TestWorkspaceConfigFile:
    def test_the_file_inside_the_workspace(self, tmp_path: Path) -> None:
        assert workspace_config_file(tmp_path, ".cli/settings.json") == (
            tmp_path / ".cli" / "settings.json"
        )
        assert workspace_config_file(str(tmp_path), "cli.json") == tmp_path / "cli.json"

    def test_no_workspace_is_a_config_error_naming_the_file(self) -> None:
        with pytest.raises(McpConfigError) as caught:
            workspace_config_file(None, "cli.json")
        assert "cli.json" in str(caught.value)
        assert "pass mcp_workspace or a cwd" in str(caught.value)


class TestConfiguredServers:
    def write(self, tmp_path: Path, document: object) -> Path:
        path = tmp_path / "cli.json"
        path.write_text(json.dumps(document), encoding="utf-8")
        return path

    def test_object_entries_under_the_key(self, tmp_path: Path) -> None:
        path = self.write(
            tmp_path,
            {"theme": "dark", "mcp": {"a": {"command": "x"}, "b": {"url": "u"}, "bad": [1]}},
        )
        assert configured_servers(path, "mcp") == {"a": {"command": "x"}, "b": {"url": "u"}}

    def test_a_missing_file_holds_no_servers(self, tmp_path: Path) -> None:
        assert configured_servers(tmp_path / "absent.json", "mcp") == {}

    @pytest.mark.parametrize("document", [[1, 2], "text", {"other": {}}, {"mcp": [1]}])
    def test_a_document_without_a_server_object_holds_none(
        self, tmp_path: Path, document: object
    ) -> None:
        assert configured_servers(self.write(tmp_path, document), "mcp") == {}

    def test_a_file_that_is_not_json_is_an_error(self, tmp_path: Path) -> None:
        path = tmp_path / "cli.json"
        path.write_text("{not json", encoding="utf-8")
        with pytest.raises(ValueError):
            configured_servers(path, "mcp")
