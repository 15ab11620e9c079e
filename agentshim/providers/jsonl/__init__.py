"""A custom harness that prints agentshim's event vocabulary as JSONL (one stored event a line)."""

from __future__ import annotations

from .parser import JsonlStreamParser
from .plugin import harness_plugin
from .provider import PROFILE, JsonlProvider
from .scripted import resume_failure_lines, scripted_lines

__all__ = [
    "PROFILE",
    "JsonlProvider",
    "JsonlStreamParser",
    "harness_plugin",
    "resume_failure_lines",
    "scripted_lines",
]
