"""Live conformance of the gemini provider against the real binary (see tests/live/suite.py)."""

from __future__ import annotations

from .suite import LiveSuite


class TestGeminiLive(LiveSuite):
    provider = "gemini"
