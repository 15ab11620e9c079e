"""Claude Code (``claude -p --output-format stream-json``): argv, stream parser, options.

Provider-specific options live on :class:`ClaudeProvider`: ``permission_mode``, ``sandbox``
(:class:`SandboxConfig`, with ``sandbox_env`` to merge into the agent's environment) and
caller ``hooks`` (:class:`ClaudeHook`).
"""

from __future__ import annotations

from .parser import ClaudeStreamParser
from .provider import PROFILE, ClaudeProvider, mcp_entry
from .sandbox import SANDBOX_ENV, SandboxConfig
from .scripted import resume_failure_lines, scripted_lines
from .user_hooks import ClaudeHook, build_settings

__all__ = [
    "PROFILE",
    "SANDBOX_ENV",
    "ClaudeHook",
    "ClaudeProvider",
    "ClaudeStreamParser",
    "SandboxConfig",
    "build_settings",
    "mcp_entry",
    "resume_failure_lines",
    "scripted_lines",
]
