"""Live: opencode's ACP transport on the real pinned binary, against the model server.

Every test runs ``Agent("opencode", transport=TransportKind.LONG_LIVED)`` on the real
``HostCommandExecutor``: one long-lived ``opencode acp`` process per session, offline
(``agentshim.doctor.offline``), the model scripted per test. What is asserted is what a
user sees: results, errors, files the agent wrote, the processes that ran (counted at
``spawn``, found in ``/proc`` by the run's HOME) and what the model was sent. The checks every
ACP agent passes are in ``acp_stream_checks.py``.

Run with ``pytest tests/live/test_opencode_stream.py``; skipped when the pinned opencode is
not installed.
"""

from __future__ import annotations

import json

from agentshim.core.turn import TurnResult
from agentshim.doctor.model_server import ToolCall
from agentshim.execution.process import SpawnRequest

from .acp_stream_checks import AcpEditChecks, AcpStreamChecks
from .streams import NEEDS_PROC, suite_fixtures

pytestmark = NEEDS_PROC

rig, live = suite_fixtures("opencode")


class TestAcpChecks(AcpStreamChecks, AcpEditChecks):
    """The checks every ACP agent passes, on opencode.

    workspace_write() asks about every shell command (OPENCODE_PERMISSION bash: ask).
    """

    def check_spawn(self, request: SpawnRequest, first: TurnResult) -> None:
        assert first.session_id is not None
        assert first.session_id.startswith("ses_")
        assert first.usage.increment_known
        assert request.argv[1:] == ("acp",)
        assert json.loads(request.env["OPENCODE_PERMISSION"])["*"] == "allow"

    def edit_call(self, target: str) -> ToolCall:
        return ToolCall(tool="write", arguments={"filePath": target, "content": "made\n"})
