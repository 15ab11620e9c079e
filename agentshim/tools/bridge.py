"""The stdio MCP server a CLI starts for a turn's tools: a relay to the process running the turn.

``python bridge.py SOCKET VARIABLE`` (or ``python -m agentshim.tools.bridge SOCKET VARIABLE``)
connects to the
Unix socket ``SOCKET`` that :func:`agentshim.tools.local.serve_tools` listens on and copies
bytes both ways: the CLI's stdin to the socket, the socket to the CLI's stdout. It first sends
the turn's credential, which it reads from the environment variable VARIABLE (set by the MCP
server config the CLI starts it from; only the variable's name is in argv, never the value): the socket answers nothing
to a connection that does not begin with it. It knows nothing of MCP and imports only the
standard library, so it runs with ``-I`` whatever the CLI's environment. It exits when either
side closes.
"""

from __future__ import annotations

import os
import select
import socket
import sys

__all__ = ["CREDENTIAL_VARIABLE", "main"]

CREDENTIAL_VARIABLE = "AGENTSHIM_TOOLS_CREDENTIAL"
"""How the variable that hands the bridge (and Pi's extension) the tool credential begins."""

_CHUNK = 1 << 16


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
    with connection:
        while True:
            readable, _, _ = select.select([stdin, connection], [], [])
            if stdin in readable:
                data = os.read(stdin, _CHUNK)
                if not data:
                    return 0
                connection.sendall(data)
            if connection in readable:
                data = connection.recv(_CHUNK)
                if not data:
                    return 0
                _write_all(stdout, data)


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv))
    except (BrokenPipeError, ConnectionError, KeyboardInterrupt):
        sys.exit(0)
