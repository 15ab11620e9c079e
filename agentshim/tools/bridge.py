"""The stdio MCP server a CLI starts for a turn's tools: a relay to the process running the turn.

``python bridge.py SOCKET VARIABLE`` (or ``python -m agentshim.tools.bridge SOCKET VARIABLE``)
connects to the
Unix socket ``SOCKET`` that :func:`agentshim.tools.local.serve_tools` listens on and copies
bytes both ways: the CLI's stdin to the socket, the socket to the CLI's stdout. It first sends
the turn's credential, which it reads from the environment variable VARIABLE (set by the MCP
server config the CLI starts it from; only the variable's name is in argv, never the value): the socket answers nothing
to a connection that does not begin with it. Of MCP it knows only that messages are lines:
after each write to the CLI it tells the socket, in a notification of its own
(:data:`RELAYED`, ``{"bytes": <all relayed so far>}``) put between two of the CLI's lines,
how much of what the socket sent has reached the CLI, so the turn can tell a tool list it
answered from one the CLI has. It imports only the standard library, so it runs with ``-I``
whatever the CLI's environment. It exits when either side closes.
"""

from __future__ import annotations

import json
import os
import select
import socket
import sys

__all__ = ["CREDENTIAL_VARIABLE", "RELAYED", "Relay", "main"]

CREDENTIAL_VARIABLE = "AGENTSHIM_TOOLS_CREDENTIAL"
"""How the variable that hands the bridge (and Pi's extension) the tool credential begins."""

RELAYED = "notifications/agentshim/relayed"
"""The bridge's notification to the socket: ``params.bytes`` of its answers reached the CLI."""

_CHUNK = 1 << 16


class Relay:
    """What goes to the socket: the CLI's bytes, with the RELAYED notes put between its lines.

    A note is due after each write to the CLI; one that falls due in the middle of a line of
    the CLI's waits for that line's end, so the socket always reads whole messages.
    """

    __slots__ = ("_at_line_start", "_due", "relayed")

    def __init__(self) -> None:
        self.relayed = 0
        self._due = False
        self._at_line_start = True

    def wrote_to_cli(self, count: int) -> bytes:
        """``count`` more bytes reached the CLI; what to send the socket now (maybe nothing)."""
        self.relayed += count
        self._due = True
        return self._note() if self._at_line_start else b""

    def from_cli(self, data: bytes) -> bytes:
        """What to send the socket for ``data`` read from the CLI."""
        if not data:
            return b""
        cut = data.rfind(b"\n") + 1
        self._at_line_start = data.endswith(b"\n")
        if not self._due or cut == 0:
            return data
        return data[:cut] + self._note() + data[cut:]

    def _note(self) -> bytes:
        self._due = False
        note = {"jsonrpc": "2.0", "method": RELAYED, "params": {"bytes": self.relayed}}
        return json.dumps(note, separators=(",", ":")).encode("ascii") + b"\n"


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        written = os.write(fd, view)
        view = view[written:]


def main(argv: list[str]) -> int:
    """Relay stdin and stdout to the socket ``argv[1]``, credential in ``$argv[2]``; the status."""
    if len(argv) != 3:
        sys.stderr.write("usage: bridge.py SOCKET VARIABLE\n")
        return 2
    credential = os.environ.get(argv[2], "")
    if not credential:
        sys.stderr.write(f"agentshim tools: {argv[2]} is not set\n")
        return 2
    connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        connection.connect(argv[1])
        connection.sendall(credential.encode("ascii", "replace") + b"\n")
    except OSError as error:
        sys.stderr.write(f"agentshim tools: cannot reach the turn's tool socket ({error})\n")
        return 1
    stdin, stdout = sys.stdin.fileno(), sys.stdout.fileno()
    relay = Relay()
    with connection:
        while True:
            readable, _, _ = select.select([stdin, connection], [], [])
            if stdin in readable:
                data = os.read(stdin, _CHUNK)
                if not data:
                    return 0
                connection.sendall(relay.from_cli(data))
            if connection in readable:
                data = connection.recv(_CHUNK)
                if not data:
                    return 0
                _write_all(stdout, data)
                note = relay.wrote_to_cli(len(data))
                if note:
                    connection.sendall(note)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (BrokenPipeError, ConnectionError, KeyboardInterrupt):
        sys.exit(0)
