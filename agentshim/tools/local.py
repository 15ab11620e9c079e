"""A turn's tools served to any CLI as a local stdio MCP server, with no thread of its own.

:func:`serve_tools` makes the one value a provider needs, a :class:`StdioMcpServer` (the
bridge, :mod:`agentshim.tools.bridge`, started by the CLI), and the handle that serves it, a
:class:`LocalToolServer`. The bridge relays the CLI's MCP messages over a Unix socket in a
fresh directory only this user can enter (mode 0700). Each handle has a random credential,
handed to the bridge in the MCP server's ``env`` (a variable whose name starts with
``AGENTSHIM_TOOLS_CREDENTIAL_``) (which every route keeps out of argv and out
of files others can read): a connection that does not begin with it is refused before any
message is read, and the refusal is reported. The handle does no I/O by itself: whoever drives the turn waits on
:meth:`LocalToolServer.fileno` next to the CLI's output and calls
:meth:`LocalToolServer.ready` when it is readable (or every so often), so each tool call
runs on the turn's own thread. ``close`` removes the socket and its directory.
"""

from __future__ import annotations

import contextlib
import hmac
import json
import os
import secrets
import selectors
import shutil
import socket
import sys
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, cast, runtime_checkable

from agentshim.core import lifecycle_kinds as lk
from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.events import AgentEvent, Emit, Lifecycle
from agentshim.core.mcp import McpServer, StdioMcpServer
from agentshim.core.provider import McpInstallation, mcp_env, mcp_env_defaults
from agentshim.core.tools import TOOL_SERVER_NAME, Tool
from agentshim.execution.host import HostCommandExecutor

from .bridge import CREDENTIAL_VARIABLE, RELAYED
from .host import Approve, ToolHost

__all__ = [
    "BRIDGE",
    "CREDENTIAL_VARIABLE",
    "InstallsTools",
    "LocalToolServer",
    "is_tools_bridge",
    "refuse_remote_executor",
    "serve_tools",
    "with_tools",
]

BRIDGE = Path(__file__).with_name("bridge.py")
"""The relay script the CLI runs as the tools' MCP server."""

# A message longer than this is not a tool call: the connection is dropped, the turn goes on.
_MAX_MESSAGE = 32 << 20
_CHUNK = 1 << 16
# The credential line is 65 bytes; a longer first line is not one.
_MAX_CREDENTIAL_LINE = 256
# A reply is written whole; the bridge reads continuously, so only a dead one takes this long.
_SEND_TIMEOUT = 10.0


def _ignore(event: AgentEvent) -> None:
    del event


class _Connection:
    __slots__ = ("admitted", "buffer", "listing_end", "relayed", "sent", "sock")

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.buffer = bytearray()
        # False until the first line, the credential, has been checked.
        self.admitted = False
        # Bytes of answers sent, and how many of them the bridge says reached the CLI.
        self.sent = 0
        self.relayed = 0
        # Where the first tool list sent on this connection ends in ``sent``.
        self.listing_end: int | None = None


