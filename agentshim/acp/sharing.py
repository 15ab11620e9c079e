"""How frames of an ACP agent serving several sessions on one process are told apart.

Every ``session/update`` and every request the agent makes about a session carries its
``sessionId`` (checked for Gemini CLI 0.61.0, opencode 1.18.33 and Copilot CLI 1.0.102, where
no notification goes untagged). So one process can hold several conversations, one
``session/new`` (or ``session/load``) each; ``initialize`` is said once per process.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["session_of"]


def session_of(params: Mapping[str, Any]) -> str | None:
    """The session an ACP frame's ``params`` name, or None for a process-wide one."""
    session = params.get("sessionId")
    return session if isinstance(session, str) else None
