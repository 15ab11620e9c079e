"""The Claude Code provider's catalog entry."""

from __future__ import annotations

from agentshim.core.conversation import TransportKind
from agentshim.providers.static_plugin import builtin_plugin

from .provider import ClaudeProvider
from .stream_transport import ClaudeStreamTransport

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(
    __name__, ClaudeProvider, transports={TransportKind.STREAM: ClaudeStreamTransport}
)
"""Claude Code: profile, provider factory, scripted output, model and price tables, and its
long-lived stream-json transport."""
