"""The built-in catalog's declaration of the GitHub Copilot CLI provider."""

from __future__ import annotations

from agentshim.core.conversation import TransportKind
from agentshim.providers.static_plugin import builtin_plugin

from .acp import acp_transport
from .provider import CopilotProvider

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(
    __name__, CopilotProvider, transports={TransportKind.LONG_LIVED: acp_transport}
)
"""Copilot CLI: profile, provider factory, scripted output, resume line, (empty) tables and
its long-lived ACP transport."""
