"""The fake ACP agent as a process: ``python -m agentshim.testing.acp_agent``.

It speaks ACP v1 on stdin and stdout as :class:`~agentshim.testing.acp.AcpPeer` does (no
model is called), so any ACP client (agentshim's generic provider, the ACP Python SDK's
client, an editor) can be pointed at it. What a prompt gets depends on its words:

- ``TOOL``: the agent asks permission to run ``touch tool.txt``, then answers;
- ``SLOW``: the agent starts ``sleep 30`` and runs until cancelled;
- ``FAIL``: the prompt is answered with JSON-RPC error -32603;
- anything else: a one-line answer that says what it is.

``--version`` answers the health check. Sessions live as long as the process.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

from agentshim.execution.process import ProcessExited, StdoutLine

from .acp import AcpPeer, AcpPeers, AcpPeerTurn, AcpQuirks

__all__ = ["PromptedPeers", "main"]

VERSION = "agentshim fake ACP agent 1"
"""What ``--version`` prints."""


class PromptedPeers(AcpPeers):
    """Fake ACP processes whose every turn is chosen by its prompt (see the module docstring)."""

    def __init__(self) -> None:
        super().__init__((), quirks=AcpQuirks())

    def turn_for(self, prompt: str) -> AcpPeerTurn | None:
        """The turn the words of ``prompt`` ask for."""
        if "FAIL" in prompt:
            return AcpPeerTurn(error=(-32603, "Internal error: the prompt asked to fail"))
        if "SLOW" in prompt:
            return AcpPeerTurn(tool="sleep 30", hang=True)
        if "TOOL" in prompt:
            return AcpPeerTurn("the tool ran", tool="touch tool.txt", tool_kind="edit", ask=True)
        first = prompt.strip().splitlines()[0][:80] if prompt.strip() else ""
        return AcpPeerTurn(f"fake ACP agent, no model called; you said: {first}")


def main(argv: Sequence[str] | None = None) -> int:
    """Serve one fake ACP agent on stdin and stdout until stdin ends."""
    args = list(sys.argv[1:] if argv is None else argv)
    if "--version" in args:
        print(VERSION)
        return 0
    peer = AcpPeer(PromptedPeers(), ("agentshim-fake-acp", *args))
    out = sys.stdout
    for line in sys.stdin:
        for output in peer.on_stdin(line):
            if isinstance(output, ProcessExited):
                return output.returncode
            if isinstance(output, StdoutLine):
                out.write(output.text)
        out.flush()
    for output in peer.on_stdin_closed():
        if isinstance(output, ProcessExited):
            return output.returncode
    return 0


if __name__ == "__main__":
    sys.exit(main())
