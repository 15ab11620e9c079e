"""Test helpers for Codex: read back what a turn's argv configured."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentshim.core.mcp import canonical
from agentshim.execution.executor import CommandRequest

from .provider import parse_mcp_servers

__all__ = ["installed_mcp_servers"]


def installed_mcp_servers(request: CommandRequest, workspace: Path) -> dict[str, dict[str, Any]]:
    """Return the MCP servers ``request`` passes to Codex, by name, in the canonical shape.

    Codex takes its servers as ``--config`` flags, so they are read from ``request.argv``;
    ``workspace`` is not consulted.
    """
    servers = parse_mcp_servers(request.argv, request.env)
    return {name: canonical(server) for name, server in servers.items()}
