from __future__ import annotations

import dataclasses
import json
import os
import pickle
import stat
import tempfile
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentshim.core.errors import InvalidRequestError, McpConfigError
from agentshim.core.mcp import (
    ConfigFileInstallation,
    HttpMcpServer,
    StdioMcpServer,
    canonical,
    install_json_config,
)
from agentshim.core.provider import McpInstallation

OURS = {"agentshim-tools": {"command": "/usr/bin/tool", "args": ["--stdio"]}}


class TestStdioMcpServer:
    def test_valid(self) -> None:
        server = StdioMcpServer(
            "files.v2",
            "npx",
            args=["-y", "@scope/server"],
            env={"TOKEN": "x"},
            startup_timeout_s=10,
            tool_timeout_s=2.5,
        )
        assert server.args == ("-y", "@scope/server")
        assert dict(server.env) == {"TOKEN": "x"}
        assert StdioMcpServer("abs", "/opt/bin/server").command == "/opt/bin/server"

    @pytest.mark.parametrize("name", ["", "a" * 65, "has space", "a/b", "ü", "x\n"])
    def test_bad_names(self, name: str) -> None:
        with pytest.raises(InvalidRequestError, match="invalid MCP server name") as caught:
            StdioMcpServer(name, "cmd")
        assert caught.value.field == "StdioMcpServer.name"

    def test_name_of_64_characters_is_fine(self) -> None:
        assert StdioMcpServer("a" * 64, "cmd").name == "a" * 64

    @pytest.mark.parametrize("command", ["bin/server", "./server", "../x/server", "~/bin/s"])
    def test_relative_command_with_slash_is_refused(self, command: str) -> None:
        with pytest.raises(ValueError, match="relative path"):
            StdioMcpServer("s", command)

    @pytest.mark.parametrize(
        ("kwargs", "message"),
        [
            ({"command": ""}, "empty command"),
            ({"command": "  "}, "empty command"),
            ({"command": "a\0b"}, "NUL"),
            ({"command": "cmd", "args": "--one-string"}, "not one string"),
            ({"command": "cmd", "args": ["ok", "bad\0"]}, "NUL"),
            ({"command": "cmd", "args": [3]}, "string"),
            ({"command": "cmd", "env": {"A=B": "x"}}, "env name"),
            ({"command": "cmd", "env": {"": "x"}}, "env name"),
            ({"command": "cmd", "env": {"A": 1}}, "string"),
            ({"command": "cmd", "startup_timeout_s": 0}, "positive"),
            ({"command": "cmd", "tool_timeout_s": -1.0}, "positive"),
            ({"command": "cmd", "tool_timeout_s": float("nan")}, "positive"),
            ({"command": "cmd", "tool_timeout_s": True}, "positive"),
        ],
    )
    def test_invalid_values(self, kwargs: dict[str, Any], message: str) -> None:
        with pytest.raises(InvalidRequestError, match=message) as caught:
            StdioMcpServer("s", **kwargs)
        # The field is the one argument given besides the command (or the command itself).
        named = [k for k in kwargs if k != "command"] or ["command"]
        assert caught.value.field == f"StdioMcpServer.{named[0]}"

    def test_frozen_and_env_copied_and_read_only(self) -> None:
        env = {"A": "1"}
        server = StdioMcpServer("s", "cmd", env=env)
        env["A"] = "changed"
        assert server.env["A"] == "1"
        with pytest.raises(TypeError):
            server.env["B"] = "2"  # type: ignore[index]
        with pytest.raises(dataclasses.FrozenInstanceError):
            server.command = "other"  # type: ignore[misc]

    def test_equality_hash_and_pickle(self) -> None:
        a = StdioMcpServer("s", "cmd", ["x"], {"A": "1"}, 5.0)
        b = StdioMcpServer("s", "cmd", ("x",), {"A": "1"}, 5.0)
        assert a == b
        assert hash(a) == hash(b)
        assert len({a, b}) == 1
        assert a != StdioMcpServer("s", "cmd", ["x"], {"A": "2"}, 5.0)
        assert pickle.loads(pickle.dumps(a)) == a


class TestHttpMcpServer:
    def test_valid(self) -> None:
        server = HttpMcpServer(
            "remote", "https://mcp.example.com/v1", "sse", headers={"Authorization": "Bearer t"}
        )
        assert server.transport == "sse"
        assert dict(server.headers) == {"Authorization": "Bearer t"}
        assert HttpMcpServer("local", "http://127.0.0.1:8080/mcp").transport == "http"

    @pytest.mark.parametrize(
        "url",
        [
            "ftp://host/x",
            "https://",
            "example.com/mcp",
            "https://ho st/",
            "",
            "file:///x",
            "http://[::1",
        ],
    )
    def test_bad_urls(self, url: str) -> None:
        with pytest.raises(InvalidRequestError, match="url") as caught:
            HttpMcpServer("r", url)
        assert caught.value.field == "HttpMcpServer.url"

    def test_bad_transport(self) -> None:
        with pytest.raises(ValueError, match="transport"):
            HttpMcpServer("r", "https://h/", "ws")  # type: ignore[arg-type]

    @pytest.mark.parametrize(
        ("headers", "message"),
        [({"Bad Name": "x"}, "header name"), ({"X-Token": "a\r\nInjected: 1"}, "line break")],
    )
    def test_bad_headers(self, headers: dict[str, str], message: str) -> None:
        with pytest.raises(ValueError, match=message):
            HttpMcpServer("r", "https://h/", headers=headers)

    def test_equality_hash_and_pickle(self) -> None:
        a = HttpMcpServer("r", "https://h/", headers={"K": "v"}, tool_timeout_s=3)
        assert a == HttpMcpServer("r", "https://h/", headers={"K": "v"}, tool_timeout_s=3)
        assert hash(a) == hash(
            HttpMcpServer("r", "https://h/", headers={"K": "v"}, tool_timeout_s=3)
        )
        assert pickle.loads(pickle.dumps(a)) == a


class TestCanonical:
    def test_stdio(self) -> None:
        server = StdioMcpServer("s", "npx", ["-y", "pkg"], {"K": "v"}, startup_timeout_s=3)
        assert canonical(server) == {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}}

    def test_stdio_always_has_all_three_keys(self) -> None:
        assert canonical(StdioMcpServer("s", "cmd")) == {"command": "cmd", "args": [], "env": {}}

    def test_http(self) -> None:
        server = HttpMcpServer("r", "https://h/mcp", "sse", headers={"A": "b"})
        assert canonical(server) == {"url": "https://h/mcp", "transport": "sse"}


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

    def test_a_linked_file_is_merged_through_the_link_and_the_link_survives(
        self, tmp_path: Path
    ) -> None:
        target = tmp_path / "shared.json"
        target.write_bytes(self.ORIGINAL)
        path = tmp_path / ".mcp.json"
        path.symlink_to(target)
        installation = install_json_config(path, ("mcpServers",), OURS)
        assert "agentshim-tools" in read_json(path)["mcpServers"]
        assert installation.restore() is None
        assert path.is_symlink()
        assert os.readlink(path) == str(target)
        assert target.read_bytes() == self.ORIGINAL

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
            install_json_config(path, ("mcpServers",), OURS)
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

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=5)
)
json_values = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=4), children, max_size=3)
    ),
    max_leaves=10,
)
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


mcp_settings = settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)


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
