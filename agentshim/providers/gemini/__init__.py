"""The Gemini CLI provider (``gemini --output-format stream-json``, prompt on stdin)."""

from __future__ import annotations

from .parser import GeminiStreamParser
from .provider import PROFILE, GeminiProvider, mcp_entry
from .scripted import resume_failure_lines, scripted_lines

__all__ = [
    "PROFILE",
    "GeminiProvider",
    "GeminiStreamParser",
    "mcp_entry",
    "resume_failure_lines",
    "scripted_lines",
]
