"""The named switches in which agents speaking ACP differ; each provider supplies one.

The protocol is one, its speakers are not: how the agent is started, what a JSON-RPC error
from ``session/prompt`` means, where a turn's usage is, which agent text is the CLI's own
status rather than the model's answer, which MCP servers it takes, and how its
``session/load`` must be timed. A provider's ``acp.py`` fills an :class:`AcpDialect`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentshim.core.errors import FailureKind
from agentshim.core.permissions import NativePermissions
from agentshim.core.profile import ProviderProfile
from agentshim.core.usage import ProviderUsage

from .jsonrpc import RpcError

__all__ = ["AcpArgv", "AcpDialect", "never_a_notice"]


@dataclass(frozen=True, slots=True, kw_only=True)
class AcpArgv:
    """What an agent's argv is built from: the binary, the model, the native permissions."""

    binary_path: str
    model: str | None
    permissions: NativePermissions
    extra_args: Sequence[str] = ()


def never_a_notice(text: str) -> bool:
    """No agent text is the CLI's own status line (the default)."""
    del text
    return False


@dataclass(frozen=True, slots=True, kw_only=True)
class AcpDialect:
    """How one agent speaks ACP.

    ``argv`` builds the command line (raising ProviderCapabilityError for permissions the
    agent cannot honour); ``classify`` reads a JSON-RPC error on ``session/prompt`` as a
    FailureKind; ``session_lost`` tells an error that means the agent no longer has the
    session; ``usage`` reads a turn's usage from the ``session/prompt`` result (None when it
    reports none); ``notice`` tells agent text that is the CLI's status, not the answer.
    ``stdio_mcp`` is False for an agent that silently drops stdio MCP servers (they are then
    refused); ``load_in_a_later_minute`` makes a ``session/load`` of a session this client
    created wait for the next wall-clock minute, for an agent whose load in the minute of
    creation destroys the session. ``replay_settle`` is for an agent whose replay of the
    loaded history goes on after the ``session/load`` response: the client reads (and drops)
    updates until it has heard none for that many seconds, before the first prompt.
    """

    profile: ProviderProfile
    argv: Callable[[AcpArgv], list[str]]
    classify: Callable[[RpcError], FailureKind]
    session_lost: Callable[[RpcError], bool]
    usage: Callable[[Mapping[str, Any]], ProviderUsage | None]
    notice: Callable[[str], bool] = never_a_notice
    stdio_mcp: bool = True
    load_in_a_later_minute: bool = False
    replay_settle: float = 0.0
