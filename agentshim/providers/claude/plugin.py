"""The Claude Code provider's catalog entry."""

from __future__ import annotations

from agentshim.providers.static_plugin import builtin_plugin

from .provider import ClaudeProvider

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(
    __name__,
    ClaudeProvider,
    resume_template="claude --resume {id}",
    resume_aliases=("claude -r {id}", "claude --resume={id}"),
)
"""Claude Code: profile, provider factory, scripted output, model and price tables."""