class LocalToolServer:
    """Serves one set of tools on a private Unix socket; see the module docstring.

    ``server`` is the MCP server to install for the CLI, ``host`` what answers its messages.
    Not thread-safe: one thread (the turn's) calls ``ready``; ``close`` is idempotent.
    """

    __slots__ = (
        "_credential",
        "_delivered",
        "_directory",
        "_listener",
        "_selector",
        "_variable",
        "host",
        "server",
    )

    def __init__(self, host: ToolHost, *, python: str = sys.executable) -> None:
        if not python or not os.path.isabs(python):
            raise ProviderCapabilityError(
                "agentshim cannot tell which Python runs it (sys.executable is empty), so it "
                "cannot start the tools' MCP bridge; run it with a Python interpreter on disk"
            )
        self.host = host
        self._delivered = False
        self._credential = secrets.token_hex(32)
        # Random per server: a variable an outer turn left in the environment never collides
        # (Codex forwards a server's variable under its own name and refuses a clash).
        self._variable = f"{CREDENTIAL_VARIABLE}_{secrets.token_hex(4).upper()}"
        self._directory = tempfile.mkdtemp(prefix="agentshim-tools-")  # mode 0700
        path = self.socket_path
        self._selector = selectors.DefaultSelector()
        self._listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            if not hasattr(self._selector, "fileno"):
                raise ProviderCapabilityError(
                    "this platform's selector cannot be waited on, so tools cannot be served "
                    "without a thread; tools need Linux or macOS"
                )
            self._listener.bind(path)
            self._listener.listen(8)
            self._listener.setblocking(False)
            self._selector.register(self._listener, selectors.EVENT_READ, None)
        except BaseException:
            self.close()
            raise
        self.server = StdioMcpServer(
            host.server_name,
            python,
            ("-I", str(BRIDGE), path, self._variable),
            env=self.credential_env,
        )

    @property
    def directory(self) -> str:
        """The private directory (mode 0700) that holds the socket; removed by ``close``."""
        return self._directory

    @property
    def socket_path(self) -> str:
        """The Unix socket a client of the tools connects to."""
        return os.path.join(self._directory, "s")

    @property
    def credential_env(self) -> Mapping[str, str]:
        """The variable a client of the socket needs: the bridge's and Pi's extension's env.

        Never put it in argv or in a file others can read: whoever holds it can call the
        tools (still asked through the approvals the host has, and reported).
        """
        return {self._variable: self._credential}

    @property
    def listing_delivered(self) -> bool:
        """Whether a tool list this server answered has reached a CLI, as its bridge reports.

        ``host.listed`` turns true when the answer leaves here; the CLI has the tools only once
        the bridge has written it to the CLI, which the bridge then says (``RELAYED``). A client
        that is not the bridge (Pi's extension) never says it, so this stays False for it.
        """
        return self._delivered

    def fileno(self) -> int:
        """A descriptor that is readable while a connection or a message waits to be served."""
        return self._selector.fileno()  # pyright: ignore[reportAttributeAccessIssue, reportUnknownMemberType, reportUnknownVariableType]

    def ready(self) -> bool:
        """Serve, on this thread, whatever is waiting now (never blocks on the CLI).

        Returns whether anything was served. A broken connection or a malformed message
        costs only itself.
        """
        served = False
        for key, _ in self._selector.select(0):
            served = True
            if key.data is None:
                self._accept()
            else:
                self._read(key.data)
        return served

    def _accept(self) -> None:
        try:
            sock, _ = self._listener.accept()
        except OSError:
            return
        sock.setblocking(True)
        sock.settimeout(_SEND_TIMEOUT)
        self._selector.register(sock, selectors.EVENT_READ, _Connection(sock))

    def _read(self, connection: _Connection) -> None:
        try:
            data = connection.sock.recv(_CHUNK)
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            data = b""
        if not data:
            self._drop(connection)
            return
        connection.buffer += data
        while True:
            end = connection.buffer.find(b"\n")
            if end < 0:
                break
            line = bytes(connection.buffer[:end])
            del connection.buffer[: end + 1]
            if not connection.admitted:
                if not self._admit(connection, line):
                    return
                continue
            if not self._serve_line(connection, line):
                return
        if not connection.admitted and len(connection.buffer) > _MAX_CREDENTIAL_LINE:
            self._admit(connection, b"")
        elif len(connection.buffer) > _MAX_MESSAGE:
            self._host_note(f"a message of over {_MAX_MESSAGE} bytes; the connection was dropped")
            self._drop(connection)

    def _admit(self, connection: _Connection, line: bytes) -> bool:
        expected = self._credential.encode("ascii")
        if hmac.compare_digest(line.strip(), expected):
            connection.admitted = True
            return True
        self.host.emit(
            Lifecycle(
                lk.TOOL_CONNECTION_REFUSED,
                "a connection to the tools' socket did not present the turn's credential; "
                "it was closed unanswered",
            )
        )
        self._drop(connection)
        return False

    def _serve_line(self, connection: _Connection, line: bytes) -> bool:
        if not line.strip():
            return True
        listings = self.host.listings
        try:
            message: Any = json.loads(line)
        except (ValueError, RecursionError):
            answer: Any = {
                "jsonrpc": "2.0",
                "id": None,
                "error": {"code": -32700, "message": "not JSON"},
            }
        else:
            if _is_relayed(message):
                self._on_relayed(connection, cast("Mapping[str, Any]", message))
                return True
            answer = self.host.answer(message)
        if answer is None:
            return True
        payload = json.dumps(answer, ensure_ascii=False, separators=(",", ":")) + "\n"
        data = payload.encode("utf-8", "replace")
        try:
            connection.sock.sendall(data)
        except OSError:
            self._drop(connection)
            return False
        connection.sent += len(data)
        if connection.listing_end is None and self.host.listings > listings:
            connection.listing_end = connection.sent
        return True

    def _on_relayed(self, connection: _Connection, note: Mapping[str, Any]) -> None:
        params = note.get("params")
        count = (
            cast("Mapping[str, Any]", params).get("bytes") if isinstance(params, Mapping) else None
        )
        if isinstance(count, int) and not isinstance(count, bool):
            connection.relayed = max(connection.relayed, count)
        end = connection.listing_end
        if end is not None and connection.relayed >= end:
            self._delivered = True

    def _host_note(self, text: str) -> None:
        self.host.emit(Lifecycle(lk.TOOL_MESSAGE_DROPPED, text))

    def _drop(self, connection: _Connection) -> None:
        with contextlib.suppress(KeyError, ValueError):
            self._selector.unregister(connection.sock)
        with contextlib.suppress(OSError):
            connection.sock.close()

    def close(self) -> None:
        """Close every connection and the socket, and remove its directory."""
        selector = self._selector
        # None once the selector is closed, whatever its annotation says.
        registered = cast("Mapping[Any, selectors.SelectorKey] | None", selector.get_map())
        for key in list(registered.values()) if registered is not None else []:
            if isinstance(key.data, _Connection):
                self._drop(key.data)
        with contextlib.suppress(OSError):
            self._listener.close()
        with contextlib.suppress(OSError):
            selector.close()
        shutil.rmtree(self._directory, ignore_errors=True)

    def __enter__(self) -> LocalToolServer:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


