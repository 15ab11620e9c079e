from __future__ import annotations

import json
import os
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentshim.core.errors import InvalidRequestError, McpConfigError
from agentshim.core.provider import McpInstallation
from agentshim.mcp.install import (
    ConfigFileInstallation,
    configured_servers,
    install_json_config,
    workspace_config_file,
)
from tests.unit.core.json_strategies import finite_json

OURS = {"agentshim-tools": {"command": "/usr/bin/tool", "args": ["--stdio"]}}


@pytest.fixture(autouse=True)
def private_state_dir(
    tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> Path:
    """Journals go to a directory of the test's own, never the user's state directory."""
    state = tmp_path_factory.mktemp("state")
    monkeypatch.setenv("AGENTSHIM_STATE_DIR", str(state))
    return state


def read_json(path: Path) -> Any:
    return json.loads(path.read_text())


class TestInstallIntoExistingFile:
    ORIGINAL = b'{\n\t"mcpServers": {"user": {"command": "u"}},\n\t"other": "\\u00e9"\n}'

    def test_merges_and_restores_byte_for_byte(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        path.write_bytes(self.ORIGINAL)
        installation = install_json_config(path, ("mcpServers",), OURS)
        assert read_json(path) == {
            "mcpServers": {"user": {"command": "u"}, **OURS},
            "other": "é",
        }
        assert installation.restore() is None
        assert path.read_bytes() == self.ORIGINAL

    def test_a_linked_file_is_refused_and_neither_link_nor_target_changes(
        self, tmp_path: Path
    ) -> None:
        # Written through, the servers would land in a file other workspaces read.
        target = tmp_path / "shared.json"
        target.write_bytes(self.ORIGINAL)
        path = tmp_path / ".mcp.json"
        path.symlink_to(target)
        with pytest.raises(McpConfigError, match=r"symbolic link.*cp --remove-destination"):
            install_json_config(path, ("mcpServers",), OURS)
        assert os.readlink(path) == str(target)
        assert target.read_bytes() == self.ORIGINAL
        assert sorted(p.name for p in tmp_path.iterdir()) == [".mcp.json", "shared.json"]
        # The fix the message names works: a copy in place of the link is merged and restored.
        path.unlink()
        path.write_bytes(self.ORIGINAL)
        installation = install_json_config(path, ("mcpServers",), OURS)
        assert installation.restore() is None
        assert path.read_bytes() == target.read_bytes() == self.ORIGINAL

    def test_a_link_to_nothing_is_refused_and_left_alone(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        path.symlink_to(tmp_path / "missing.json")
        with pytest.raises(McpConfigError, match="symbolic link"):
            install_json_config(path, ("mcpServers",), OURS)
        assert path.is_symlink()
        assert sorted(p.name for p in tmp_path.iterdir()) == [".mcp.json"]

    def test_restore_is_idempotent(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        path.write_bytes(self.ORIGINAL)
        installation = install_json_config(path, ("mcpServers",), OURS)
        assert installation.restore() is None
        path.write_text('{"edited": "after the turn"}')
        assert installation.restore() is None
        assert read_json(path) == {"edited": "after the turn"}

    def test_same_name_entry_replaced_for_the_turn_and_put_back(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        path.write_text(json.dumps({"mcpServers": {"agentshim-tools": {"command": "mine"}}}))
        installation = install_json_config(path, ("mcpServers",), OURS)
        assert read_json(path)["mcpServers"] == OURS
        path.write_text(json.dumps({**read_json(path), "agent": 1}))
        assert installation.restore() is not None
        assert read_json(path) == {
            "mcpServers": {"agentshim-tools": {"command": "mine"}},
            "agent": 1,
        }

    def test_nested_key_path_created_and_removed(self, tmp_path: Path) -> None:
        path = tmp_path / "settings.json"
        path.write_text('{"theme": "dark"}')
        installation = install_json_config(path, ("tools", "mcp"), OURS)
        assert read_json(path) == {"theme": "dark", "tools": {"mcp": OURS}}
        path.write_text(json.dumps({**read_json(path), "agent": True}))
        installation.restore()
        assert read_json(path) == {"theme": "dark", "agent": True}

    def test_keeps_file_mode(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        path.write_bytes(self.ORIGINAL)
        path.chmod(0o600)
        installation = install_json_config(path, ("mcpServers",), OURS)
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        installation.restore()
        assert stat.S_IMODE(path.stat().st_mode) == 0o600

    def test_defaults_added_only_when_missing(self, tmp_path: Path) -> None:
        path = tmp_path / "opencode.json"
        path.write_text('{"$schema": "mine", "model": "m"}')
        installation = install_json_config(path, ("mcp",), OURS, defaults={"$schema": "theirs"})
        assert read_json(path)["$schema"] == "mine"
        installation.restore()
        path.write_text('{"model": "m"}')
        installation = install_json_config(path, ("mcp",), OURS, defaults={"$schema": "theirs"})
        assert read_json(path)["$schema"] == "theirs"
        path.write_text(json.dumps({**read_json(path), "agent": 1}))
        installation.restore()
        assert read_json(path) == {"model": "m", "agent": 1}

    def test_is_an_mcp_installation(self, tmp_path: Path) -> None:
        installation = install_json_config(tmp_path / ".mcp.json", ("mcpServers",), OURS)
        assert isinstance(installation, McpInstallation)
        assert isinstance(installation, ConfigFileInstallation)
        assert tuple(installation.argv) == ()
        installation.restore()


class TestInstallIntoAbsentFile:
    def test_file_and_created_directories_are_removed(self, tmp_path: Path) -> None:
        path = tmp_path / "work" / ".gemini" / "settings.json"
        (tmp_path / "work").mkdir()
        installation = install_json_config(path, ("mcpServers",), OURS)
        assert read_json(path) == {"mcpServers": OURS}
        assert installation.restore() is None
        assert not (tmp_path / "work" / ".gemini").exists()
        assert (tmp_path / "work").is_dir()

    def test_defaults_come_first_in_a_new_file(self, tmp_path: Path) -> None:
        path = tmp_path / "opencode.json"
        installation = install_json_config(path, ("mcp",), OURS, defaults={"$schema": "s"})
        assert list(read_json(path)) == ["$schema", "mcp"]
        installation.restore()
        assert not path.exists()

    def test_agent_additions_survive_but_ours_go(self, tmp_path: Path) -> None:
        path = tmp_path / ".gemini" / "settings.json"
        installation = install_json_config(path, ("mcpServers",), OURS)
        path.write_text(json.dumps({**read_json(path), "agent": "kept"}))
        note = installation.restore()
        assert note is not None
        assert "changed during the turn" in note
        assert read_json(path) == {"agent": "kept"}

    def test_directory_with_new_files_is_kept(self, tmp_path: Path) -> None:
        path = tmp_path / ".gemini" / "settings.json"
        installation = install_json_config(path, ("mcpServers",), OURS)
        (tmp_path / ".gemini" / "agent-note.md").write_text("hi")
        installation.restore()
        assert not path.exists()
        assert (tmp_path / ".gemini" / "agent-note.md").exists()

    def test_file_deleted_by_the_agent(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        installation = install_json_config(path, ("mcpServers",), OURS)
        path.unlink()
        assert installation.restore() is None
        assert not path.exists()


class TestChangedDuringTheTurn:
    def test_garbage_left_by_agent_gets_original_bytes(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        path.write_bytes(b'{"a": 1}')
        installation = install_json_config(path, ("mcpServers",), OURS)
        path.write_text("{ half written")
        note = installation.restore()
        assert note is not None
        assert "original content" in note
        assert path.read_bytes() == b'{"a": 1}'

    def test_garbage_in_a_file_we_created_is_removed(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        installation = install_json_config(path, ("mcpServers",), OURS)
        path.write_text("[]")
        assert installation.restore() is not None
        assert not path.exists()

    def test_deleted_file_is_written_back(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        path.write_bytes(b'{"a": 1}')
        installation = install_json_config(path, ("mcpServers",), OURS)
        path.unlink()
        assert "deleted" in (installation.restore() or "")
        assert path.read_bytes() == b'{"a": 1}'

    def test_same_content_reformatted_counts_as_unchanged(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        path.write_bytes(b'{"a":1}')
        installation = install_json_config(path, ("mcpServers",), OURS)
        path.write_text(json.dumps(read_json(path), indent=4, sort_keys=True))
        assert installation.restore() is None
        assert path.read_bytes() == b'{"a":1}'

    def test_entries_already_removed_by_agent_leave_file_alone(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        path.write_bytes(b'{"a": 1}')
        installation = install_json_config(path, ("mcpServers",), OURS)
        path.write_bytes(b'{"a": 2}')
        installation.restore()
        assert path.read_bytes() == b'{"a": 2}'

    def test_restore_never_raises(self, tmp_path: Path) -> None:
        path = tmp_path / ".mcp.json"
        path.write_bytes(b'{"a": 1}')
        installation = install_json_config(path, ("mcpServers",), OURS)
        path.unlink()
        path.mkdir()
        (path / "blocker").write_text("x")
        note = installation.restore()
        assert note is not None
        assert str(path) in note
        assert installation.restore() is None


class TestRefusals:
    @pytest.mark.parametrize(
        ("content", "reason"),
        [
            (b'{\n  // servers\n  "mcpServers": {}\n}', "comments or trailing commas (JSONC)"),
            (b'{"mcpServers": {"a": {"command": "x"},},}', "comments or trailing commas (JSONC)"),
            (b'{"a": 1 /* note */}', "comments or trailing commas (JSONC)"),
            (b'{"a": NaN}', "not valid JSON"),
            (b'{"a": -Infinity}', "not valid JSON"),
            (b'{"url": "http://x/*y*/"', "not valid JSON"),
            (b"[1, 2]", "not a JSON object"),
            (b'"text"', "not a JSON object"),
            (b"", "not valid JSON"),
            (b'{"a": "\xff"}', "not UTF-8"),
            (b'{"mcpServers": []}', "'mcpServers' is not an object"),
            (b'{"mcpServers": null}', "'mcpServers' is not an object"),
        ],
    )
    def test_unusable_file_is_refused_and_untouched(
        self, tmp_path: Path, content: bytes, reason: str
    ) -> None:
        path = tmp_path / "config.json"
        path.write_bytes(content)
        with pytest.raises(McpConfigError) as caught:
            install_json_config(path, ("mcpServers",), OURS, jsonc=False)
        assert reason in caught.value.reason
        assert caught.value.path == str(path)
        assert str(path) in str(caught.value)
        assert path.read_bytes() == content

    def test_nested_key_that_is_not_an_object(self, tmp_path: Path) -> None:
        path = tmp_path / "config.json"
        path.write_text('{"tools": {"mcp": 3}}')
        with pytest.raises(McpConfigError, match=r"'tools\.mcp' is not an object"):
            install_json_config(path, ("tools", "mcp"), OURS)

    def test_utf8_bom_is_accepted(self, tmp_path: Path) -> None:
        path = tmp_path / "config.json"
        original = b'\xef\xbb\xbf{"a": 1}'
        path.write_bytes(original)
        installation = install_json_config(path, ("mcpServers",), OURS)
        assert read_json(path)["a"] == 1
        installation.restore()
        assert path.read_bytes() == original

    def test_unreadable_path(self, tmp_path: Path) -> None:
        path = tmp_path / "config.json"
        path.mkdir()
        with pytest.raises(McpConfigError, match="cannot be read"):
            install_json_config(path, ("mcpServers",), OURS)

    def test_unwritable_location(self, tmp_path: Path) -> None:
        blocker = tmp_path / "file"
        blocker.write_text("x")
        with pytest.raises(McpConfigError):
            install_json_config(blocker / "sub" / "config.json", ("mcpServers",), OURS)
        assert blocker.read_text() == "x"

    def test_failed_write_removes_created_directories(self, tmp_path: Path) -> None:
        # A name the file system accepts but whose temporary sibling is too long to create.
        target = tmp_path / "new" / "deeper" / ("c" * 245 + ".json")
        with pytest.raises(McpConfigError, match="cannot be written"):
            install_json_config(target, ("mcpServers",), OURS)
        assert os.listdir(tmp_path) == []

    def test_entry_that_is_not_json(self, tmp_path: Path) -> None:
        with pytest.raises(McpConfigError, match="cannot be written as JSON"):
            install_json_config(tmp_path / "c.json", ("m",), {"s": {"n": float("nan")}})
        assert not (tmp_path / "c.json").exists()

    def test_empty_key_path_is_a_programming_error(self, tmp_path: Path) -> None:
        with pytest.raises(InvalidRequestError, match="key_path"):
            install_json_config(tmp_path / "c.json", (), OURS)


# --- property tests --------------------------------------------------------------------------

json_values = finite_json(texts=st.text(max_size=5), keys=st.text(max_size=4))
server_names = st.sampled_from(["agentshim-a", "agentshim-b", "user-1", "user-2"])
entries_strategy = st.dictionaries(
    server_names,
    st.dictionaries(st.sampled_from(["command", "url"]), st.text(max_size=4)),
    max_size=2,
)


@st.composite
def original_documents(draw: st.DrawFn) -> dict[str, Any]:
    document = draw(st.dictionaries(st.text(max_size=5), json_values, max_size=4))
    document.pop("mcpServers", None)
    if draw(st.booleans()):
        document["mcpServers"] = draw(
            st.dictionaries(
                server_names, st.dictionaries(st.text(max_size=3), json_values, max_size=2)
            )
        )
    return document


@st.composite
def encodings(draw: st.DrawFn, document: dict[str, Any]) -> bytes:
    text = json.dumps(
        document,
        indent=draw(st.sampled_from([None, 0, 1, 2, 4, "\t"])),
        sort_keys=draw(st.booleans()),
        ensure_ascii=draw(st.booleans()),
    )
    return (text + draw(st.sampled_from(["", "\n", "\r\n", "  \n\n"]))).encode()


mcp_settings = settings(max_examples=60)


class TestMergeRestoreProperties:
    @mcp_settings
    @given(original_documents().flatmap(encodings), entries_strategy)
    def test_untouched_file_comes_back_byte_for_byte(
        self, original: bytes, entries: dict[str, dict[str, Any]]
    ) -> None:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / ".mcp.json"
            path.write_bytes(original)
            installation = install_json_config(path, ("mcpServers",), entries)
            merged = read_json(path)
            for name, entry in entries.items():
                assert merged["mcpServers"][name] == entry
            assert installation.restore() is None
            assert path.read_bytes() == original

    @mcp_settings
    @given(entries_strategy, st.sampled_from([(".mcp.json",), (".gemini", "settings.json")]))
    def test_absent_file_stays_absent(
        self, entries: dict[str, dict[str, Any]], parts: tuple[str, ...]
    ) -> None:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory).joinpath(*parts)
            installation = install_json_config(path, ("mcpServers",), entries)
            assert path.exists()
            assert installation.restore() is None
            assert os.listdir(directory) == []

    @mcp_settings
    @given(
        st.none() | original_documents(),
        entries_strategy,
        st.text(min_size=1, max_size=5).map(lambda k: "agent:" + k),
        json_values,
    )
    def test_file_modified_in_between_keeps_only_the_agents_changes(
        self,
        original: dict[str, Any] | None,
        entries: dict[str, dict[str, Any]],
        agent_key: str,
        agent_value: Any,
    ) -> None:
        with tempfile.TemporaryDirectory() as directory:
            path = Path(directory) / ".mcp.json"
            if original is not None:
                path.write_text(json.dumps(original, indent=2))
            installation = install_json_config(path, ("mcpServers",), entries)
            during = read_json(path)
            during[agent_key] = agent_value
            path.write_text(json.dumps(during))
            installation.restore()
            assert read_json(path) == {**(original or {}), agent_key: agent_value}


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
