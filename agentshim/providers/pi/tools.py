"""A turn's tools for Pi, which has no MCP client: a generated extension that relays each call.

Pi loads extensions with ``-e <file>`` (TypeScript, run without compiling) and an extension
registers tools with ``pi.registerTool({name, label, description, parameters, execute})``;
``parameters`` may be a plain JSON Schema, and a tool whose ``execute`` throws ends with
``isError``. The extension written here registers each tool as ``agentshim_<name>`` and, for
each call, opens the turn's tool socket (:mod:`agentshim.tools.local`) and sends one MCP
``tools/call``, after the turn's credential, which it reads from Pi's environment (the
installation's ``env``, never the file or argv); the process running the turn answers it on
its own thread, exactly as it answers the bridge of every other CLI. The file lives in the
socket's private directory and goes with it.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from agentshim.core.tools import TOOL_SERVER_NAME
from agentshim.tools.local import LocalToolServer

__all__ = ["TOOL_PREFIX", "ToolExtension", "tool_extension"]

TOOL_PREFIX = f"{TOOL_SERVER_NAME}_"
"""What Pi's name of each tool starts with (``agentshim_lookup`` for ``lookup``)."""

_EXTENSION = """\
// Written by agentshim for one turn: relays each tool call to the process running the turn.
import { createConnection } from "node:net";

const SOCKET = %(socket)s;
const PREFIX = %(prefix)s;
const TOOLS = %(tools)s;
const CREDENTIAL = process.env[%(credential_variable)s] ?? "";
let nextId = 0;

function callTool(name, args, signal) {
  return new Promise((resolve, reject) => {
    const id = ++nextId;
    const sock = createConnection(SOCKET);
    let buffered = "";
    sock.setEncoding("utf8");
    sock.on("connect", () => {
      const params = { name, arguments: args ?? {} };
      sock.write(CREDENTIAL + "\\n");
      sock.write(JSON.stringify({ jsonrpc: "2.0", id, method: "tools/call", params }) + "\\n");
    });
    sock.on("data", (chunk) => {
      buffered += chunk;
      const end = buffered.indexOf("\\n");
      if (end < 0) return;
      sock.end();
      try {
        const message = JSON.parse(buffered.slice(0, end));
        if (message.error) reject(new Error(message.error.message));
        else resolve(message.result);
      } catch (error) {
        reject(error);
      }
    });
    sock.on("error", reject);
    sock.on("close", () => reject(new Error("the tool's answer never came")));
    if (signal) signal.addEventListener("abort", () => sock.destroy(new Error("aborted")));
  });
}

export default function (pi) {
  for (const tool of TOOLS) {
    pi.registerTool({
      name: PREFIX + tool.name,
      label: tool.name,
      description: tool.description,
      parameters: tool.inputSchema,
      async execute(toolCallId, params, signal) {
        const result = await callTool(tool.name, params, signal);
        const text = (result.content ?? []).map((part) => part.text ?? "").join("");
        if (result.isError) throw new Error(text);
        return { content: [{ type: "text", text }], details: {} };
      },
    });
  }
}
"""


@dataclass(frozen=True, slots=True)
class ToolExtension:
    """The installation of a turn's tools into Pi: ``-e <extension>``; nothing to restore.

    ``env`` hands Pi (and so the extension) the tools' credential. The extension file is
    removed with the serving handle's directory.
    """

    path: str
    credential_env: Mapping[str, str]

    @property
    def argv(self) -> Sequence[str]:
        """The flag that loads the extension."""
        return ("-e", self.path)

    @property
    def env(self) -> Mapping[str, str]:
        """The tools' credential (the socket's path is in the file)."""
        return self.credential_env

    def restore(self) -> str | None:
        """Nothing: the file goes with the socket's directory when the turn ends."""
        return None


def tool_extension(serving: LocalToolServer) -> ToolExtension:
    """Write the extension that gives Pi ``serving``'s tools; its installation."""
    tools = [
        {"name": t.name, "description": t.description, "inputSchema": dict(t.input_schema)}
        for t in serving.host.tools
    ]
    text = _EXTENSION % {
        "socket": json.dumps(serving.socket_path),
        "prefix": json.dumps(TOOL_PREFIX),
        "tools": json.dumps(tools),  # ASCII: no line separator can split the literal
        "credential_variable": json.dumps(next(iter(serving.credential_env))),
    }
    path = os.path.join(serving.directory, "agentshim-tools.ts")
    descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(descriptor, "w", encoding="utf-8") as file:
        file.write(text)
    return ToolExtension(path, serving.credential_env)
