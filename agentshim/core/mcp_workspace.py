"""MCP servers kept in a JSON config file inside the turn's workspace.

For CLIs that read their MCP servers from a project file (such as ``.gemini/settings.json``
or ``opencode.json``): where that file is, and which servers it holds.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from agentshim.core.errors import McpConfigError
from agentshim.core.jsonvalues import as_mapping

__all__ = ["configured_servers", "workspace_config_file"]


def workspace_config_file(workspace: Path | str | None, relative: str) -> Path:
    """Return the config file ``relative`` inside ``workspace``.

    Raises:
        McpConfigError: there is no workspace to put the file in.
    """
    if workspace is None:
        raise McpConfigError(
            relative, "no workspace directory was given; pass mcp_workspace or a cwd for the turn"
        )
    return Path(workspace) / relative


def configured_servers(path: Path, key: str) -> dict[str, dict[str, Any]]:
    """Return the object entries under ``key`` in the JSON file at ``path``, keyed by name.

    A missing file, a document that is not an object and a ``key`` that holds no object all
    mean no servers; an entry that is not an object is left out.

    Raises:
        OSError: the file exists but cannot be read.
        ValueError: the file is not JSON.
    """
    try:
        document: object = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    servers = as_mapping((as_mapping(document) or {}).get(key)) or {}
    return {str(name): entry for name, entry in servers.items() if isinstance(entry, dict)}
