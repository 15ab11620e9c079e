"""A custom harness whose stdout is the answer, so a shell script can stand behind an Agent."""

from __future__ import annotations

from .parser import TextStreamParser
from .plugin import harness_plugin
from .provider import PROFILE, TextProvider
from .scripted import resume_failure_lines, scripted_lines

__all__ = [
    "PROFILE",
    "TextProvider",
    "TextStreamParser",
    "harness_plugin",
    "resume_failure_lines",
    "scripted_lines",
]
