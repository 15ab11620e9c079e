"""dialect_of: the ACP dialect of a provider package, wired from the names its ``acp.py`` defines.

Every ACP provider's ``acp.py`` defines ``acp_argv``, ``classify_rpc_error``, ``session_lost``
and ``usage``, and its package's ``provider.py`` defines ``PROFILE`` (the conventions test pins
all five). The dialect takes those five from the package, the way ``builtin_plugin`` takes a
plugin's facts from it, so an ``acp.py`` spells out only where its agent differs.
"""

from __future__ import annotations

import importlib
import sys
from typing import Any

from agentshim.acp.dialect import AcpDialect

__all__ = ["dialect_of"]

# Each AcpDialect field an acp.py fills with a function of its own, and that function's name.
_PINNED_FUNCTIONS = (
    ("argv", "acp_argv"),
    ("classify", "classify_rpc_error"),
    ("session_lost", "session_lost"),
    ("usage", "usage"),
)


def dialect_of(module: str, **behaviour: Any) -> AcpDialect:
    """Return the dialect of the ``acp`` module named ``module`` (its ``__name__``).

    Call it from that module after its four functions are defined. ``behaviour`` sets the
    AcpDialect fields that have defaults (``notice``, ``stdio_mcp``, ``attach``...); an
    unknown one raises TypeError when the module is imported.
    """
    acp = sys.modules[module]
    provider = importlib.import_module(f"{module.rpartition('.')[0]}.provider")
    functions = {field: getattr(acp, name) for field, name in _PINNED_FUNCTIONS}
    return AcpDialect(profile=provider.PROFILE, **functions, **behaviour)
