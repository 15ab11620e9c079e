"""Python functions as tools for every CLI: declare them, and agentshim serves them over MCP.

``tool`` makes a :class:`Tool` from a typed function; pass tools on ``TurnRequest.tools``
or ``ConversationSpec.tools``. :func:`serve_tools` is the reusable piece a transport calls to
serve them as a local MCP server (an ``McpServer`` value to install and a handle to drive);
:class:`ToolHost` answers MCP messages in process. See ``docs/tools.md``.
"""

from __future__ import annotations

from agentshim.core.tools import DEFAULT_TOOL_TIMEOUT, TOOL_SERVER_NAME, Tool, tool

from .host import ToolHost
from .local import LocalToolServer, serve_tools

__all__ = [
    "DEFAULT_TOOL_TIMEOUT",
    "TOOL_SERVER_NAME",
    "LocalToolServer",
    "Tool",
    "ToolHost",
    "serve_tools",
    "tool",
]
