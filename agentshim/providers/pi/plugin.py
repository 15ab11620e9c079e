"""The built-in catalog's declaration of the Pi provider."""

from __future__ import annotations

from agentshim.core.conversation import TransportKind
from agentshim.providers.static_plugin import builtin_plugin

from .provider import PiProvider
from .rpc_transport import PiRpcTransport

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(__name__, PiProvider, transports={TransportKind.LONG_LIVED: PiRpcTransport})
"""Pi: profile, provider factory, scripted output, resume line, (empty) tables, and its
long-lived ``--mode rpc`` transport."""
