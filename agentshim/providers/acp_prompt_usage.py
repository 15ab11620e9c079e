"""prompt_usage: the protocol's ``usage`` object of a ``session/prompt`` result, as usage.

Kept for the providers that import it from here; the reading lives in
:mod:`agentshim.acp.usage`, beside the default the generic ACP provider uses.
"""

from __future__ import annotations

from agentshim.acp.usage import Count, prompt_usage

__all__ = ["Count", "prompt_usage"]
