"""How a JSON-RPC error is read for an agent nothing else is known about.

The protocol's own codes say most of it: ``-32000`` is "authentication required" and
``-32002`` "resource not found" (a session the agent does not have, when it answers a load);
anything else is read from its text, as every CLI's failure text is.
"""

from __future__ import annotations

from agentshim.core.errors import FailureKind
from agentshim.core.failures import kind_from_text
from agentshim.core.jsonvalues import as_str

from .jsonrpc import RpcError

__all__ = ["AUTH_REQUIRED", "RESOURCE_NOT_FOUND", "classify_error", "session_lost"]

AUTH_REQUIRED = -32000
"""The protocol's code for a request that needs authentication first."""
RESOURCE_NOT_FOUND = -32002
"""The protocol's code for a resource (such as a session) the agent does not have."""


def classify_error(error: RpcError) -> FailureKind:
    """The FailureKind of a JSON-RPC error: AUTH for ``-32000``, else what its text says."""
    if error.code == AUTH_REQUIRED:
        return FailureKind.AUTH
    text = f"{error.message} {as_str(error.data.get('details')) or ''}"
    return kind_from_text(text) or FailureKind.OTHER


def session_lost(error: RpcError) -> bool:
    """Whether ``error`` says the agent does not have the session (``-32002``)."""
    return error.code == RESOURCE_NOT_FOUND
