from __future__ import annotations
from agentshim.execution import CallbackSink, CommandRequest, HostCommandExecutor
HostCommandExecutor().run(CommandRequest(["x"]), CallbackSink())
