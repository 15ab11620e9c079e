"""Test helpers for the Claude provider: read back the MCP servers a turn installed."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentshim.core.jsonvalues import as_mapping, as_str, list_or_empty
from agentshim.execution.executor import CommandRequest
from agentshim.mcp.secrets import resolve_references

from .provider import MCP_CONFIG_FILE, MCP_SERVERS_KEY, REFERENCE_STYLE

__all__ = ["installed_mcp_servers"]


def installed_mcp_servers(request: CommandRequest, workspace: Path) -> dict[str, dict[str, Any]]:
    """Return the servers in ``<workspace>/.mcp.json`` in the canonical shape, keyed by name.

    A stdio server is ``{"command", "args", "env"}``, an HTTP one ``{"url", "transport"}``.
    Call it while the turn is in flight (inside a FakeExecutor run callback): the file is
    restored when the turn ends. ``request`` gives the environment the file's references name
    (Claude Code takes its servers from the file, not from argv). A missing file means no
    servers.
    """
    path = Path(workspace) / MCP_CONFIG_FILE
    try:
        document: Any = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    servers = as_mapping((as_mapping(document) or {}).get(MCP_SERVERS_KEY)) or {}
    found: dict[str, dict[str, Any]] = {}
    for name, raw in servers.items():
        entry = as_mapping(raw) or {}
        command = as_str(entry.get("command"))
        if command is not None:
            env = as_mapping(entry.get("env")) or {}
            found[name] = {
                "command": command,
                "args": [str(arg) for arg in list_or_empty(entry.get("args"))],
                # The file names variables; the values are in the CLI's environment.
                "env": resolve_references(env, request.env, REFERENCE_STYLE.pattern),
            }
        else:
            found[name] = {
                "url": as_str(entry.get("url")) or "",
                "transport": as_str(entry.get("type")) or "http",
            }
    return found
