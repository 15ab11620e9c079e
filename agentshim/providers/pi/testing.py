"""Test support for Pi: it takes no MCP servers, so a turn never installs any."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentshim.execution.executor import CommandRequest

__all__ = ["installed_mcp_servers"]


def installed_mcp_servers(request: CommandRequest, workspace: Path) -> dict[str, dict[str, Any]]:
    """Always empty: Pi has no MCP support, and ``PiProvider.install_mcp`` refuses servers."""
    return {}
