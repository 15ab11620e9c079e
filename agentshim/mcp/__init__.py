"""Installing MCP servers into a provider's config file, and putting the file back.

:mod:`~agentshim.mcp.jsonc` reads and writes the (JSON with comments) documents,
:mod:`~agentshim.mcp.install` merges a turn's servers in under a journal,
:mod:`~agentshim.mcp.restore` puts the file back at the end of the turn,
:mod:`~agentshim.mcp.recover` undoes the installs of turns whose process died,
:mod:`~agentshim.mcp.journal` keeps the on-disk record of what was changed, and
:mod:`~agentshim.mcp.secrets` keeps secrets out of the file. The server values themselves
(``StdioMcpServer``, ``HttpMcpServer``) are in :mod:`agentshim.core.mcp`.
"""

from __future__ import annotations
