"""Live conformance of the pi provider against the real binary (see tests/live/suite.py)."""

from __future__ import annotations

from .suite import LiveSuite


class TestPiLive(LiveSuite):
    provider = "pi"
