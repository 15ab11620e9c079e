"""The Codex CLI provider (``codex exec --json``)."""

from __future__ import annotations

from .parser import CodexStreamParser
from .provider import PROFILE, CodexProvider, mcp_entry, parse_mcp_servers
from .sandbox import CodexSandboxConfig, CodexSandboxMode, parse_sandbox
from .scripted import resume_failure_lines, scripted_lines

__all__ = [
    "PROFILE",
    "CodexProvider",
    "CodexSandboxConfig",
    "CodexSandboxMode",
    "CodexStreamParser",
    "mcp_entry",
    "parse_mcp_servers",
    "parse_sandbox",
    "resume_failure_lines",
    "scripted_lines",
]
