"""opencode's catalog entry."""

from __future__ import annotations

from agentshim.core.conversation import TransportKind
from agentshim.providers.static_plugin import builtin_plugin

from .acp import acp_transport
from .provider import OpencodeProvider

__all__ = ["PLUGIN"]

PLUGIN = builtin_plugin(
    __name__, OpencodeProvider, transports={TransportKind.LONG_LIVED: acp_transport}
)
"""Everything the catalog knows about opencode, and its long-lived ACP transport."""
