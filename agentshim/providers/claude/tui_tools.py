"""A conversation's Python tools on the Claude Code TUI: the tools' bridge as an MCP server.

The interactive CLI has no in-band route (``sdkMcpServers`` is the stream protocol's), so the
tools are served as every other transport serves them: a :class:`LocalToolServer` on a
private socket, its bridge handed to the CLI as a stdio MCP server in a ``--mcp-config`` file
of the transport's own (mode 0600, in the process's private directory). The file names the
bridge's credential by reference (``${VAR}``), so the credential is in the CLI's environment
only, never in argv or a file. Permissions work as for the CLI's own tools: where the
CLI asks (not with ``bypass()``) its PermissionRequest hook is answered by the conversation's
approvals, and with an approval handler the socket asks it again for every call that reaches
it, whoever calls (as on every transport that serves tools by socket).

The reader waits on one descriptor for both the hooks' FIFO and the tools' socket
(:attr:`TuiWaits.fileno`, a selector holding the two), so a tool call wakes it as a hook does.
"""

from __future__ import annotations

import contextlib
import json
import os
import selectors
from collections.abc import Mapping, Sequence
from pathlib import Path

from agentshim.core.tools import Tool
from agentshim.mcp.secrets import SecretReferences
from agentshim.tools.local import LocalToolServer, serve_tools

from .provider import TOOL_SEARCH_ENV, mcp_entry

__all__ = ["TOOLS_CONFIG_FILE", "TuiTools", "TuiWaits"]

TOOLS_CONFIG_FILE = "mcp-tools.json"
"""The ``--mcp-config`` file (in the process's private directory) naming the tools' bridge."""


def _reference(name: str) -> str:
    return "${" + name + "}"


class TuiTools:
    """The tools of one process: served on a private socket, installed by a config file.

    ``argv`` goes on the CLI's command line, ``env`` into its environment (the credential,
    and ``ENABLE_TOOL_SEARCH=false`` unless set, so the tools are offered up front);
    ``close`` stops serving. Built by :meth:`start`.
    """

    __slots__ = ("argv", "env", "env_defaults", "serving")

    def __init__(
        self,
        serving: LocalToolServer,
        argv: Sequence[str],
        env: Mapping[str, str],
    ) -> None:
        self.serving = serving
        self.argv = tuple(argv)
        self.env = dict(env)
        self.env_defaults = dict(TOOL_SEARCH_ENV)

    @classmethod
    def start(cls, tools: Sequence[Tool], directory: Path) -> TuiTools:
        """Serve ``tools`` and write the config file naming their bridge into ``directory``.

        Raises:
            ProviderCapabilityError: this process cannot start the bridge.
            OSError: the config file cannot be written (the directory is the caller's own).
        """
        serving = serve_tools(tools)
        try:
            refs = SecretReferences(_reference)
            server = serving.server
            config = {"mcpServers": {server.name: mcp_entry(server, refs)}}
            path = directory / TOOLS_CONFIG_FILE
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(json.dumps(config))
        except BaseException:
            serving.close()
            raise
        return cls(serving, ("--mcp-config", str(path)), refs.env)

    def close(self) -> None:
        """Stop serving; idempotent."""
        self.serving.close()


class TuiWaits:
    """One descriptor readable while the hooks' FIFO or the tools' socket has something.

    A selector (epoll, kqueue) is itself readable while one of its descriptors is, so the
    terminal's reader waits on it as on one more descriptor.
    """

    __slots__ = ("_selector",)

    def __init__(self, fds: Sequence[int]) -> None:
        self._selector = selectors.DefaultSelector()
        try:
            for fd in fds:
                self._selector.register(fd, selectors.EVENT_READ)
        except BaseException:
            self._selector.close()
            raise

    def fileno(self) -> int:
        """The descriptor to wait on."""
        return self._selector.fileno()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]

    def close(self) -> None:
        """Release the selector (not the descriptors it holds); idempotent."""
        with contextlib.suppress(OSError):
            self._selector.close()
