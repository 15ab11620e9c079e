"""A minimal stdio MCP server (one tool, ``ping``) for the live MCP scenario.

Started by a CLI from the MCP config agentshim installs. It writes a marker file (its first
argument) when it starts, so a test can tell the CLI really launched it, and then answers
newline-delimited JSON-RPC: ``initialize``, ``tools/list``, ``tools/call`` and ``ping``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

_TOOL = {
    "name": "ping",
    "description": "Answer pong.",
    "inputSchema": {"type": "object", "properties": {}, "additionalProperties": False},
}


def _answer(message: dict[str, Any]) -> dict[str, Any] | None:
    method = message.get("method")
    if "id" not in message:
        return None
    result: dict[str, Any]
    if method == "initialize":
        params = message.get("params") or {}
        result = {
            "protocolVersion": params.get("protocolVersion", "2025-06-18"),
            "capabilities": {"tools": {"listChanged": False}},
            "serverInfo": {"name": "agentshim-live-stub", "version": "1.0.0"},
        }
    elif method == "tools/list":
        result = {"tools": [_TOOL]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "pong"}], "isError": False}
    elif method == "ping":
        result = {}
    else:
        return {
            "jsonrpc": "2.0",
            "id": message["id"],
            "error": {"code": -32601, "message": f"method not found: {method}"},
        }
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def main() -> None:
    if len(sys.argv) > 1:
        Path(sys.argv[1]).write_text("started\n", encoding="utf-8")
    for line in sys.stdin:
        try:
            message = json.loads(line)
        except ValueError:
            continue
        if not isinstance(message, dict):
            continue
        reply = _answer(message)
        if reply is not None:
            sys.stdout.write(json.dumps(reply) + "\n")
            sys.stdout.flush()


if __name__ == "__main__":
    main()
