"""Test support for the JSONL provider: a harness takes no MCP servers from agentshim."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentshim.execution.executor import CommandRequest

__all__ = ["installed_mcp_servers"]


def installed_mcp_servers(request: CommandRequest, workspace: Path) -> dict[str, dict[str, Any]]:
    """Always empty: ``JsonlProvider.install_mcp`` refuses servers."""
    return {}
