"""Test helpers for the Gemini CLI provider: read back the MCP servers a turn installed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentshim.core.mcp_config import configured_servers
from agentshim.execution.executor import CommandRequest

from .provider import MCP_CONFIG_FILE, MCP_SERVERS_KEY

__all__ = ["installed_mcp_servers"]


def _canonical(entry: dict[str, Any]) -> dict[str, Any]:
    if "command" in entry:
        return {
            "command": entry.get("command"),
            "args": list(entry.get("args") or []),
            "env": dict(entry.get("env") or {}),
        }
    if "httpUrl" in entry:
        return {"url": entry["httpUrl"], "transport": "http"}
    return {"url": entry.get("url"), "transport": entry.get("type") or "sse"}


def installed_mcp_servers(request: CommandRequest, workspace: Path) -> dict[str, dict[str, Any]]:
    """Return the servers in ``<workspace>/.gemini/settings.json``, in the canonical shape.

    Call it while the turn is in flight (from a FakeExecutor run callback): the file is
    restored when the turn ends. ``request`` is not needed: the servers are in the file.
    """
    del request
    servers = configured_servers(Path(workspace) / MCP_CONFIG_FILE, MCP_SERVERS_KEY)
    return {name: _canonical(entry) for name, entry in servers.items()}
