"""Test helpers for the opencode provider: read back the MCP servers a turn installed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

from agentshim.execution.executor import CommandRequest
from agentshim.mcp.install import configured_servers
from agentshim.mcp.secrets import resolve_references

from .provider import MCP_CONFIG_FILE, MCP_SERVERS_KEY, REFERENCE_STYLE

__all__ = ["installed_mcp_servers"]


def _canonical(entry: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    if entry.get("type") == "local":
        command: object = entry.get("command")
        parts = [str(p) for p in cast("list[object]", command)] if isinstance(command, list) else []
        return {
            "command": parts[0] if parts else "",
            "args": parts[1:],
            "env": resolve_references(entry.get("environment") or {}, env, REFERENCE_STYLE.pattern),
        }
    # opencode chooses the HTTP transport itself (streamable HTTP, then SSE).
    return {"url": entry.get("url"), "transport": "http"}


def installed_mcp_servers(request: CommandRequest, workspace: Path) -> dict[str, dict[str, Any]]:
    """Return the servers in ``<workspace>/opencode.json``, in the canonical shape.

    Call it while the turn is in flight (from a FakeExecutor run callback): the file is
    restored when the turn ends. A remote server always reads back with transport ``"http"``:
    the file does not say which transport opencode will use. ``request`` gives the
    environment the file's references name.
    """
    servers = configured_servers(Path(workspace) / MCP_CONFIG_FILE, MCP_SERVERS_KEY)
    # The file names variables; the values are in the CLI's environment.
    return {name: _canonical(entry, request.env) for name, entry in servers.items()}
