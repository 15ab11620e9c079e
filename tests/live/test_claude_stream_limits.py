"""Live: spending limits on Claude Code's stream transport, against the model server.

Run with ``pytest tests/live/test_claude_stream_limits.py``; skipped when the pinned claude is
not installed.
"""

from __future__ import annotations

from .claude_checks import LONG_TOOL, LONG_TOOL_SEEN
from .limit_checks import LimitChecks
from .streams import NEEDS_PROC, suite_fixtures

pytestmark = NEEDS_PROC

rig, live = suite_fixtures("claude")


class TestClaudeStreamLimits(LimitChecks):
    long_tool = LONG_TOOL
    long_tool_seen = LONG_TOOL_SEEN
