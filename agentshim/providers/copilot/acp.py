"""How GitHub Copilot CLI speaks ACP (``copilot --acp``, checked against 1.0.102).

::

    copilot --acp --no-auto-update [--model M]
            (--allow-all | --allow-tool write [--add-dir ROOT]... | --deny-tool write)
            [extra_args]

Native permissions map onto its tool permissions: ``bypass()`` is ``--allow-all`` (no
permission requests); ``workspace_write(roots)`` allows the ``write`` tool and adds each
root, so edits proceed and every shell command, URL and MCP tool goes to the conversation's
approvals; ``read_only()`` denies the ``write`` tool and asks about the rest (which a
read-only conversation denies).

Its differences from the protocol's common ground: a failed model call (after Copilot's own
retries) ends the turn ``end_turn``, the failure only in an agent text chunk starting
``Error:`` (``Info:`` chunks are its status lines: retries, compaction, a cancelled tool),
so those chunks are notices and an ``Error:`` one fails the turn; updates for a new session
come before the ``session/new`` response; the prompt result's ``usage`` adds up over the
process (input includes cache reads, output includes reasoning); stdio MCP servers passed in
``session/new`` are dropped without a word (only its log says so), so they are refused;
and a session it does not have is JSON-RPC error -32002 "Resource not found". See
docs/acp.md.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from typing import Any

from agentshim.acp.client import AcpTransport
from agentshim.acp.dialect import AcpArgv, AcpDialect
from agentshim.acp.jsonrpc import RpcError
from agentshim.core.argv import checked_option_value
from agentshim.core.errors import FailureKind
from agentshim.core.failures import kind_from_status, kind_from_text
from agentshim.core.mcp import StdioMcpServer
from agentshim.core.permissions import NativeMode
from agentshim.core.provider import NoMcpInstallation
from agentshim.core.usage import ProviderUsage, TokenUsage
from agentshim.providers.acp_prompt_usage import Count, prompt_usage
from agentshim.transport.installed import InstalledCli

from .provider import MCP_FLAG, MCP_SERVERS_KEY, PROFILE, mcp_entry

__all__ = [
    "COPILOT_ACP",
    "acp_argv",
    "acp_transport",
    "classify_rpc_error",
    "failure_kind",
    "is_notice",
    "session_lost",
    "usage",
]

RESOURCE_NOT_FOUND = -32002
"""The JSON-RPC code of Copilot's answer for a session it does not have."""

_NOTICE_PREFIXES = ("Info: ", "Error: ")
_FAILURE_PREFIX = "Error: "
# "(HTTP 401)" or "Last error: 500 ...": the status of the call that failed.
_STATUS = re.compile(r"\(HTTP (\d{3})\)|Last error: (\d{3})\b")


def acp_argv(args: AcpArgv) -> list[str]:
    """The argv of one long-lived ``copilot --acp`` process (see the module docstring).

    Raises:
        InvalidRequestError: a model or root that would read as a flag.
    """
    permissions = args.permissions
    argv = [args.binary_path, "--acp", "--no-auto-update"]
    if args.model:
        argv += ["--model", checked_option_value("Copilot CLI", "model", args.model)]
    if permissions.mode is NativeMode.BYPASS:
        argv.append("--allow-all")
    elif permissions.mode is NativeMode.WORKSPACE_WRITE:
        argv.append("--allow-tool=write")
        for root in permissions.writable_roots:
            argv += ["--add-dir", checked_option_value("Copilot CLI", "root", root)]
    else:
        argv.append("--deny-tool=write")
    return [*argv, *args.extra_args]


def tools_argv(bridge: StdioMcpServer) -> NoMcpInstallation:
    """``--additional-mcp-config`` naming the tools' bridge, and its credential as env.

    ``session/new`` drops stdio servers, the command line does not (checked on 1.0.102). The
    bridge's entry carries no ``env``: its credential is put in Copilot's own environment,
    which a local MCP server inherits, so neither argv nor any file holds it.
    """
    entry = mcp_entry(dataclasses.replace(bridge, env={}))
    config = json.dumps({MCP_SERVERS_KEY: {bridge.name: entry}}, separators=(",", ":"))
    return NoMcpInstallation(argv=(MCP_FLAG, config), env=dict(bridge.env))


def is_notice(text: str) -> bool:
    """Whether agent text is Copilot's own status (``Info: ...``, ``Error: ...``)."""
    return text.startswith(_NOTICE_PREFIXES)


def failure_kind(text: str) -> FailureKind | None:
    """The kind of failure an ``Error:`` notice reports; None for any other text.

    What the text says counts first (a context overflow, an authentication failure), then
    the HTTP status it names; a failure it does not explain is OTHER.
    """
    if not text.startswith(_FAILURE_PREFIX):
        return None
    said = kind_from_text(text)
    if said is FailureKind.CONTEXT_OVERFLOW or said is FailureKind.AUTH:
        return said
    match = _STATUS.search(text)
    if match is not None:
        kind = kind_from_status(int(match.group(1) or match.group(2)))
        if kind is not FailureKind.OTHER:
            return kind
    return said or FailureKind.OTHER


def classify_rpc_error(error: RpcError) -> FailureKind:
    """The FailureKind of a JSON-RPC error on ``session/prompt`` (from its text)."""
    return kind_from_text(error.message) or FailureKind.OTHER


def session_lost(error: RpcError) -> bool:
    """Whether ``error`` says Copilot has no such session."""
    return error.code == RESOURCE_NOT_FOUND and "not found" in error.message


def usage(result: Mapping[str, Any]) -> ProviderUsage | None:
    """The process's usage so far, from the ``session/prompt`` result (None if absent).

    It adds up over the process: the transport takes each turn's share
    (``AcpDialect.cumulative_usage``).
    """
    return prompt_usage(result, PROFILE.name, _tokens)


def _tokens(count: Count) -> TokenUsage:
    output = count("outputTokens")
    total_input = count("inputTokens")
    cache_read = min(count("cachedReadTokens"), total_input)
    cache_write = min(count("cachedWriteTokens"), total_input - cache_read)
    return TokenUsage(
        input_tokens=total_input,
        cache_read_input_tokens=cache_read,
        cache_write_input_tokens=cache_write,
        output_tokens=output,
        reasoning_output_tokens=min(count("thoughtTokens"), output),
    )


COPILOT_ACP = AcpDialect(
    profile=PROFILE,
    argv=acp_argv,
    classify=classify_rpc_error,
    session_lost=session_lost,
    usage=usage,
    notice=is_notice,
    failed=failure_kind,
    stdio_mcp=False,
    cumulative_usage=True,
    attach="session/load",
    # It offers session/close; as checked, its sessions end with the process alone.
    close_session=False,
    tools_argv=tools_argv,
)
"""Copilot CLI's ACP dialect."""


def acp_transport(context: InstalledCli | Callable[[], InstalledCli]) -> AcpTransport:
    """Copilot CLI's long-lived transport: every turn on one ``copilot --acp`` process."""
    return AcpTransport(context, COPILOT_ACP)
