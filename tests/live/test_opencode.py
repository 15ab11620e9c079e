"""Live conformance of the opencode provider against the real binary (see tests/live/suite.py)."""

from __future__ import annotations

from .suite import LiveSuite


class TestOpencodeLive(LiveSuite):
    provider = "opencode"
