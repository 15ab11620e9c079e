"""The error the model server raises to its caller."""

from __future__ import annotations

from agentshim.core.errors import AgentShimError

__all__ = ["ModelServerError"]


class ModelServerError(AgentShimError):
    """The model server was used wrongly (not started, started twice) or could not start."""