def is_tools_bridge(server: McpServer) -> bool:
    """Whether ``server`` is a turn's tools bridge (:attr:`LocalToolServer.server`).

    The bridge asks the caller's approvals itself before a Python tool runs, so a CLI that
    would ask again for an MCP tool is told to let the bridge's tools through.
    """
    return isinstance(server, StdioMcpServer) and server.args[1:2] == (str(BRIDGE),)


def refuse_remote_executor(executor: object) -> None:
    """Refuse to serve tools to a CLI that ``executor`` runs somewhere else than this machine.

    Raises:
        ProviderCapabilityError: ``executor`` is not a HostCommandExecutor; the bridge it
            would start could not reach this process's socket.
    """
    if not isinstance(executor, HostCommandExecutor):
        raise ProviderCapabilityError(
            "tools are served to a CLI running on this machine (HostCommandExecutor); "
            f"{type(executor).__name__} runs it elsewhere, where the tools' bridge cannot "
            "reach this process; drop tools or run the CLI on the host"
        )


def _is_relayed(message: object) -> bool:
    """Whether ``message`` is the bridge's own note (:data:`RELAYED`), not the CLI's."""
    return (
        isinstance(message, Mapping)
        and cast("Mapping[str, Any]", message).get("method") == RELAYED
        and "id" not in message
    )


def serve_tools(
    tools: Sequence[Tool],
    *,
    server_name: str = TOOL_SERVER_NAME,
    emit: Emit = _ignore,
    approve: Approve | None = None,
) -> LocalToolServer:
    """Serve ``tools`` as a local MCP server: install ``.server``, drive ``.ready``, ``close``.

    ``emit`` gets every call's events; ``approve``, when given, decides each call first
    (see :class:`~agentshim.tools.host.ToolHost`).

    Raises:
        ProviderCapabilityError: this process cannot start the bridge (no interpreter path)
            or wait on the socket without a thread.
    """
    return LocalToolServer(
        ToolHost(tools, server_name=server_name, emit=emit, approve=approve, report_calls=True)
    )


@runtime_checkable
class InstallsTools(Protocol):
    """A provider whose CLI takes tools some way other than an MCP server (Pi's extensions)."""

    def install_tools(self, serving: LocalToolServer) -> McpInstallation:
        """Give the next turn ``serving``'s tools; undone by the installation's ``restore``."""
        ...


@dataclass(frozen=True, slots=True)
class _WithTools:
    inner: McpInstallation
    tools: McpInstallation

    @property
    def argv(self) -> Sequence[str]:
        return (*self.inner.argv, *self.tools.argv)

    @property
    def env(self) -> Mapping[str, str]:
        return {**mcp_env(self.inner), **mcp_env(self.tools)}

    @property
    def env_defaults(self) -> Mapping[str, str]:
        return {**mcp_env_defaults(self.tools), **mcp_env_defaults(self.inner)}

    def restore(self) -> str | None:
        notes = [note for note in (self.inner.restore(), self.tools.restore()) if note]
        return "; ".join(notes) or None


def with_tools(inner: McpInstallation, tools: McpInstallation) -> McpInstallation:
    """One installation of both: ``inner``'s flags then ``tools``', both restored."""
    return _WithTools(inner, tools)
