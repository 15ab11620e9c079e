"""Test support for Copilot CLI: reading back the MCP servers a turn passed on its argv."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentshim.core.mcp import canonical
from agentshim.execution.executor import CommandRequest

from .provider import parse_mcp_servers

__all__ = ["installed_mcp_servers"]


def installed_mcp_servers(request: CommandRequest, workspace: Path) -> dict[str, dict[str, Any]]:
    """The MCP servers one turn installed, by name, in canonical shape.

    Copilot takes its servers as ``--additional-mcp-config`` flags, so they are parsed back
    out of the request's argv; ``workspace`` is not consulted (nothing is written there).
    """
    return {name: canonical(server) for name, server in parse_mcp_servers(request.argv).items()}
