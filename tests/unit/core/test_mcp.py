from __future__ import annotations

import dataclasses
import pickle
from typing import Any

import pytest

from agentshim.core.errors import InvalidRequestError, ProviderCapabilityError
from agentshim.core.mcp import (
    HttpMcpServer,
    StdioMcpServer,
    canonical,
    mcp_servers_entry,
    refuse_timeouts,
    tool_timeout_ms,
)


class TestStdioMcpServer:
    def test_valid(self) -> None:
        server = StdioMcpServer(
            "files.v2",
            "npx",
            args=["-y", "@scope/server"],
            env={"TOKEN": "x"},
            startup_timeout=10,
            tool_timeout=2.5,
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
            ({"command": "cmd", "startup_timeout": 0}, "positive"),
            ({"command": "cmd", "tool_timeout": -1.0}, "positive"),
            ({"command": "cmd", "tool_timeout": float("nan")}, "positive"),
            ({"command": "cmd", "tool_timeout": True}, "positive"),
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
        a = HttpMcpServer("r", "https://h/", headers={"K": "v"}, tool_timeout=3)
        assert a == HttpMcpServer("r", "https://h/", headers={"K": "v"}, tool_timeout=3)
        assert hash(a) == hash(HttpMcpServer("r", "https://h/", headers={"K": "v"}, tool_timeout=3))
        assert pickle.loads(pickle.dumps(a)) == a


class TestCanonical:
    def test_stdio(self) -> None:
        server = StdioMcpServer("s", "npx", ["-y", "pkg"], {"K": "v"}, startup_timeout=3)
        assert canonical(server) == {"command": "npx", "args": ["-y", "pkg"], "env": {"K": "v"}}

    def test_stdio_always_has_all_three_keys(self) -> None:
        assert canonical(StdioMcpServer("s", "cmd")) == {"command": "cmd", "args": [], "env": {}}

    def test_http(self) -> None:
        server = HttpMcpServer("r", "https://h/mcp", "sse", headers={"A": "b"})
        assert canonical(server) == {"url": "https://h/mcp", "transport": "sse"}


class TestTimeoutsACliCannotSet:
    def test_a_server_without_timeouts_passes_everywhere(self) -> None:
        server = StdioMcpServer("s", "/bin/s")
        refuse_timeouts(server, "Some CLI")
        refuse_timeouts(server, "Some CLI", tool_timeout=True)
        assert tool_timeout_ms(server) is None

    def test_a_startup_timeout_is_refused_by_name(self) -> None:
        server = StdioMcpServer("s", "/bin/s", startup_timeout=5)
        with pytest.raises(ProviderCapabilityError, match=r"'s': Some CLI .*startup_timeout"):
            refuse_timeouts(server, "Some CLI", tool_timeout=True)

    def test_a_tool_timeout_is_refused_only_where_the_cli_has_none(self) -> None:
        server = HttpMcpServer("h", "https://example.com/mcp", tool_timeout=0.0004)
        refuse_timeouts(server, "Some CLI", tool_timeout=True)
        with pytest.raises(ProviderCapabilityError, match="tool_timeout unset"):
            refuse_timeouts(server, "Some CLI")
        assert tool_timeout_ms(server) == 1
        assert tool_timeout_ms(StdioMcpServer("s", "/bin/s", tool_timeout=2.5)) == 2500


def test_an_mcp_servers_entry_holds_env_and_headers_only_when_set() -> None:
    assert mcp_servers_entry(StdioMcpServer("s", "srv", ("-v",))) == {
        "command": "srv",
        "args": ["-v"],
    }
    assert mcp_servers_entry(StdioMcpServer("s", "srv", env={"K": "v"}))["env"] == {"K": "v"}
    http = HttpMcpServer("h", "https://example.com/mcp", transport="sse", headers={"A": "b"})
    assert mcp_servers_entry(http) == {
        "type": "sse",
        "url": "https://example.com/mcp",
        "headers": {"A": "b"},
    }
    assert "headers" not in mcp_servers_entry(HttpMcpServer("h", "https://example.com/mcp"))
