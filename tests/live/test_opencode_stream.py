"""Live: opencode over ACP (``opencode acp``) on its pinned binary, offline.

The suites' set-up is in ``streams.py``, the ACP checks in ``acp_stream_checks.py``; here is
only what is opencode's. ``pytest tests/live/test_opencode_stream.py`` runs it; it is skipped
without the pinned opencode.
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
