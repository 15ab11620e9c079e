"""The Claude Code provider's catalog entry."""

from __future__ import annotations

from agentshim.core.conversation import TransportKind
from agentshim.providers.static_plugin import builtin_plugin

from .provider import ClaudeProvider
from .stream_transport import ClaudeStreamTransport
from .tui_transport import ClaudeTuiTransport

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(
    __name__,
    ClaudeProvider,
    transports={
        TransportKind.LONG_LIVED: ClaudeStreamTransport,
        TransportKind.TUI: ClaudeTuiTransport,
    },
)
"""Claude Code: profile, provider factory, scripted output, model and price tables, and its
long-lived transports (stream-json, and the interactive CLI on a terminal)."""
