"""Live conformance of the copilot provider against the real binary (see tests/live/suite.py)."""

from __future__ import annotations

from .suite import LiveSuite


class TestCopilotLive(LiveSuite):
    provider = "copilot"
    # Copilot CLI prints no token counts (its result carries premium requests and durations).
    reports_tokens = False
