"""Pi (``pi --print --mode json``): argv, environment defaults and stream parsing."""

from __future__ import annotations

from .parser import PiStreamParser, short_session_id
from .provider import PROFILE, PiProvider
from .scripted import resume_failure_lines, scripted_lines

__all__ = [
    "PROFILE",
    "PiProvider",
    "PiStreamParser",
    "resume_failure_lines",
    "scripted_lines",
    "short_session_id",
]
