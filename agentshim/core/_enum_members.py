"""The enum members stream parsers read on their hot paths, bound once as module names.

Looking an enum member up on its class (``CostSource.REPORTED``) costs ~0.1 us on CPython
3.11, twenty times a plain name's cost; a parser reads one for nearly every usage frame or
tool event, so it imports the member from here instead of writing the lookup.
"""

from __future__ import annotations

from agentshim.core.events import ToolKind, UsageScope
from agentshim.core.usage import CostSource

__all__ = [
    "COST_NOT_REPORTED",
    "COST_PRICED",
    "COST_REPORTED",
    "COST_UNKNOWN_MODEL",
    "KIND_MCP",
    "KIND_OTHER",
    "SCOPE_CALL",
    "SCOPE_TURN",
]

COST_REPORTED = CostSource.REPORTED
COST_NOT_REPORTED = CostSource.NOT_REPORTED
COST_PRICED = CostSource.PRICED
COST_UNKNOWN_MODEL = CostSource.UNKNOWN_MODEL
SCOPE_CALL = UsageScope.CALL
SCOPE_TURN = UsageScope.TURN
KIND_MCP = ToolKind.MCP
KIND_OTHER = ToolKind.OTHER
