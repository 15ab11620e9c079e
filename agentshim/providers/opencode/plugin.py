"""opencode's catalog entry."""

from __future__ import annotations

from agentshim.providers.static_plugin import builtin_plugin

from .provider import OpencodeProvider

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(
    __name__,
    OpencodeProvider,
    resume_template="opencode --session {id}",
    resume_aliases=(
        "opencode -s {id}",
        "opencode --session={id}",
        "opencode run --session {id}",
        "opencode run --session={id}",
        "opencode run -s {id}",
    ),
)
"""Everything the catalog knows about opencode."""
