"""The named switches in which agents speaking ACP differ; each provider supplies one.

The protocol is one, its speakers are not: how the agent is started, what a JSON-RPC error
from ``session/prompt`` means, where a turn's usage is, which agent text is the CLI's own
status rather than the model's answer, which MCP servers it takes, and how its
``session/load`` must be timed, which environment it reads its permissions from, whether it
reports a failure as agent text, whether its usage adds up over the process, and how it
reopens a session. A provider's ``acp.py`` fills an :class:`AcpDialect`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentshim.core.errors import FailureKind
from agentshim.core.mcp import StdioMcpServer
from agentshim.core.permissions import NativeMode, NativePermissions
from agentshim.core.profile import ProviderProfile
from agentshim.core.provider import NoMcpInstallation
from agentshim.core.usage import ProviderUsage

from .defaults import classify_error
from .defaults import session_lost as lost_by_code
from .jsonrpc import RpcError
from .usage import protocol_usage

__all__ = ["AcpArgv", "AcpDialect", "never_a_failure", "never_a_notice", "no_env"]


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


def never_a_failure(text: str) -> FailureKind | None:
    """No notice says the turn failed (the default: failures are JSON-RPC errors)."""
    del text
    return None


def no_env(args: AcpArgv) -> Mapping[str, str]:
    """No environment of the agent's own (the default: everything goes in argv)."""
    del args
    return {}


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

    ``env`` adds variables to the process's environment, for an agent that reads its model
    or permissions there (opencode). ``failed`` reads a notice that says the turn failed, for an
    agent that ends a failed turn ``end_turn`` with the failure in its text (Copilot CLI):
    the turn then raises CliExitError with that kind. ``cumulative_usage`` is for an agent
    whose reported usage adds up over the process (Copilot CLI): a turn's share is the
    difference from the previous report of the same process. ``usage_of_last_call`` is for
    an agent whose report covers only the turn's last model call (opencode): a turn that
    called a tool (so the model more than once) has its usage marked not known.
    ``superseded_messages`` is for
    an agent that streams text that is not the answer as a message of its own, followed by
    another message with no tool call between (opencode's compaction summary, told apart by
    ``messageId``): that text is kept out of the answer. ``attach`` is the method that
    reopens a session in a new process: ``session/load`` (the history is replayed and
    reported as the loading turn's ``HistoryReplayed``), ``session/resume`` (no replay), or
    ``auto`` (the default): ``session/resume`` where the agent's capabilities offer it, else
    ``session/load`` where they offer that.

    What an agent nothing is known about gets: ``classify`` reads the protocol's error codes
    (``-32000`` is AUTH) and then the text; ``session_lost`` is ``-32002``; ``usage`` reads
    the prompt result's ``usage`` object, as adding up over the session (set
    ``cumulative_usage``, as the generic provider does). ``auth_method`` is the id of one of
    the agent's ``authMethods`` the caller has credentials for (in the agent's environment):
    ``authenticate`` is called with it after ``initialize``. ``permission_modes`` names the
    agent's own mode for a native permission mode: a session is put in it when it starts.
    ``close_session`` sends ``session/close`` before the process is closed, where the agent
    offers it. ``tools_argv`` is for an agent that drops stdio MCP servers in ``session/new``
    but takes them on its command line (Copilot CLI): given the tools' bridge, it returns the
    flags and the environment that install it there, so Python tools are served all the same.
    """

    profile: ProviderProfile
    argv: Callable[[AcpArgv], list[str]]
    classify: Callable[[RpcError], FailureKind] = classify_error
    session_lost: Callable[[RpcError], bool] = lost_by_code
    usage: Callable[[Mapping[str, Any]], ProviderUsage | None] = protocol_usage
    notice: Callable[[str], bool] = never_a_notice
    stdio_mcp: bool = True
    load_in_a_later_minute: bool = False
    replay_settle: float = 0.0
    env: Callable[[AcpArgv], Mapping[str, str]] = no_env
    failed: Callable[[str], FailureKind | None] = never_a_failure
    cumulative_usage: bool = False
    usage_of_last_call: bool = False
    superseded_messages: bool = False
    attach: str = "auto"
    auth_method: str | None = None
    permission_modes: Mapping[NativeMode, str] = field(default_factory=dict[NativeMode, str])
    close_session: bool = True
    tools_argv: Callable[[StdioMcpServer], NoMcpInstallation] | None = None
