"""Live conformance of the codex provider against the real binary (see tests/live/suite.py)."""

from __future__ import annotations

from .suite import LiveSuite


class TestCodexLive(LiveSuite):
    provider = "codex"
