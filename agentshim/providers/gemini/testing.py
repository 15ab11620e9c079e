"""Test helpers for the Gemini CLI provider: read back the MCP servers a turn installed."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from agentshim.execution.executor import CommandRequest
from agentshim.mcp.install import configured_servers
from agentshim.mcp.secrets import resolve_references

from .provider import MCP_CONFIG_FILE, MCP_SERVERS_KEY, REFERENCE_STYLE

__all__ = ["installed_mcp_servers"]


def _canonical(entry: dict[str, Any], env: Mapping[str, str]) -> dict[str, Any]:
    if "command" in entry:
        return {
            "command": entry.get("command"),
            "args": list(entry.get("args") or []),
            "env": resolve_references(entry.get("env") or {}, env, REFERENCE_STYLE.pattern),
        }
    if "httpUrl" in entry:
        return {"url": entry["httpUrl"], "transport": "http"}
    return {"url": entry.get("url"), "transport": entry.get("type") or "sse"}


def installed_mcp_servers(request: CommandRequest, workspace: Path) -> dict[str, dict[str, Any]]:
    """Return the servers in ``<workspace>/.gemini/settings.json``, in the canonical shape.

    Call it while the turn is in flight (from a FakeExecutor run callback): the file is
    restored when the turn ends. ``request`` gives the environment the file's references
    name.
    """
    servers = configured_servers(Path(workspace) / MCP_CONFIG_FILE, MCP_SERVERS_KEY)
    # The file names variables; the values are in the CLI's environment.
    return {name: _canonical(entry, request.env) for name, entry in servers.items()}
