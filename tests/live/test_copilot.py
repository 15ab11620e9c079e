"""Live conformance of the copilot provider against the real binary (see tests/live/suite.py)."""

from __future__ import annotations

from .suite import LiveSuite


class TestCopilotLive(LiveSuite):
    provider = "copilot"
