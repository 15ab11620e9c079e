"""The Codex provider's catalog entry."""

from __future__ import annotations

from agentshim.core.conversation import TransportKind
from agentshim.providers.static_plugin import builtin_plugin

from .app_server.transport import CodexAppServerTransport
from .provider import CodexProvider

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(
    __name__, CodexProvider, transports={TransportKind.LONG_LIVED: CodexAppServerTransport}
)
"""Codex CLI: profile, provider factory, scripted output, model and price facts, and its
long-lived ``codex app-server`` transport."""
