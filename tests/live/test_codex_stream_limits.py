"""Live: spending limits on Codex's app-server transport, against the model server.

Run with ``pytest tests/live/test_codex_stream_limits.py``; skipped when the pinned codex is
not installed.
"""

from __future__ import annotations

from .limit_checks import LimitChecks
from .streams import NEEDS_PROC, suite_fixtures

pytestmark = NEEDS_PROC

rig, live = suite_fixtures("codex")


class TestCodexStreamLimits(LimitChecks):
    """Codex's offline model has no price: its cost is unknown, refused by default.

    The model call's usage comes as Codex starts the command it asked for, so the interrupt
    lands while the command starts; Codex then leaves that command running to its end (a
    short one here), and answers the interrupt only after the transport's grace.
    """

    long_tool = "sleep 4"
    long_tool_seen = "sleep 4"
    tool_ends_within_s = 20.0
