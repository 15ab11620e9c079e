"""Live: Copilot CLI's ACP transport, one ``copilot --acp`` process per session.

How the stream suites run and what they check: ``streams.py``; the checks every ACP agent
passes are in ``acp_stream_checks.py``. Run with ``pytest tests/live/test_copilot_stream.py``
(skipped when the pinned copilot is not installed).
"""

from __future__ import annotations

import sys

import pytest

from agentshim.core.errors import ProviderCapabilityError
from agentshim.core.mcp import StdioMcpServer
from agentshim.core.turn import TurnResult
from agentshim.doctor.model_server import ToolCall
from agentshim.execution.process import SpawnRequest

from .acp_stream_checks import AcpEditChecks, AcpStreamChecks
from .streams import NEEDS_PROC, Live, suite_fixtures

pytestmark = NEEDS_PROC

rig, live = suite_fixtures("copilot")


def test_a_stdio_mcp_server_is_refused_before_anything_runs(live: Live) -> None:
    # Copilot CLI drops stdio MCP servers passed over ACP without a word.
    server = StdioMcpServer(name="local", command=sys.executable, args=("-c", "pass"))
    with pytest.raises(ProviderCapabilityError, match="stdio MCP"):
        live.agent().start_session(str(live.work), mcp_servers=(server,)).turn("Say hello.")
    assert live.executor.spawned == []


class TestAcpChecks(AcpStreamChecks, AcpEditChecks):
    """The checks every ACP agent passes, on Copilot CLI.

    workspace_write() allows only the write tool: every shell command is asked about.
    """

    # A loaded session's history is replayed before the load response.
    replays_history = True

    def check_spawn(self, request: SpawnRequest, first: TurnResult) -> None:
        assert first.usage.increment_known
        argv = ("--acp", "--no-auto-update", "--model", "fake-model", "--allow-all")
        assert request.argv[1:] == argv

    def approval_tool(self, command: str) -> str:
        return f"Run {command}"

    def edit_call(self, target: str) -> ToolCall:
        return ToolCall(tool="create", arguments={"path": target, "file_text": "made\n"})
