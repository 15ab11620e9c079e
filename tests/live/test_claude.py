"""Live conformance of the claude provider against the real binary (see tests/live/suite.py)."""

from __future__ import annotations

from .suite import LiveSuite


class TestClaudeLive(LiveSuite):
    provider = "claude"
